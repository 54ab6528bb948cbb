/**
 * The payment state machine: which status a payment and its attempts are in, which moves are allowed, and which
 * events each move publishes. It also owns the derived attempt flags `overpaid` and `wrongAsset`.
 * Pure: no I/O and no clock; time and prices come in through `Context`. Rules and decisions: docs/payment-states.md.
 */
import { ImpossibleState } from '../../core/errors.ts';
import { rateFraction } from '../../core/money.ts';
import { LATE_ACCEPT_MAX_MOVE_BPS } from './model.ts';
import type {
  AttemptState,
  AttemptStatus,
  DepositState,
  PaymentEventType,
  PaymentState,
  PaymentStatus,
} from './model.ts';

/** What happened to the payment. */
export type Trigger =
  | { kind: 'deposits_changed' } // deposits inside payment.attempts[].deposits were added, changed confirmations/status, or became orphaned
  | { kind: 'tick' } // time passed: expiries and late auto-accept
  | { kind: 'cancel' } // POST /payments/{id}/cancel
  | { kind: 'accept' } // POST /payments/{id}/accept
  | { kind: 'refund_sent'; attemptId: string | null }
  // Hold and capture (manual payments only, docs/capture.md):
  | { kind: 'authorized'; attemptId: string } // the payer's authorization is locked in escrow, with its confirmations
  | { kind: 'captured'; depositId: string } // a capture settled; it is the deposit `depositId` of the held coin choice
  | { kind: 'hold_released' }; // the rest of the hold went back to the payer (void, its deadline, the payer's reclaim)

export interface Context {
  now: Date;
  /** Current USD-per-coin rates (decimal strings) by token id, for late auto-acceptance; a token absent = no fresh price (no auto-accept). */
  rates: ReadonlyMap<string, string>;
  /**
   * The merchant's underpayment tolerance in basis points (0 to 500; absent = 0, the spec's rules): a confirmed
   * amount short of the pay amount by at most `allowedShortfall` counts as paid once nothing seen is pending.
   */
  toleranceBps?: number;
}

/** The shortfall a tolerance allows on `payAmount`: floor(payAmount × bps / 10 000) smallest units. */
export function allowedShortfall(payAmount: bigint, bps: number): bigint {
  return (payAmount * BigInt(bps)) / 10_000n;
}

/**
 * The US cents a payment paid short within the tolerance is credited at: the price in proportion to what arrived,
 * floor(priceCents × paidAmount / payAmount). An exact (or larger) payment is credited at the price.
 */
export function creditedCents(priceCents: bigint, paidAmount: bigint, payAmount: bigint): bigint {
  if (payAmount <= 0n || paidAmount >= payAmount) return priceCents;
  return (priceCents * paidAmount) / payAmount;
}

/** The trigger is not possible in the payment's current state; the caller maps it to 422 `invalid_state`. */
export class TransitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransitionError';
  }
}

export interface Transition {
  payment: PaymentState;
  events: PaymentEventType[];
}

const FINAL: ReadonlySet<PaymentStatus> = new Set(['paid', 'expired', 'refunded', 'cancelled']);

/** `paid`, `expired`, `refunded` and `cancelled` are final (a `late` payment is not). */
export function isFinal(status: PaymentStatus): boolean {
  return FINAL.has(status);
}

/**
 * Whether money arrived: a non-orphaned deposit of the attempt's own coin, or of another coin worth at least that
 * coin's minimum (a wrong asset). Dust of another coin is not money: it neither blocks cancelling nor is refunded.
 */
export function moneySeen(payment: PaymentState): boolean {
  return payment.attempts.some((a) =>
    a.deposits.some((d) => d.status !== 'orphaned' && (d.token === a.token || d.atLeastTokenMinimum)),
  );
}

/** Whether any of the asked coin arrived on any attempt (a wrong asset alone does not stop expiry: nothing was paid). */
function ownCoinSeen(payment: PaymentState): boolean {
  return payment.attempts.some((a) => a.deposits.some((d) => counts(a, d)));
}

/**
 * Applies `trigger` to `payment`. Never mutates its input; returns a new PaymentState and the events to publish,
 * in order. Throws TransitionError when the trigger is not possible now (cancel, accept, refund_sent).
 */
