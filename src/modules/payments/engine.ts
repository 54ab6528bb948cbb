/**
 * The one path every payment change takes: lock the payment row, run the pure state machine, persist what it
 * changed, post the ledger (credit on paid, reversal on reorg and refund) and publish every event with the full
 * Payment after the change — all in one transaction, so a change, its money and its webhooks commit together. The
 * Payment is rendered from the state the engine holds after the change; nothing is read back to render it.
 */
import type { ChainRegistry } from '../../chains/registry.ts';
import type { Clock } from '../../core/clock.ts';
import { ImpossibleState } from '../../core/errors.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import { type LedgerService, syncHeld } from '../ledger/index.ts';
import { merchantFeeBps, underpaymentToleranceBps } from '../merchants/index.ts';
import type { PriceService } from '../prices/index.ts';
import type { EventPublisher } from '../webhooks/index.ts';
import { heldTarget, type ReturnedCoins } from './held.ts';
import type { AuditLog } from '../audit/index.ts';
import type { PaymentEventType } from './model.ts';
import { paymentJson } from './render.ts';
import { serializePayment, type Payment } from './schema.ts';
import { creditedCents, next, paidCredit, type Trigger } from './state.ts';
import { upsertDeposit, withDeposits } from './store/deposits.ts';
import {
  loadPayment,
  lockPayment,
  lockPaymentById,
  persist,
  saveCapturePending,
  saveCredit,
  toState,
  type Loaded,
} from './store/payments.ts';

/** What every module that moves money is built with (payments and disbursements). */
export interface FundsDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  chains: ChainRegistry;
  prices: PriceService;
  ledger: LedgerService;
  events: EventPublisher;
  /** Changes made by an API key or a dashboard user are recorded here, in the change's transaction. */
  audit: AuditLog;
}

export interface PaymentDeps extends FundsDeps {
  /** Default service fee in basis points (a merchant's own `fee_bps` overrides it). */
  feeBps: number;
  /** Conversion spread in basis points on credits in coins that are not stablecoins. */
  swapFeeBps: number;
  /** Public base URL of the checkout host (known only once its listener is bound). */
  checkoutBase: () => string;
}

export interface Applied {
  events: PaymentEventType[];
  payment: Payment;
  /** The payment as it stands after the change. */
  loaded: Loaded;
}

/** A payment change as modules that react to payments see it, inside the change's transaction. */
export interface PaymentChange {
  mode: Mode;
  merchantId: string;
  /** The payment after the change. */
  payment: Payment;
  /** The events the change published, in order. */
  events: PaymentEventType[];
}

/**
 * Called in the transaction of every payment change that published events, after the events, with the payment row
 * locked. Used by modules whose objects follow their payments (a subscription's period is paid when its payment is).
 * An observer that throws rolls the change back; it must not do network I/O.
 */
export type PaymentObserver = (tx: Tx, change: PaymentChange) => Promise<void>;

export class PaymentEngine {
  private readonly observers: PaymentObserver[] = [];
  private returned: ReturnedCoins = async () => [];

  constructor(readonly deps: PaymentDeps) {}

  /** Adds an observer of payment changes (see PaymentObserver). */
  observe(observer: PaymentObserver): void {
    this.observers.push(observer);
  }

  /** Where the engine learns what sent refunds returned of a payment (the refunds module tells it, when built). */
  returnsFrom(source: ReturnedCoins): void {
    this.returned = source;
  }

  /** The payment as stored (not locked); null when the tenant has no such payment. */
  load(tenant: Tenant, id: string): Promise<Loaded | null> {
    return loadPayment(this.deps.db, tenant, id);
  }

  json(l: Loaded): Payment {
    return paymentJson(l, this.deps.chains, this.deps.checkoutBase());
  }

  /** Fresh USD rates of the mode's coins from the price cache (no network I/O), for late auto-acceptance. */
  rates(mode: Mode): Map<string, string> {
    return this.deps.prices.rates(this.deps.chains.tokens(mode));
  }

  /** Opens a transaction, locks the payment and runs `fn`; null when the tenant has no such payment. */
  async locked<T>(tenant: Tenant, id: string, fn: (tx: Tx, l: Loaded) => Promise<T>): Promise<T | null> {
    return withTx(this.deps.db, (tx) => this.lockedIn(tx, tenant, id, fn));
  }

