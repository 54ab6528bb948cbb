/**
 * Refunds: the confirmed money of the attempt that holds it goes back to a destination the payer names; for a
 * payment an x402 client made, by default to the address that paid (the one address Kasse knows the money came from).
 * The refunds module keeps them (`refunds`, through store.ts) and changes their payments only through the payments
 * engine.
 *
 * Requesting one records it `pending` and asks the transfers module for the outgoing transfer in the same
 * transaction (no network I/O): a chain family's sender, the simulated sender in test mode, or in live mode
 * nothing until a sender runs. Refunds are the transfers module's `refund` owner: when the transfer settles, the
 * refund settles in the same transaction; when it was sent, the payment becomes `refunded`, `payment.refunded` is
 * published and any standing credit is reversed in the ledger; when it failed, the refund keeps the reason
 * (`error`), `refund.failed` is published with the Refund, and the payment may be refunded again.
 */
import type { ChainRegistry } from '../../chains/registry.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { formatUnits } from '../../core/money.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import type { Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import {
  confirmedAmount,
  next,
  toState,
  TransitionError,
  type AttemptRow,
  type Loaded,
  type PaymentEngine,
} from '../payments/index.ts';
import type { CaptureService } from '../capture/index.ts';
import type { SettledTransfer, TransferOwner, TransferService } from '../transfers/index.ts';
import type { Refund } from './schema.ts';
import {
  insertRefund,
  lockRefund,
  openRefund,
  paymentRefunds,
  refundById,
  sentRefunds,
  settleRefund,
  type RefundRow,
} from './store.ts';

/** The purpose refunds carry in the transfers module. */
export const REFUND_PURPOSE = 'refund';
/**
 * The event of a refund that failed: `data` is the Refund (`status` `failed`, `error` says why), delivered like the
 * payment's own events (its `webhook_url`, in order with them). The payment is unchanged; a new refund may be asked.
 */
export const REFUND_FAILED_EVENT = 'refund.failed';

export interface RefundInput {
  /**
   * Where the money goes; absent: the payer's address of an x402 payment or of a held payment's authorization
   * (required for any other payment).
   */
  destination?: string;
  note?: string;
}

export class RefundService implements TransferOwner {
  constructor(
    private readonly engine: PaymentEngine,
    private readonly transfers: TransferService,
    /** Refunds of a held payment's captures go back through its escrow while they may (docs/capture.md). */
    private readonly holds: Pick<CaptureService, 'payer' | 'refundPath' | 'inFlight'>,
  ) {
    transfers.own(REFUND_PURPOSE, this);
    // Money a sent refund returned is no longer held for the payment (payments/held.ts).
    engine.returnsFrom(sentRefunds);
  }

  /** Requests a refund of the payment's money; answers the Refund object (`pending`). */
  async create(tenant: Tenant, paymentId: string, input: RefundInput, actor: Actor): Promise<Refund> {
    const { chains, clock } = this.engine.deps;
    const { mode } = tenant;
    const first = await this.engine.load(tenant, paymentId);
    if (!first) throw notFound('payment');
    const destination =
      input.destination ??
      (first.row.x402 as { payer?: string } | null)?.payer ??
      (await this.holds.payer(mode, paymentId)) ??
      undefined;
    if (!destination)
      throw invalid(
        'destination is required: the address on the paid network to send the money back to',
        'destination',
      );
    const holder = refundable(first);
    if (!holder) throw invalidState('No confirmed money has arrived for this payment; there is nothing to refund.');
    const adapter = chains.adapter(mode, holder.attempt.chain);
    if (!adapter.isValidAddress(destination)) {
      throw invalid(
        `destination is not a valid ${chains.network(mode, holder.attempt.chain)?.name ?? holder.attempt.chain} address`,
        'destination',
      );
    }

    const refund = await this.engine.locked(tenant, paymentId, async (tx, l) => {
      const money = refundable(l);
      if (!money) throw invalidState('No confirmed money has arrived for this payment; there is nothing to refund.');
      const { attempt } = money;
      const open = await openRefund(tx, paymentId);
      if (open) throw invalidState(`A refund for this payment is already ${open.status}.`);
      // A held payment's refund returns what its captures moved: refused until those asked for settle.
      const moving = await this.holds.inFlight(tx, l);
      if (moving)
        throw invalidState(
          `A ${moving} of this payment's hold is on its way; refund once it settles, so the refund returns everything captured.`,
        );
      try {
        next(toState(l), { kind: 'refund_sent', attemptId: attempt.id }, { now: clock.now(), rates: new Map() });
      } catch (err) {
        throw err instanceof TransitionError ? invalidState(err.message) : err;
      }
      // NOTE: a coin removed from the networks file since it was paid cannot be sent back by Kasse.
      const token = chains.token(mode, money.token);
      if (!token) throw invalidState(`${money.token} is no longer configured, so Kasse cannot send it back.`);
      // A held payment's captures go back to its payer through the escrow while refund_before allows.
      const escrow = await this.holds.refundPath(tx, l, destination);
      const row = await insertRefund(tx, {
        payment_id: paymentId,
        attempt_id: attempt.id,
        merchant_id: tenant.merchantId,
        mode,
        status: 'pending',
        destination,
        token: money.token,
        amount: money.amount.toString(),
        note: input.note ?? null,
        created_at: clock.now(),
      });
      await this.engine.deps.audit.record(
        tx,
        tenant,
        actor,
        'payment.refund',
        { type: 'payment', id: paymentId },
        { refund_id: row.id, destination: row.destination, token: row.token, amount: row.amount },
      );
      await this.transfers.request(tx, {
        transferId: row.id,
        mode,
        purpose: REFUND_PURPOSE,
        token,
        destination: row.destination,
        amount: money.amount,
        ...(escrow ? { hold: escrow.hold } : {}),
      });
      return row;
    });
    if (!refund) throw notFound('payment');
    return refundJson(refund, chains);
  }

  /** The payment's refunds (every status, oldest first), as Refund objects. */
  async list(tenant: Tenant, paymentId: string): Promise<Refund[]> {
    const { db, chains } = this.engine.deps;
    return (await paymentRefunds(db, tenant, paymentId)).map((r) => refundJson(r, chains));
  }

  /** The transfers module settled refunds' transfers (once each); runs inside its transaction. */
  async transfersSettled(tx: Tx, transfers: SettledTransfer[]): Promise<void> {
    for (const transfer of transfers) await this.settled(tx, transfer);
  }

  private async settled(tx: Tx, transfer: SettledTransfer): Promise<void> {
    const { clock, log, events, chains } = this.engine.deps;
    const found = await refundById(tx, transfer.mode, transfer.id);
    if (!found) return;
    await this.engine.lockedIn(tx, tenantOf(found), found.payment_id, async (tx, l) => {
      const refund = await lockRefund(tx, transfer.id);
      if (refund.status !== 'pending') return;
      const settled = {
        status: transfer.status,
        tx_hash: transfer.txHash,
        error: transfer.status === 'failed' ? (transfer.error ?? 'the transfer failed') : null,
        settled_at: clock.now(),
      };
      await settleRefund(tx, refund.id, settled);
      if (transfer.status !== 'sent') {
        log.warn({ refundId: refund.id, paymentId: l.row.id, error: settled.error }, 'refund failed');
        await events.publish(tx, {
          mode: transfer.mode,
          merchantId: l.row.merchant_id,
          type: REFUND_FAILED_EVENT,
          orderingKey: l.row.id,
          data: refundJson({ ...refund, ...settled }, chains),
          destination: l.row.webhook_url,
        });
        return;
      }
      try {
        await this.engine.apply(tx, l, { kind: 'refund_sent', attemptId: refund.attempt_id });
      } catch (err) {
        if (!(err instanceof TransitionError)) throw err;
        log.error(
          { refundId: refund.id, paymentId: l.row.id, err: err.message },
          'refund sent but the payment could not be marked refunded',
        );
      }
    });
  }

  /**
   * Test mode without a chain sender: settles pending simulated refunds as sent. The workers run it every few seconds
   * (`refunds-simulated`); tests run it after asking for a refund.
   */
  settleSimulated(): Promise<number> {
    return this.transfers.settleSimulated(REFUND_PURPOSE);
  }
}

/**
 * What a refund returns: the confirmed money of the attempt holding the payment's own coin (the paid attempt, else
 * the one with the largest confirmed share of its pay amount; ties: the latest); without any, a confirmed wrong
 * asset (another coin worth at least its minimum) on the latest attempt that has one. Null when neither arrived.
 */
function refundable(l: Loaded): { attempt: AttemptRow; token: string; amount: bigint } | null {
  const paid = l.attempts.find((a) => a.id === l.row.paid_attempt_id);
  if (paid && confirmedAmount(paid, l.deposits) > 0n)
    return { attempt: paid, token: paid.token, amount: confirmedAmount(paid, l.deposits) };
  let best: { attempt: AttemptRow; token: string; amount: bigint } | null = null;
  for (const a of l.attempts) {
    const amount = confirmedAmount(a, l.deposits);
    if (amount === 0n) continue;
    if (!best || amount * BigInt(best.attempt.pay_amount) >= best.amount * BigInt(a.pay_amount))
      best = { attempt: a, token: a.token, amount };
  }
  if (best) return best;
  for (const a of [...l.attempts].reverse()) {
    const wrong = l.deposits.filter(
      (d) =>
        d.attempt_id === a.id &&
        d.token !== a.token &&
        d.at_least_min &&
        (d.status === 'confirmed' || d.status === 'final'),
    );
    if (wrong.length === 0) continue;
    const token = wrong[0]!.token;
    return {
      attempt: a,
      token,
      amount: wrong.filter((d) => d.token === token).reduce((sum, d) => sum + BigInt(d.amount), 0n),
    };
  }
  return null;
}

/** The Refund object (see docs/payments.md). */
export function refundJson(r: RefundRow, chains: ChainRegistry): Refund {
  const amount = BigInt(r.amount);
  return {
    id: r.id,
    payment_id: r.payment_id,
    status: r.status,
    destination: r.destination,
    token: r.token,
    amount: amount.toString(),
    amount_display: formatUnits(amount, chains.token(r.mode, r.token)?.decimals ?? 0),
    tx_hash: r.tx_hash,
    note: r.note,
    error: r.status === 'failed' ? r.error : null,
    created_at: r.created_at.toISOString(),
  };
}
