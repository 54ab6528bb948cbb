/**
 * Hold and capture (docs/capture.md): a manual payment's payer authorizes a hold of the price, locked in an escrow
 * Kasse operates; the merchant captures it, in parts and more than once, until `capture_before`, or voids the rest;
 * at `capture_before` Kasse voids what is left, and a payer who reclaimed it on chain meanwhile is recorded as such.
 *
 * The module keeps the holds and their operations (store.ts); the deadline's due pass is due.ts. Every move of held
 * money — authorize, capture, void — is an outgoing transfer of the transfers module (purposes `authorize`, `capture`,
 * `void`), recorded in the transaction that asks for it and carried out by the network's sender on the one transfer
 * queue, so it happens once across crashes; the module is called back in the transaction that settles it and
 * changes the payment only through the payments engine: `authorized`, a capture as a deposit of the held coin choice
 * (`captured`: the first makes it paid, each is credited with its fee), and `hold_released`. A hold the simulator
 * authorized (test mode) moves through the simulated sender the same way. Refunds of captured money go back through
 * the escrow while `refund_before` allows (the refunds module asks `refundPath`).
 */
import type { HoldOperation, HoldsPort, SignedHold } from '../../chains/ports.ts';
import { ApiError, invalid, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Mode } from '../../core/mode.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import { WorkNotifier } from '../../core/wakers.ts';
import { afterCommit, isUniqueViolation, withTx, type Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { idempotent, requestHash, validateKey } from '../idempotency/index.ts';
import {
  TransitionError,
  type Applied,
  type AttemptRow,
  type Loaded,
  type Payment,
  type PaymentEngine,
  insertExternalHold,
  type ExternalHoldInput,
} from '../payments/index.ts';
import { refundOpen } from '../refunds/index.ts';
import type { SettledTransfer, TransferOwner, TransferService } from '../transfers/index.ts';
import {
  capturedCents,
  holdById,
  holdOperations,
  insertHold,
  insertOperation,
  lockHold,
  lockOperation,
  operationById,
  paymentHold,
  settleOperation,
  updateHold,
  type HoldRow,
  type OperationRow,
} from './store.ts';
import { runDue } from './due.ts';
import { capturesOf, openHold, openHolds, type OpenHold } from './reads.ts';
import type { HoldRelease } from './tables.ts';

export type { OpenHold };

/** The transfers module's purposes of hold operations; this module owns them. */
export const HOLD_PURPOSES = { authorize: 'authorize', capture: 'capture', void: 'void' } as const;

/** How many due holds one pass looks at. */
const DUE_BATCH = 50;

const refused = (message: string, param: string | null = null) => new ApiError('invalid_state', message, param);

/**
 * A hold already authorized on chain, handed over with the payment it pays for (see `recordAuthorizedHold`): the
 * payment's details as for a settled x402 payment, the hold's deadlines, and the hold as the chain family knows it.
 */
export type AuthorizedHold = ExternalHoldInput & {
  /** The payer's address (where a void or a refund returns the money). */
  payer: string;
  /** The hold's identifier on its chain (for EVM, the escrow's payment-info hash). */
  reference: string;
  /** The family's terms of the hold (for EVM, the escrow's `PaymentInfo`), handed back with every operation on it. */
  terms: unknown;
};

export interface CaptureInput {
  /** US cents to capture; absent: all that remains. */
  amount_usd_cents?: number;
}

export class CaptureService implements TransferOwner, HoldsPort {
  private readonly work = new WorkNotifier();
  /** Registers a callback run when the due pass has work (a void past the deadline failed); returns its removal. */
  readonly onWork = (waker: () => void): (() => void) => this.work.onWork(waker);

  constructor(
    private readonly engine: PaymentEngine,
    private readonly transfers: TransferService,
  ) {
    for (const purpose of Object.values(HOLD_PURPOSES)) transfers.own(purpose, this);
  }

  // ---- The payer's authorization ----

  /** A family's checkout verified a payer's signed hold: recorded, and its authorize transfer asked for (HoldsPort). */
  async holdSigned(h: SignedHold): Promise<{ transferId: string }> {
    const { db, clock, chains, log } = this.engine.deps;
    try {
      const id = await withTx(db, (tx) =>
        this.engine.lockedByIdIn(tx, h.mode, h.paymentId, async (tx, l) => {
          const attempt = this.openChoice(l, h.attemptId);
          if (await paymentHold(tx, l.row.id, true))
            throw refused('This payment is already authorized, or its authorization is on its way.', 'attempt_id');
          const token = chains.token(h.mode, attempt.token);
          if (!token) throw refused(`${attempt.token} is no longer configured.`, 'attempt_id');
          const hold = await insertHold(tx, {
            ...this.holdValues(l, attempt),
            payer: h.payer,
            reference: h.reference,
            terms: JSON.stringify(h.terms),
            simulated: false,
            status: 'authorizing',
            created_at: clock.now(),
          });
          await this.transfers.request(tx, {
            transferId: hold.id,
            mode: h.mode,
            purpose: HOLD_PURPOSES.authorize,
            token,
            destination: h.payer,
            amount: BigInt(hold.amount),
            hold: { kind: 'authorize', terms: h.terms, signature: h.signature },
            confirmations: attempt.confirmations_required,
          });
          log.info({ holdId: hold.id, paymentId: l.row.id, mode: h.mode }, 'hold signed; authorizing');
          return hold.id;
        }),
      );
      if (!id) throw notFound('payment');
      return { transferId: id };
    } catch (err) {
      if (isUniqueViolation(err, 'holds_open'))
        throw refused('This payment is already authorized, or its authorization is on its way.', 'attempt_id');
      throw err;
    }
  }

  /**
   * Test mode: the simulator's `authorized` outcome, inside its transaction on the locked payment: a simulated hold of
   * the latest coin choice, locked at once (nothing is on a chain), and the payment authorized.
   */
  async simulateAuthorized(tx: Tx, l: Loaded, payer: string | null): Promise<Applied> {
    const attempt = l.attempts[l.attempts.length - 1];
    if (!attempt) throw new Error(`payment ${l.row.id} has no coin choice to authorize`);
    this.openChoice(l, attempt.id);
    if (await paymentHold(tx, l.row.id, true)) throw refused('This payment is already authorized.');
    const now = this.engine.deps.clock.now();
    await insertHold(tx, {
      ...this.holdValues(l, attempt),
      payer,
      reference: null,
      terms: null,
      simulated: true,
      status: 'authorized',
      created_at: now,
      authorized_at: now,
    });
    return this.engine.apply(tx, l, { kind: 'authorized', attemptId: attempt.id });
  }

  /**
   * An authorization already locked in escrow on chain (the x402 facilitator's `auth-capture` settlement): inside the
   * caller's transaction, creates its manual payment (`source` x402, one coin choice at the receiver), records the
   * hold as authorized and makes the payment `authorized` (`payment.authorized`). The merchant then captures, voids
   * and refunds it like any held payment. Answers the Payment.
   */
  async recordAuthorizedHold(tx: Tx, h: AuthorizedHold): Promise<Payment> {
    const now = this.engine.deps.clock.now();
    const l = await insertExternalHold(this.engine, tx, h);
    const attempt = l.attempts[0]!;
    await insertHold(tx, {
      ...this.holdValues(l, attempt),
      payer: h.payer,
      reference: h.reference,
      terms: JSON.stringify(h.terms),
      simulated: h.x402.simulated,
      status: 'authorized',
      created_at: now,
      authorized_at: now,
    });
    this.engine.deps.log.info({ paymentId: l.row.id, mode: h.mode, reference: h.reference }, 'x402 hold recorded');
    return (await this.engine.apply(tx, l, { kind: 'authorized', attemptId: attempt.id })).payment;
  }

  /** The coin choice a hold may be signed for: of a waiting manual payment, itself waiting, its hold not run out. */
  private openChoice(l: Loaded, attemptId: string): AttemptRow {
    if (l.row.capture_method !== 'manual')
      throw refused('This payment is paid by sending coins, not by authorizing a hold.', 'attempt_id');
    const attempt = l.attempts.find((a) => a.id === attemptId);
    if (!attempt) throw invalid('attempt_id is not a coin choice of this payment.', 'attempt_id');
    const now = this.engine.deps.clock.now();
    if (l.row.status !== 'waiting' || attempt.status !== 'waiting' || attempt.expires_at <= now)
      throw refused('This coin choice is no longer open for an authorization; choose the coin again.', 'attempt_id');
    return attempt;
  }

  private holdValues(l: Loaded, attempt: AttemptRow) {
    if (!l.row.capture_before || !l.row.refund_before) throw new Error(`manual payment ${l.row.id} has no hold terms`);
    return {
      id: newId('hld'),
      merchant_id: l.row.merchant_id,
      mode: l.row.mode,
      payment_id: l.row.id,
      attempt_id: attempt.id,
      chain: attempt.chain,
      token: attempt.token,
      amount: attempt.pay_amount,
      capture_before: l.row.capture_before,
      refund_before: l.row.refund_before,
    };
  }

  // ---- The merchant's captures and voids ----

  /**
   * Captures `amount_usd_cents` (default: all that remains) of an authorized payment's hold: recorded with its
   * transfer, settled on chain later (`payment.captured`; the first also `payment.paid`). Idempotency-Key: the same
   * key and body answer the first answer. Answers the Payment as it stands (the capture in `pending_usd_cents`).
   */
  async capture(
    tenant: Tenant,
    id: string,
    input: CaptureInput,
    key: string | undefined,
    actor: Actor,
  ): Promise<{ status: number; payment: Payment }> {
    return this.guarded(tenant, id, 'capture', input, key, async (tx, l) => {
      const { hold, ops } = await this.actionable(tx, l, 'captured');
      if (await refundOpen(tx, l.row.id))
        throw refused('A refund of this payment is on its way; capture once it settles (a failed refund allows it).');
      const now = this.engine.deps.clock.now();
      if (now >= hold.capture_before)
        throw refused(
          `The hold could be captured until ${hold.capture_before.toISOString()}; what was not captured goes back to the payer.`,
        );
      const price = l.row.price_amount;
      const { cents: captured, units: capturedUnits } = capturesOf(l);
      const pending = ops.filter((o) => o.kind === 'capture' && o.status === 'pending');
      const pendingCents = pending.reduce((s, o) => s + o.amount_cents!, 0);
      const remaining = price - captured - pendingCents;
      const inFlight = pendingCents > 0 ? `, ${pendingCents} being captured` : '';
      if (remaining <= 0)
        throw refused(
          `Nothing remains to capture: ${price} US cents were authorized (${captured} captured${inFlight}).`,
        );
      const cents = input.amount_usd_cents ?? remaining;
      if (cents > remaining)
        throw refused(
          `Only ${remaining} US cents remain to capture (${price} authorized, ${captured} captured${inFlight}).`,
          'amount_usd_cents',
        );
      const held = BigInt(hold.amount);
      const rest = held - capturedUnits - pending.reduce((s, o) => s + BigInt(o.amount), 0n);
      // The last capture takes exactly what is left; a part takes its share of the held amount, rounded down.
      const units = cents === remaining ? rest : (held * BigInt(cents)) / BigInt(price);
      if (units <= 0n) throw refused(`${cents} US cents are less than the coin's smallest unit.`, 'amount_usd_cents');
      const op = await insertOperation(tx, {
        id: newId('cap'),
        merchant_id: hold.merchant_id,
        mode: hold.mode,
        hold_id: hold.id,
        payment_id: hold.payment_id,
        kind: 'capture',
        amount: units.toString(),
        amount_cents: cents,
        reason: null,
        status: 'pending',
        created_at: now,
      });
      const attempt = l.attempts.find((a) => a.id === hold.attempt_id)!;
      await this.operate(tx, hold, op, attempt.address, attempt.confirmations_required);
      const after = await this.engine.setCapturePending(tx, l, pendingCents + cents);
      await this.audit(tx, l, actor, 'payment.capture', { capture_id: op.id, amount_usd_cents: cents });
      return after;
    });
  }

  /**
   * Voids what is left of an authorized payment's hold (it goes back to the payer once settled on chain): before any
   * capture the payment becomes `cancelled`, after captures it stays `paid` (or `refunded`) and `authorization.voided`
   * turns true. Refused while a capture is in flight: the escrow's void releases everything still held, so a void
   * mined first would make the capture fail. Accepted after `capture_before` (it is what the deadline's void does).
   */
  async void(
    tenant: Tenant,
    id: string,
    key: string | undefined,
    actor: Actor,
  ): Promise<{ status: number; payment: Payment }> {
    return this.guarded(tenant, id, 'void', {}, key, async (tx, l) => {
      const { hold, ops } = await this.actionable(tx, l, 'voided');
      if (ops.some((o) => o.kind === 'capture' && o.status === 'pending'))
        throw refused('A capture of this hold is on its way; void once the capture settles.');
      const op = await this.requestVoid(tx, l, hold, ops, 'merchant');
      if (!op) throw refused('Nothing is left of the hold to void.');
      await this.audit(tx, l, actor, 'payment.void', { void_id: op.id });
      return l;
    });
  }

  /** Runs a merchant's action on the locked payment under its Idempotency-Key; answers the Payment. */
  private async guarded(
    tenant: Tenant,
    id: string,
    action: 'capture' | 'void',
    body: object,
    key: string | undefined,
    work: (tx: Tx, l: Loaded) => Promise<Loaded>,
  ): Promise<{ status: number; payment: Payment }> {
    const request = { key: validateKey(key), hash: requestHash('POST', `/v1/payments/${id}/${action}`, body) };
    const result = await idempotent(this.engine.deps.db, tenant, request, 200, async (tx) => {
      const payment = await this.engine.lockedIn(tx, tenant, id, async (tx, l) => this.engine.json(await work(tx, l)));
      if (!payment) throw notFound('payment');
      return payment;
    });
    return { status: result.status, payment: result.body };
  }

  /** The hold of the locked payment a merchant may capture or void now, and its operations; 422 otherwise. */
  private async actionable(tx: Tx, l: Loaded, verb: 'captured' | 'voided') {
    if (l.row.capture_method !== 'manual')
      throw refused(`Only a payment with capture_method manual can be ${verb}; this one was paid by sending coins.`);
    const hold = await paymentHold(tx, l.row.id, true);
    if (!hold || hold.status === 'authorizing')
      throw refused(`This payment is ${l.row.status}: the payer has not authorized it yet.`);
    if (hold.status === 'released' || l.row.hold_released)
      throw refused('The hold was voided; what was not captured went back to the payer.');
    if (hold.status === 'captured') throw refused('Everything authorized was captured.');
    // A refund returns what was captured; the rest of the hold can still go back to the payer.
    const open =
      l.row.status === 'authorized' || l.row.status === 'paid' || (verb === 'voided' && l.row.status === 'refunded');
    if (!open) throw refused(`This payment is ${l.row.status}; its hold cannot be ${verb}.`);
    const ops = await holdOperations(tx, hold.id);
    if (ops.some((o) => o.kind === 'void' && o.status === 'pending'))
      throw refused('A void of this hold is on its way; nothing more can be captured.');
    return { hold, ops };
  }

  /**
   * Asks for a void of what is left of `hold` (on the locked payment); null when everything left is being captured.
   * What is left when it is mined goes back to the payer, whatever the amount recorded here.
   */
  private async requestVoid(
    tx: Tx,
    l: Loaded,
    hold: HoldRow,
    ops: OperationRow[],
    reason: 'merchant' | 'deadline',
  ): Promise<OperationRow | null> {
    const pendingUnits = ops
      .filter((o) => o.kind === 'capture' && o.status === 'pending')
      .reduce((s, o) => s + BigInt(o.amount), 0n);
    const rest = BigInt(hold.amount) - BigInt(hold.captured) - pendingUnits;
    if (rest <= 0n) return null;
    const op = await insertOperation(tx, {
      id: newId('vod'),
      merchant_id: hold.merchant_id,
      mode: hold.mode,
      hold_id: hold.id,
      payment_id: hold.payment_id,
      kind: 'void',
      amount: rest.toString(),
      amount_cents: null,
      reason,
      status: 'pending',
      created_at: this.engine.deps.clock.now(),
    });
    const attempt = l.attempts.find((a) => a.id === hold.attempt_id)!;
    await this.operate(tx, hold, op, hold.payer ?? attempt.address, attempt.confirmations_required);
    return op;
  }

  /** Asks for an operation's transfer: through the network's sender, or simulated for a simulated hold. */
  private async operate(
    tx: Tx,
    hold: HoldRow,
    op: OperationRow,
    destination: string,
    confirmations: number,
  ): Promise<void> {
    const token = this.engine.deps.chains.token(hold.mode, hold.token);
    if (!token) throw refused(`${hold.token} is no longer configured, so Kasse cannot move the hold.`);
    await this.transfers.request(
      tx,
      {
        transferId: op.id,
        mode: hold.mode,
        purpose: HOLD_PURPOSES[op.kind],
        token,
        destination,
        amount: BigInt(op.amount),
        hold: { kind: op.kind, terms: hold.terms },
        confirmations,
      },
      { simulated: hold.simulated },
    );
  }

  private async audit(tx: Tx, l: Loaded, actor: Actor, action: string, details: Record<string, unknown>) {
    await this.engine.deps.audit.record(tx, tenantOf(l.row), actor, action, { type: 'payment', id: l.row.id }, details);
  }

  // ---- Settlement (the transfers module's owner callbacks) ----

  /** Hold operations' transfers settled (once each); runs inside the transfers module's transaction. */
  async transfersSettled(tx: Tx, settled: SettledTransfer[]): Promise<void> {
    for (const t of settled) {
      if (t.purpose === HOLD_PURPOSES.authorize) await this.authorizeSettled(tx, t);
      else await this.operationSettled(tx, t);
    }
  }

  private async authorizeSettled(tx: Tx, t: SettledTransfer): Promise<void> {
    const { clock, log } = this.engine.deps;
    const found = await holdById(tx, t.mode, t.id);
    if (!found) throw new Error(`authorize transfer ${t.id} settled for no hold`);
    await this.engine.lockedByIdIn(tx, t.mode, found.payment_id, async (tx, l) => {
      const hold = await lockHold(tx, found.id);
      if (hold.status !== 'authorizing') return;
      if (t.status === 'failed') {
        await updateHold(tx, hold.id, { status: 'failed', error: t.error ?? 'the authorization failed' });
        log.warn({ holdId: hold.id, paymentId: l.row.id, error: t.error }, 'hold not authorized');
        return;
      }
      await updateHold(tx, hold.id, { status: 'authorized', authorized_at: clock.now() });
      try {
        await this.engine.apply(tx, l, { kind: 'authorized', attemptId: hold.attempt_id });
      } catch (err) {
        if (!(err instanceof TransitionError)) throw err;
        // The payment moved on while the authorization was confirmed (it was cancelled): the money goes back at once.
        log.warn({ holdId: hold.id, paymentId: l.row.id, status: l.row.status }, 'hold authorized too late; voiding');
        await this.requestVoid(tx, l, { ...hold, status: 'authorized' }, [], 'deadline');
      }
    });
  }

  private async operationSettled(tx: Tx, t: SettledTransfer): Promise<void> {
    const { clock, log } = this.engine.deps;
    const found = await operationById(tx, t.mode, t.id);
    if (!found) throw new Error(`${t.purpose} transfer ${t.id} settled for no hold operation`);
    await this.engine.lockedByIdIn(tx, t.mode, found.payment_id, async (tx, l) => {
      const op = await lockOperation(tx, found.id);
      if (op.status !== 'pending') return;
      const hold = await lockHold(tx, op.hold_id);
      await settleOperation(tx, op.id, {
        status: t.status,
        tx_hash: t.txHash,
        error: t.status === 'failed' ? (t.error ?? `the ${op.kind} failed`) : null,
        settled_at: clock.now(),
      });
      const ops = await holdOperations(tx, hold.id);
      if (op.kind === 'capture') {
        const pending = ops.filter((o) => o.kind === 'capture' && o.status === 'pending');
        l = await this.engine.setCapturePending(
          tx,
          l,
          pending.reduce((s, o) => s + o.amount_cents!, 0),
        );
        if (t.status === 'sent' && l.row.status !== 'authorized' && l.row.status !== 'paid') {
          // Kept as settled (the money moved on chain) and nothing of it recorded on a payment that cannot take it,
          // rather than left to roll back its settlement forever.
          log.error(
            { captureId: op.id, paymentId: l.row.id, status: l.row.status, txHash: t.txHash },
            'capture settled but the payment could not take it',
          );
        } else if (t.status === 'sent') {
          if (!t.txHash) throw new Error(`capture ${op.id} of hold ${hold.id} was sent without a transaction`);
          const captured = BigInt(hold.captured) + BigInt(op.amount);
          await updateHold(tx, hold.id, {
            captured: captured.toString(),
            ...(captured === BigInt(hold.amount) ? { status: 'captured' as const } : {}),
          });
          hold.captured = captured.toString();
          const applied = await this.engine.recordCapture(tx, l, {
            txHash: t.txHash,
            amount: BigInt(op.amount),
            cents: op.amount_cents!,
            from: null,
            // An x402 hold pays its coin choice's address (the merchant's x402 forwarder): its block makes that
            // address due for the sweep like any deposit's. A checkout's hold pays the hot wallet: nothing to sweep.
            blockNumber: l.row.source === 'x402' ? (t.blockNumber ?? null) : null,
          });
          l = applied.loaded;
        } else {
          log.warn({ captureId: op.id, paymentId: l.row.id, error: t.error }, 'capture failed');
        }
      } else if (t.status === 'failed') {
        log.warn({ voidId: op.id, paymentId: l.row.id, error: t.error }, 'void failed');
        // Past the deadline the payer's reclaim may be why: the due pass runs (and records it) once this commits.
        if (clock.now() >= hold.capture_before) afterCommit(tx, () => this.work.nudge());
      }
      await this.releaseIfDone(tx, l, hold, ops);
    });
  }

  /**
   * A void that was sent releases the hold once no capture of it is in flight any more (a capture mined before the
   * void settles first, so what the void returned is known): the payment is cancelled when nothing was captured.
   */
  private async releaseIfDone(tx: Tx, l: Loaded, hold: HoldRow, ops: OperationRow[]): Promise<void> {
    if (hold.status !== 'authorized') return;
    if (ops.some((o) => o.kind === 'capture' && o.status === 'pending')) return;
    const sent = ops.find((o) => o.kind === 'void' && o.status === 'sent');
    if (!sent) return;
    await this.release(tx, l, hold, sent.reason === 'merchant' ? 'void' : 'deadline');
  }

  private async release(tx: Tx, l: Loaded, hold: HoldRow, by: HoldRelease): Promise<void> {
    const { clock, log } = this.engine.deps;
    await updateHold(tx, hold.id, { status: 'released', released_by: by, released_at: clock.now() });
    log.info({ holdId: hold.id, paymentId: l.row.id, by }, 'hold released');
    // A payment cancelled before its hold was authorized has nothing to record.
    if (l.row.status === 'authorized' || l.row.status === 'paid' || l.row.status === 'refunded')
      await this.engine.apply(tx, l, { kind: 'hold_released' });
  }

  // ---- Due work ----

  /** One pass over the holds whose `capture_before` is reached (due.ts); returns how many it acted on. */
  runDue(batch = DUE_BATCH): Promise<number> {
    return runDue(this.engine, batch, {
      release: (tx, l, hold, by) => this.release(tx, l, hold, by),
      requestVoid: (tx, l, hold, ops, reason) => this.requestVoid(tx, l, hold, ops, reason),
    });
  }

  /** Test mode: settles pending simulated hold operations as sent (the workers' loop; tests after asking). */
  async settleSimulated(): Promise<number> {
    let n = 0;
    for (const purpose of Object.values(HOLD_PURPOSES)) n += await this.transfers.settleSimulated(purpose);
    return n;
  }

  // ---- Reads ----

  /**
   * The escrow path of a refund of the locked manual payment `l`, when it has one: its hold is on a chain, the payer
   * is known, `refund_before` has not passed and the money goes back to the payer (no other destination). Null
   * otherwise: the refund leaves from the hot wallet as any other.
   */
  async refundPath(
    tx: Tx,
    l: Loaded,
    destination: string | undefined,
  ): Promise<{ hold: HoldOperation; destination: string } | null> {
    if (l.row.capture_method !== 'manual') return null;
    const hold = await paymentHold(tx, l.row.id);
    if (!hold || hold.simulated || !hold.payer || hold.status === 'authorizing') return null;
    if (this.engine.deps.clock.now() >= hold.refund_before) return null;
    if (destination !== undefined && destination.toLowerCase() !== hold.payer.toLowerCase()) return null;
    return { hold: { kind: 'refund', terms: hold.terms }, destination: hold.payer };
  }

  /**
   * What of the locked payment's hold is in flight on chain — a `capture` or a `void` asked for and not yet settled —
   * or null. A refund waits for it: it returns what was captured, which is only known once they settle.
   */
  async inFlight(tx: Tx, l: Loaded): Promise<'capture' | 'void' | null> {
    if (l.row.capture_method !== 'manual') return null;
    const hold = await paymentHold(tx, l.row.id);
    if (!hold) return null;
    const pending = (await holdOperations(tx, hold.id)).filter((o) => o.status === 'pending');
    return pending.find((o) => o.kind === 'capture')?.kind ?? pending[0]?.kind ?? null;
  }

  /** The address that authorized a manual payment's hold (where its refunds go by default), if known. */
  async payer(mode: Mode, paymentId: string): Promise<string | null> {
    const hold = await paymentHold(this.engine.deps.db, paymentId);
    return hold && hold.mode === mode ? hold.payer : null;
  }

  /** US cents of a merchant's captures settled in [from, to) (the statements' reconciliation). */
  capturedCents(tenant: Tenant, from: Date, to: Date): Promise<bigint> {
    return capturedCents(this.engine.deps.db, tenant, from, to);
  }

  /** A merchant's holds that can still be acted on, nearest deadline first (at most `limit`; reads.ts). */
  openHolds(tenant: Tenant, limit = 100): Promise<OpenHold[]> {
    return openHolds(this.engine, tenant, limit);
  }

  /** What can still be captured of a merchant's payment, and until when; null when it has none (reads.ts). */
  openHold(tenant: Tenant, paymentId: string): Promise<OpenHold | null> {
    return openHold(this.engine, tenant, paymentId);
  }
}