export function next(payment: PaymentState, trigger: Trigger, ctx: Context): Transition {
  const p = structuredClone(payment);
  const events: PaymentEventType[] = [];
  switch (trigger.kind) {
    case 'deposits_changed':
      onDeposits(p, events, ctx);
      break;
    case 'tick':
      onTick(p, events, ctx);
      break;
    case 'cancel':
      onCancel(p, events);
      break;
    case 'accept':
      onAccept(p, events, ctx);
      break;
    case 'refund_sent':
      onRefund(p, events, trigger.attemptId);
      break;
    case 'authorized':
      onAuthorized(p, events, trigger.attemptId);
      break;
    case 'captured':
      onCaptured(p, events, trigger.depositId, ctx.now);
      break;
    case 'hold_released':
      onHoldReleased(p, events);
      break;
  }
  settleAttempts(payment, p, events, ctx.toleranceBps);
  return { payment: p, events };
}

interface Tally {
  /** Right-token, non-orphaned amount. */
  seen: bigint;
  confirmed: bigint;
  /** Some counted deposit has a confirmation but not all seen money is confirmed. */
  counting: boolean;
  /**
   * The confirmed deposit (in order of seenAt) that brought the confirmed amount to payAmount, if any; else, when
   * nothing seen is pending and the confirmed amount is short within the tolerance, the last confirmed deposit.
   */
  completing: DepositState | null;
}

/** What the carrier rule reads of a coin choice: its coin, its pay amount and the deposits to its address. */
export interface Holding {
  token: string;
  payAmount: bigint;
  deposits: ReadonlyArray<Pick<DepositState, 'token' | 'amount' | 'status'>>;
}

/** Whether a deposit pays the choice: its own coin, not left the chain. */
export const counts = (a: Pick<Holding, 'token'>, d: Pick<DepositState, 'token' | 'status'>) =>
  d.token === a.token && d.status !== 'orphaned';
const settled = (d: Pick<DepositState, 'status'>) => d.status === 'confirmed' || d.status === 'final';

/** Seen and confirmed amounts of the choice's own coin. */
function held(a: Holding): { seen: bigint; confirmed: bigint } {
  let seen = 0n;
  let confirmed = 0n;
  for (const d of a.deposits) {
    if (!counts(a, d)) continue;
    seen += d.amount;
    if (settled(d)) confirmed += d.amount;
  }
  return { seen, confirmed };
}

function tally(a: AttemptState, toleranceBps = 0): Tally {
  const counted = a.deposits.filter((d) => counts(a, d));
  const { seen, confirmed } = held(a);
  let running = 0n;
  let completing: DepositState | null = null;
  const done = counted.filter(settled).sort((x, y) => x.seenAt.getTime() - y.seenAt.getTime());
  for (const d of done) {
    running += d.amount;
    if (!completing && running >= a.payAmount) completing = d;
  }
  const within =
    seen === confirmed && confirmed > 0n && a.payAmount - confirmed <= allowedShortfall(a.payAmount, toleranceBps);
  if (!completing && within) completing = done[done.length - 1]!;
  return { seen, confirmed, counting: seen > confirmed && counted.some((d) => d.confirmations >= 1), completing };
}

/** The status an attempt's deposits justify on their own; null when no right-token money is on it. */
function derive(a: AttemptState, t: Tally, forceLate: boolean): AttemptStatus | null {
  if (t.seen === 0n) return null;
  if (t.completing) return forceLate || t.completing.seenAt > a.expiresAt ? 'late' : 'paid';
  if (t.seen > t.confirmed) return t.counting ? 'confirming' : 'detected';
  return 'underpaid';
}

/** Underpaid is not undone by new pending money, and late does not turn into paid by itself. */
function hold(current: PaymentStatus, derived: AttemptStatus, confirmed: bigint): AttemptStatus {
  if (current === 'underpaid' && (derived === 'detected' || derived === 'confirming') && confirmed > 0n)
    return 'underpaid';
  if (current === 'late' && derived === 'paid') return 'late';
  return derived;
}

/**
 * The coin choice carrying the money: most confirmed, then seen, share of its pay amount, then any deposit; ties go to
 * the latest (with no deposit anywhere, the latest choice).
 */