  /** `locked` inside a transaction the caller already holds. */
  async lockedIn<T>(tx: Tx, tenant: Tenant, id: string, fn: (tx: Tx, l: Loaded) => Promise<T>): Promise<T | null> {
    const l = await lockPayment(tx, tenant, id);
    return l ? fn(tx, l) : null;
  }

  /**
   * `locked` for callers that act for no merchant — the deposit sink, told by a chain watcher of money at a payment's
   * address — so any merchant's payment of `mode`.
   */
  async lockedById<T>(mode: Mode, id: string, fn: (tx: Tx, l: Loaded) => Promise<T>): Promise<T | null> {
    return withTx(this.deps.db, (tx) => this.lockedByIdIn(tx, mode, id, fn));
  }

  /** `lockedById` inside a transaction the caller already holds (a settled transfer's). */
  async lockedByIdIn<T>(tx: Tx, mode: Mode, id: string, fn: (tx: Tx, l: Loaded) => Promise<T>): Promise<T | null> {
    const l = await lockPaymentById(tx, mode, id);
    return l ? fn(tx, l) : null;
  }

  /**
   * Applies `trigger` to the locked payment `l` inside `tx`. Throws the state machine's TransitionError when the
   * trigger is not possible now, and ImpossibleState (logged here with the payment id) when the payment's records
   * contradict each other; nothing is written then.
   */
  async apply(tx: Tx, l: Loaded, trigger: Trigger, now: Date = this.deps.clock.now()): Promise<Applied> {
    try {
      return await this.change(tx, l, trigger, now);
    } catch (err) {
      if (err instanceof ImpossibleState)
        this.deps.log.error({ err, paymentId: l.row.id, trigger: trigger.kind }, 'impossible payment state');
      throw err;
    }
  }

  private async change(tx: Tx, l: Loaded, trigger: Trigger, now: Date): Promise<Applied> {
    const { row } = l;
    const before = toState(l);
    // The merchant's tolerance as it is now: a change applies to payments judged after it.
    const toleranceBps = await underpaymentToleranceBps(tx, row.merchant_id);
    const { payment: after, events } = next(before, trigger, { now, rates: this.rates(row.mode), toleranceBps });
    let current = await persist(tx, l, before, after, now);

    let seq = row.credit_seq;
    let credited = row.credited;
    let creditedAt = row.credited_cents;
    const manual = row.capture_method === 'manual';
    for (const e of events) {
      if (e === 'payment.reorged' && credited) {
        await this.deps.ledger.reversePaymentCredit(tx, row.id, seq, 'payment_reorg');
        credited = false;
      } else if (e === 'payment.captured' && trigger.kind === 'captured') {
        // A manual payment is credited capture by capture: each is a credit of its own, with the fee on what it moved.
        const capture = current.deposits.find((d) => d.id === trigger.depositId);
        if (!capture || capture.value_cents === null)
          throw new ImpossibleState('a capture has no deposit with its value', {
            payment: row.id,
            deposit: trigger.depositId,
          });
        seq += 1;
        await this.deps.ledger.creditPayment(tx, {
          mode: row.mode,
          merchantId: row.merchant_id,
          paymentId: row.id,
          seq,
          priceCents: Number(capture.value_cents),
          feeBps: await this.feeBps(tx, row.merchant_id),
          token: capture.token,
          amount: BigInt(capture.amount),
          conversion: this.deps.chains.countedToken(row.mode, capture.token, { payment: row.id, deposit: capture.id })
            .stable
            ? null
            : { swapFeeBps: this.deps.swapFeeBps },
        });
        credited = true;
        creditedAt = capturedCents(current);
      } else if (e === 'payment.paid' && !credited && !manual) {
        const { attempt, amount } = paidCredit(after);
        seq += 1;
        creditedAt = creditValue(row.price_amount, after.paidWithinTolerance, amount, attempt.payAmount);
        await this.deps.ledger.creditPayment(tx, {
          mode: row.mode,
          merchantId: row.merchant_id,
          paymentId: row.id,
          seq,
          priceCents: creditedAt ?? row.price_amount,
          feeBps: await this.feeBps(tx, row.merchant_id),
          token: attempt.token,
          amount,
          conversion: this.deps.chains.countedToken(row.mode, attempt.token, { payment: row.id, attempt: attempt.id })
            .stable
            ? null
            : { swapFeeBps: this.deps.swapFeeBps },
        });
        credited = true;
      }
    }
    if (trigger.kind === 'refund_sent' && credited) {
      // A manual payment's captures are credits 1…seq, all standing: the refund returns them all.
      for (let n = manual ? 1 : seq; n <= seq; n++)
        await this.deps.ledger.reversePaymentCredit(tx, row.id, n, 'payment_refund');
      credited = false;
    }
    current = await saveCredit(tx, current, seq, credited, creditedAt);
    // Money received and not credited is held in suspense (docs/ledger.md); deposits are the only way money arrives.
    if (current.deposits.length > 0)
      await syncHeld(this.deps.ledger, tx, await heldTarget(tx, this.deps.chains, current, credited, this.returned));

    const payment = this.json(current);
    for (const type of events) {
      await this.deps.events.publish(tx, {
        mode: row.mode,
        merchantId: row.merchant_id,
        type,
        orderingKey: row.id,
        data: payment,
        serialize: serializePayment,
        destination: row.webhook_url,
      });
    }
    if (events.length > 0) {
      for (const observer of this.observers)
        await observer(tx, { mode: row.mode, merchantId: row.merchant_id, payment, events });
      this.deps.log.info(
        { paymentId: row.id, mode: row.mode, from: before.status, to: after.status, events },
        'payment changed',
      );
    }
    return { events, payment, loaded: current };
  }

