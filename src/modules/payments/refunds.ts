/**
 * Refunds: the confirmed money of the attempt that holds it goes back to a destination the payer names.
 *
 * Requesting one records it `pending` and hands it to the chain's hot-wallet sender in the same transaction (no
 * network I/O). Without a sender, test mode settles it with the built-in simulated sender on the next worker pass,
 * and live mode leaves it pending until a sender exists. When a sender reports it sent (`TransferSink`), the
 * payment becomes `refunded`, `payment.refunded` is published and any standing credit is reversed in the ledger.
 */
import { randomBytes } from 'node:crypto';
import type { Mode, TransferResult, TransferSink } from '../../chains/types.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { formatUnits } from '../../core/money.ts';
import type { Selectable } from 'kysely';
import type { RefundsTable } from '../../db/schema.ts';
import type { PaymentEngine } from './engine.ts';
import type { Actor } from '../audit/service.ts';
import { next, TransitionError } from './state.ts';
import { confirmedAmount, loadPayment, SIMULATED_TX_PREFIX, toState, type AttemptRow, type Loaded, type PaymentScope } from './store.ts';

export interface RefundInput {
  destination: string;
  note?: string;
}

export class RefundService implements TransferSink {
  constructor(private readonly engine: PaymentEngine) {}

  /** Requests a refund of the payment's money; answers the Refund object (`pending`). */
  async create(scope: PaymentScope, paymentId: string, input: RefundInput, actor?: Actor) {
    const { db, chains, clock, log } = this.engine.deps;
    const first = await loadPayment(db, scope, paymentId);
    if (!first) throw notFound('payment');
    const holder = refundable(first);
    if (!holder) throw invalidState('No confirmed money has arrived for this payment; there is nothing to refund.');
    const adapter = chains.adapter(scope.mode, holder.attempt.chain);
    if (!adapter.isValidAddress(input.destination)) {
      throw invalid(`destination is not a valid ${chains.network(scope.mode, holder.attempt.chain)?.name ?? holder.attempt.chain} address`, 'destination');
    }

    const refund = await this.engine.locked(scope, paymentId, async (tx, l) => {
      const money = refundable(l);
      if (!money) throw invalidState('No confirmed money has arrived for this payment; there is nothing to refund.');
      const { attempt } = money;
      const open = await tx.selectFrom('refunds').select('status').where('payment_id', '=', paymentId).where('status', '<>', 'failed').executeTakeFirst();
      if (open) throw invalidState(`A refund for this payment is already ${open.status}.`);
      try {
        next(toState(l), { kind: 'refund_sent', attemptId: attempt.id }, { now: clock.now(), rates: new Map() });
      } catch (err) {
        throw err instanceof TransitionError ? invalidState(err.message) : err;
      }
      const token = chains.token(scope.mode, money.token);
      const sender = adapter.sender;
      const row = await tx
        .insertInto('refunds')
        .values({
          id: newId('rfd'),
          payment_id: paymentId,
          attempt_id: attempt.id,
          merchant_id: l.row.merchant_id,
          mode: scope.mode,
          status: 'pending',
          destination: input.destination,
          token: money.token,
          amount: money.amount.toString(),
          note: input.note ?? null,
          simulated: !sender && scope.mode === 'test',
          created_at: clock.now(),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      if (actor) {
        await this.engine.deps.audit.record(tx, { merchantId: l.row.merchant_id, mode: scope.mode, actor, action: 'payment.refund', target: { type: 'payment', id: paymentId }, details: { refund_id: row.id, destination: row.destination, token: row.token, amount: row.amount } });
      }
      if (sender && token) {
        await sender.enqueue(tx, { transferId: row.id, token, destination: row.destination, amount: BigInt(row.amount), mode: scope.mode, purpose: 'refund' });
      } else if (scope.mode === 'live') {
        log.warn({ refundId: row.id, chain: attempt.chain }, 'refund recorded but no sender runs for this network; it stays pending');
      }
      return row;
    });
    if (!refund) throw notFound('payment');
    return this.json(refund);
  }

  /** A sender reports a refund sent or failed; idempotent (only a pending refund changes). */
  async transferSettled(mode: Mode, result: TransferResult): Promise<void> {
    const { db, clock, log } = this.engine.deps;
    const found = await db.selectFrom('refunds').select('payment_id').where('id', '=', result.transferId).where('mode', '=', mode).executeTakeFirst();
    if (!found) return;
    await this.engine.locked({ mode, merchantId: null }, found.payment_id, async (tx, l) => {
      const refund = await tx.selectFrom('refunds').selectAll().where('id', '=', result.transferId).forUpdate().executeTakeFirstOrThrow();
      if (refund.status !== 'pending') return;
      await tx
        .updateTable('refunds')
        .set({ status: result.status, tx_hash: result.txHash, error: result.error, settled_at: clock.now() })
        .where('id', '=', refund.id)
        .execute();
      if (result.status !== 'sent') {
        log.warn({ refundId: refund.id, error: result.error }, 'refund failed');
        return;
      }
      try {
        await this.engine.apply(tx, l, { kind: 'refund_sent', attemptId: refund.attempt_id });
      } catch (err) {
        if (!(err instanceof TransitionError)) throw err;
        log.error({ refundId: refund.id, paymentId: l.row.id, err: err.message }, 'refund sent but the payment could not be marked refunded');
      }
    });
  }

  /** Test mode without a chain sender: settles pending simulated refunds as sent with a fake transaction hash. */
  async settleSimulated(): Promise<number> {
    const rows = await this.engine.deps.db
      .selectFrom('refunds')
      .select('id')
      .where('status', '=', 'pending')
      .where('simulated', '=', true)
      .where('mode', '=', 'test')
      .orderBy('created_at')
      .limit(500)
      .execute();
    for (const r of rows) {
      await this.transferSettled('test', { transferId: r.id, status: 'sent', txHash: SIMULATED_TX_PREFIX + randomBytes(31).toString('hex').slice(0, 61), error: null });
    }
    return rows.length;
  }

  /** The Refund object (see docs/payments.md). */
  json(r: Selectable<RefundsTable>) {
    const amount = BigInt(r.amount);
    return {
      id: r.id,
      payment_id: r.payment_id,
      status: r.status,
      destination: r.destination,
      token: r.token,
      amount: amount.toString(),
      amount_display: formatUnits(amount, this.engine.deps.chains.token(r.mode, r.token)?.decimals ?? 0),
      tx_hash: r.tx_hash,
      note: r.note,
      created_at: r.created_at.toISOString(),
    };
  }
}

/**
 * What a refund returns: the confirmed money of the attempt holding the payment's own coin (the paid attempt, else
 * the one with the largest confirmed share of its pay amount; ties: the latest); without any, a confirmed wrong
 * asset (another coin worth at least its minimum) on the latest attempt that has one. Null when neither arrived.
 */
function refundable(l: Loaded): { attempt: AttemptRow; token: string; amount: bigint } | null {
  const paid = l.attempts.find((a) => a.id === l.row.paid_attempt_id);
  if (paid && confirmedAmount(paid, l.deposits) > 0n) return { attempt: paid, token: paid.token, amount: confirmedAmount(paid, l.deposits) };
  let best: { attempt: AttemptRow; token: string; amount: bigint } | null = null;
  for (const a of l.attempts) {
    const amount = confirmedAmount(a, l.deposits);
    if (amount === 0n) continue;
    if (!best || amount * BigInt(best.attempt.pay_amount) >= best.amount * BigInt(a.pay_amount)) best = { attempt: a, token: a.token, amount };
  }
  if (best) return best;
  for (const a of [...l.attempts].reverse()) {
    const wrong = l.deposits.filter((d) => d.attempt_id === a.id && d.token !== a.token && d.at_least_min && (d.status === 'confirmed' || d.status === 'final'));
    if (wrong.length === 0) continue;
    const token = wrong[0]!.token;
    return { attempt: a, token, amount: wrong.filter((d) => d.token === token).reduce((sum, d) => sum + BigInt(d.amount), 0n) };
  }
  return null;
}