export function carrier<A extends Holding>(attempts: readonly A[]): A | undefined {
  let best: { a: A; h: { seen: bigint; confirmed: bigint }; any: boolean } | undefined;
  for (const a of attempts) {
    const cur = { a, h: held(a), any: a.deposits.some((d) => d.status !== 'orphaned') };
    if (!best) {
      best = cur;
      continue;
    }
    const byConfirmed = cur.h.confirmed * best.a.payAmount - best.h.confirmed * a.payAmount;
    const bySeen = cur.h.seen * best.a.payAmount - best.h.seen * a.payAmount;
    const order =
      byConfirmed !== 0n ? byConfirmed : bySeen !== 0n ? bySeen : BigInt(Number(cur.any) - Number(best.any));
    if (order >= 0n) best = cur;
  }
  return best?.a;
}

/** The carrier when some of its own coin arrived on it; null while no choice holds money of its coin. */
export function holder<A extends Holding>(attempts: readonly A[]): A | null {
  const a = carrier(attempts);
  return a && held(a).seen > 0n ? a : null;
}

const STATUS_EVENT: Partial<Record<PaymentStatus, PaymentEventType>> = {
  detected: 'payment.detected',
  confirming: 'payment.confirming',
  underpaid: 'payment.underpaid',
  late: 'payment.late',
  expired: 'payment.expired',
};

/** Marks the payment paid by `a`; short of the pay amount and not `accepted` means short within the tolerance. */
function markPaid(p: PaymentState, a: AttemptState, now: Date, events: PaymentEventType[], accepted = false): void {
  const confirmed = tally(a).confirmed;
  if (confirmed <= 0n)
    throw new ImpossibleState('a payment would be paid by a coin choice with no confirmed money', {
      payment: p.id,
      attempt: a.id,
    });
  p.status = 'paid';
  p.paidAt = now;
  p.paidAttemptId = a.id;
  p.paidAmount = confirmed;
  p.paidWithinTolerance = !accepted && p.paidAmount < a.payAmount;
  events.push('payment.paid');
}

function onDeposits(p: PaymentState, events: PaymentEventType[], ctx: Context): void {
  // A manual payment's money arrives only by captures of its hold (the `captured` trigger); nothing is watched.
  if (p.captureMethod === 'manual') return;
  for (const a of p.attempts) {
    if (
      !a.wrongAsset &&
      a.deposits.some((d) => d.token !== a.token && d.status !== 'orphaned' && d.atLeastTokenMinimum)
    ) {
      a.wrongAsset = true;
      events.push('payment.wrong_asset');
    }
  }
  let reorged = false;
  if (p.status === 'paid') {
    const paid = p.attempts.find((a) => a.id === p.paidAttemptId);
    if (!paid)
      throw new ImpossibleState('a paid payment does not hold the coin choice that paid it', {
        payment: p.id,
        attempt: p.paidAttemptId,
      });
    const floor = p.paidAmount != null && p.paidAmount < paid.payAmount ? p.paidAmount : paid.payAmount;
    if (tally(paid).confirmed >= floor) return;
    events.push('payment.reorged');
    p.paidAt = null;
    p.paidAttemptId = null;
    p.paidAmount = null;
    p.paidWithinTolerance = false;
    reorged = true;
  } else if (p.status === 'refunded' || p.status === 'cancelled') {
    return;
  }

  const from: PaymentStatus = reorged ? 'waiting' : p.status;
  const a = carrier(p.attempts);
  const t = a && tally(a, ctx.toleranceBps);
  const derived = a && t ? derive(a, t, from === 'expired') : null;
  let target: PaymentStatus;
  if (from === 'expired') target = derived === 'paid' || derived === 'late' ? 'late' : 'expired';
  else target = derived === null ? 'waiting' : hold(from, derived, t!.confirmed);

  if (target === 'paid') {
    markPaid(p, a!, ctx.now, events);
    return;
  }
  const changed = target !== p.status;
  p.status = target;
  const event = STATUS_EVENT[target];
  if (event && (reorged ? target === 'late' : changed)) events.push(event);
}