  /**
   * A capture of the locked manual payment `l` settled (docs/capture.md): it becomes a confirmed deposit of the held
   * coin choice worth `cents` (so the Payment, refunds and the held money see it like any money that arrived) and the
   * `captured` trigger runs — the first capture makes the payment paid — with its credit in the ledger. Idempotent on
   * the capture's transaction: reported again, it changes nothing.
   */
  async recordCapture(
    tx: Tx,
    l: Loaded,
    c: { txHash: string; amount: bigint; cents: number; from: string | null; blockNumber: bigint | null },
  ): Promise<Applied> {
    const attempt = heldAttempt(l);
    const known = l.deposits.find((d) => d.tx_hash === c.txHash);
    if (known) return { events: [], payment: this.json(l), loaded: l };
    const now = this.deps.clock.now();
    const row = await upsertDeposit(
      tx,
      attempt,
      {
        token: attempt.token,
        txHash: c.txHash,
        index: 0,
        amount: c.amount,
        from: c.from,
        blockNumber: c.blockNumber,
        blockHash: null,
        status: 'confirmed',
        confirmations: attempt.confirmations_required,
        seenAt: now,
      },
      { valueCents: BigInt(c.cents), atLeastMin: true, now },
    );
    return this.apply(tx, withDeposits(l, [row]), { kind: 'captured', depositId: row.id }, now);
  }

  /** Sets the US cents of the locked manual payment's captures in flight (shown as `authorization.pending_usd_cents`). */
  setCapturePending(tx: Tx, l: Loaded, cents: number): Promise<Loaded> {
    return saveCapturePending(tx, l, cents, this.deps.clock.now());
  }

  private async feeBps(tx: Tx, merchantId: string): Promise<number> {
    return (await merchantFeeBps(tx, merchantId)) ?? this.deps.feeBps;
  }
}

/** The coin choice a manual payment's hold is on: the authorized one, or the one its captures paid. */
export function heldAttempt(l: Loaded): Loaded['attempts'][number] {
  const a = l.attempts.find((x) => x.id === l.row.paid_attempt_id) ?? l.attempts.find((x) => x.status === 'authorized');
  if (!a) throw new Error(`payment ${l.row.id} has no held coin choice`);
  return a;
}

/** What a manual payment's captures moved, in US cents (each capture's deposit carries its value). */
function capturedCents(l: Loaded): number {
  return l.deposits.filter((d) => d.status !== 'orphaned').reduce((s, d) => s + Number(d.value_cents ?? 0), 0);
}

/**
 * The US cents a payment is credited at when not its price: paid short within the tolerance, the price in
 * proportion to what arrived (docs/payments.md); null otherwise (exact payments, accepted underpayments).
 */
function creditValue(
  priceCents: number,
  withinTolerance: boolean | undefined,
  paidAmount: bigint,
  payAmount: bigint,
): number | null {
  if (!withinTolerance) return null;
  return Number(creditedCents(BigInt(priceCents), paidAmount, payAmount));
}