function onTick(p: PaymentState, events: PaymentEventType[], ctx: Context): void {
  const now = ctx.now.getTime();
  const lapsed = p.status === 'waiting' && p.expiresAt.getTime() <= now && !ownCoinSeen(p);
  for (const a of p.attempts) {
    if (a.status === 'waiting' && (lapsed || a.expiresAt.getTime() <= now)) a.status = 'expired';
  }
  if (lapsed) {
    p.status = 'expired';
    events.push('payment.expired');
  } else if (p.status === 'late') {
    const a = carrier(p.attempts);
    const completing = a && tally(a, ctx.toleranceBps).completing;
    if (a && completing && completing.seenAt <= p.expiresAt && priceHeld(p, a, ctx.rates))
      markPaid(p, a, ctx.now, events);
  }
}

/**
 * |current − quoted| / quoted <= LATE_ACCEPT_MAX_MOVE_BPS, exactly; false without a current rate. Both rates are
 * Kasse's own (the quote stored with the coin choice, the price cache's), so one that is not a positive decimal throws.
 */
function priceHeld(p: PaymentState, a: AttemptState, rates: ReadonlyMap<string, string>): boolean {
  const current = rates.get(a.token);
  if (current === undefined) return false;
  const q = positiveRate(a.rate, 'quoted', p, a);
  const c = positiveRate(current, 'current', p, a);
  const diff = c.num * q.den - q.num * c.den;
  const move = diff < 0n ? -diff : diff;
  return move * 10_000n <= BigInt(LATE_ACCEPT_MAX_MOVE_BPS) * q.num * c.den;
}

function positiveRate(rate: string, which: string, p: PaymentState, a: AttemptState): { num: bigint; den: bigint } {
  const f = /^\d+(\.\d+)?$/.test(rate) ? rateFraction(rate) : null;
  if (!f || f.num === 0n)
    throw new ImpossibleState(`the ${which} ${a.token} rate "${rate}" is not a positive decimal`, {
      payment: p.id,
      attempt: a.id,
    });
  return f;
}

/**
 * What the ledger credits for a payment that just became paid: the coin choice that paid it and the confirmed amount
 * it paid with (both set by `markPaid`, so their absence is a bug, never a zero credit).
 */
export function paidCredit(p: PaymentState): { attempt: AttemptState; amount: bigint } {
  const attempt = p.attempts.find((a) => a.id === p.paidAttemptId);
  if (!attempt || p.paidAmount == null || p.paidAmount <= 0n)
    throw new ImpossibleState(
      `a paid payment lacks the coin choice or the confirmed amount its credit takes (paid amount ${p.paidAmount ?? 'none'})`,
      {
        payment: p.id,
        attempt: p.paidAttemptId,
      },
    );
  return { attempt, amount: p.paidAmount };
}

function onCancel(p: PaymentState, events: PaymentEventType[]): void {
  if (p.status !== 'waiting')
    throw new TransitionError(`Only a waiting payment can be cancelled; this payment is ${p.status}.`);
  if (moneySeen(p))
    throw new TransitionError('Money has already arrived for this payment; it can no longer be cancelled.');
  p.status = 'cancelled';
  for (const a of p.attempts) if (a.status === 'waiting') a.status = 'expired';
  events.push('payment.cancelled');
}

function onAccept(p: PaymentState, events: PaymentEventType[], ctx: Context): void {
  const a = carrier(p.attempts);
  if ((p.status !== 'underpaid' && p.status !== 'late') || !a) {
    throw new TransitionError(`Only an underpaid or late payment can be accepted; this payment is ${p.status}.`);
  }
  markPaid(p, a, ctx.now, events, true);
}

function onRefund(p: PaymentState, events: PaymentEventType[], attemptId: string | null): void {
  if (p.status === 'refunded') throw new TransitionError('This payment has already been refunded.');
  if (!moneySeen(p)) throw new TransitionError(`No money has arrived for this payment; there is nothing to refund.`);
  const id = attemptId ?? p.paidAttemptId ?? carrier(p.attempts)?.id;
  const a = p.attempts.find((x) => x.id === id);
  if (!a) throw new TransitionError(`Payment has no attempt ${id}.`);
  a.status = 'refunded';
  p.status = 'refunded';
  events.push('payment.refunded');
}

const manual = (p: PaymentState) => p.captureMethod === 'manual';

/**
 * The payer's authorization is locked in escrow for the coin choice `attemptId`: a waiting manual payment (or one whose
 * 24 hours ran out while the authorization was being confirmed) is `authorized`, its other waiting choices expire.
 */
function onAuthorized(p: PaymentState, events: PaymentEventType[], attemptId: string): void {
  if (!manual(p)) throw new TransitionError('Only a payment with capture_method manual can be authorized.');
  if (p.status !== 'waiting' && p.status !== 'expired')
    throw new TransitionError(`Only a waiting payment can be authorized; this payment is ${p.status}.`);
  const held = p.attempts.find((a) => a.id === attemptId);
  if (!held) throw new TransitionError(`Payment ${p.id} has no coin choice ${attemptId}.`);
  for (const a of p.attempts) if (a.status === 'waiting') a.status = 'expired';
  held.status = 'authorized';
  p.status = 'authorized';
  events.push('payment.authorized');
}

/**
 * A capture settled: its deposit is on the held coin choice already. The first makes the payment `paid` (with
 * `payment.paid`, so everything built on paid follows); every one sends `payment.captured`. `paidAmount` is what all
 * captures brought, so the credit and the held money follow each capture.
 */
function onCaptured(p: PaymentState, events: PaymentEventType[], depositId: string, now: Date): void {
  if (!manual(p)) throw new TransitionError('Only a payment with capture_method manual is captured.');
  const a = p.attempts.find((x) => x.deposits.some((d) => d.id === depositId));
  if (!a) throw new TransitionError(`Payment ${p.id} has no capture ${depositId}.`);
  if (p.status === 'authorized') markPaid(p, a, now, events);
  else if (p.status === 'paid' && p.paidAttemptId === a.id) p.paidAmount = tally(a).confirmed;
  else throw new TransitionError(`Only an authorized or paid payment is captured; this payment is ${p.status}.`);
  p.paidWithinTolerance = false;
  events.push('payment.captured');
}

/**
 * The rest of a hold went back to the payer. Nothing captured: the payment is `cancelled` (`payment.cancelled`);
 * after captures it keeps its status and only the hold is marked released. Released twice changes nothing.
 */
function onHoldReleased(p: PaymentState, events: PaymentEventType[]): void {
  if (!manual(p)) throw new TransitionError('Only a payment with capture_method manual has a hold.');
  if (p.holdReleased) return;
  if (p.status === 'authorized') {
    p.status = 'cancelled';
    for (const a of p.attempts) if (a.status === 'authorized' || a.status === 'waiting') a.status = 'expired';
    events.push('payment.cancelled');
  } else if (p.status !== 'paid' && p.status !== 'refunded') {
    throw new TransitionError(`Payment ${p.id} is ${p.status}: it holds nothing to release.`);
  }
  p.holdReleased = true;
}

/**
 * Re-derives every attempt's status and `overpaid` flag from its deposits, and appends `payment.overpaid` after
 * `payment.paid`, or on its own when surplus money newly lands on a paid or refunded payment.
 */
function settleAttempts(before: PaymentState, p: PaymentState, events: PaymentEventType[], toleranceBps = 0): void {
  const settledId =
    p.paidAttemptId ?? (p.status === 'refunded' ? p.attempts.find((a) => a.status === 'refunded')?.id : undefined);
  for (const a of p.attempts) {
    const t = tally(a, toleranceBps);
    if (a.id === p.paidAttemptId && a.status !== 'refunded') a.status = 'paid';
    else if (a.status !== 'refunded' && a.status !== 'authorized') {
      const derived = derive(a, t, before.status === 'expired');
      a.status =
        derived === null ? (a.status === 'expired' ? 'expired' : 'waiting') : hold(a.status, derived, t.confirmed);
    }
    a.overpaid = t.confirmed > a.payAmount || (settledId !== undefined && settledId !== a.id && t.confirmed > 0n);
  }
  const paidNow = events.includes('payment.paid');
  const newlyOverpaid = p.attempts.some((a, i) => a.overpaid && !before.attempts[i]?.overpaid);
  if (
    paidNow ? p.attempts.some((a) => a.overpaid) : newlyOverpaid && (p.status === 'paid' || p.status === 'refunded')
  ) {
    events.push('payment.overpaid');
  }
}
