/**
 * Payments settled outside the checkout: the x402 facilitator (src/modules/x402) hands over an authorization it
 * settled on chain, and it becomes a `paid` Payment through the same paths as any payment — one coin choice at the
 * merchant's x402 address (`external`: no watcher files transfers on it), the settling transfer as its confirmed
 * deposit, then the state machine, which credits the ledger with the merchant's fee and publishes `payment.paid`.
 * All in the caller's transaction, so the facilitator's settlement row and the payment commit together. Such a
 * payment is not bound by the coin's checkout minimum (`min_amount`). Rules: docs/x402.md.
 *
 * A subscription's charge (src/modules/subscriptions) pays a payment that already exists (the period's) the same
 * way: `settleCharged` adds the external coin choice at the merchant's receiving address to the waiting payment and
 * records the charge's transfer as its confirmed deposit, in the subscriptions module's transaction.
 */
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import type { Tx } from '../../db/index.ts';
import type { PaymentEngine } from './engine.ts';
import { PAYMENT_LIFETIME_MS } from './model.ts';
import type { Payment } from './schema.ts';
import { upsertDeposit, withDeposits } from './store/deposits.ts';
import { type ExternalAttempt, insertAttempt, insertExternal } from './store/external.ts';
import { type AttemptRow, lockPayment, type Loaded } from './store/payments.ts';

/** What a Payment shows of its x402 settlement (`x402` of the Payment object). */
export interface X402Details {
  /** The URL of the resource paid for, as the resource server described it. */
  resource: string | null;
  description: string | null;
  /** The paying address. */
  payer: string;
  /** CAIP-2 network id the authorization was settled on. */
  network: string;
  /** The settling transaction; a `0xsim…` hash when settlement was simulated. */
  transaction: string;
  /** Settlement was simulated (a test-mode network on the simulator). */
  simulated: boolean;
  /** The exact amount in US dollars (USDC), e.g. "0.001". */
  amount_usd: string;
}

export interface ExternalSettlement {
  mode: Mode;
  merchantId: string;
  /** Kasse network id and token id of the USDC settled. */
  chain: string;
  token: string;
  /** The merchant's x402 address on the network and its derivation index (sweeps find it through the deposit). */
  address: string;
  addressIndex: bigint;
  /** Smallest units settled. */
  amount: bigint;
  /** US cents this payment counts for (docs/x402.md: the sub-cent carry). */
  priceCents: number;
  orderId: string;
  description: string | null;
  /** The Payment's metadata (a payment link's sale: `link_id`); none when absent. */
  metadata?: Record<string, string>;
  x402: X402Details;
  /** The settling transfer: transaction, position, block (null when simulated). */
  transfer: { txHash: string; index: number; blockNumber: bigint | null; blockHash: string | null; from: string };
}

/** Records a settled x402 payment as `paid` inside `tx`; answers the Payment. */
export async function recordExternal(engine: PaymentEngine, tx: Tx, s: ExternalSettlement): Promise<Payment> {
  const now = engine.deps.clock.now();
  const { paymentId } = await insertExternalPayment(engine, tx, s, null);
  const l = (await lockPayment(tx, { mode: s.mode, merchantId: s.merchantId }, paymentId))!;
  return payByTransfer(engine, tx, l, l.attempts[0]!, s, BigInt(s.priceCents), now, 'x402');
}

/**
 * Records `s.transfer` as the confirmed deposit of `attempt` (one of `l`'s coin choices) and runs the state machine;
 * answers the Payment, which must now be paid (`what` names the payment in the error when it is not).
 */
async function payByTransfer(
  engine: PaymentEngine,
  tx: Tx,
  l: Loaded,
  attempt: AttemptRow,
  s: { token: string; amount: bigint; transfer: ExternalSettlement['transfer'] },
  valueCents: bigint,
  now: Date,
  what: string,
): Promise<Payment> {
  const deposit = await upsertDeposit(
    tx,
    attempt,
    {
      token: s.token,
      txHash: s.transfer.txHash,
      index: s.transfer.index,
      amount: s.amount,
      from: s.transfer.from,
      blockNumber: s.transfer.blockNumber,
      blockHash: s.transfer.blockHash,
      status: 'confirmed',
      confirmations: 1,
      seenAt: now,
    },
    { valueCents, atLeastMin: true, now },
  );
  const applied = await engine.apply(tx, withDeposits(l, [deposit]), { kind: 'deposits_changed' });
  if (applied.payment.status !== 'paid')
    throw new Error(`${what} payment ${l.row.id} ended ${applied.payment.status}, not paid`);
  return applied.payment;
}

/** A subscription's charge that landed: the transfer from the payer to the merchant's receiving address. */
export interface ChargeSettlement {
  chain: string;
  token: string;
  /** The merchant's receiving address on the network and its derivation index (sweeps find it through the deposit). */
  address: string;
  addressIndex: bigint;
  /** Smallest units charged: exactly what the payment asks for at the peg. */
  amount: bigint;
  transfer: { txHash: string; index: number; blockNumber: bigint | null; blockHash: string | null; from: string };
}

/**
 * Records a charge as the payment of waiting payment `paymentId` inside `tx`: the payment is locked, an external
 * coin choice added and the transfer recorded as its confirmed deposit; answers the paid Payment, or null when the
 * payment is no longer waiting (nothing is written then).
 */
export async function settleCharged(
  engine: PaymentEngine,
  tx: Tx,
  tenant: Tenant,
  paymentId: string,
  s: ChargeSettlement,
): Promise<Payment | null> {
  const now = engine.deps.clock.now();
  const l = await lockPayment(tx, tenant, paymentId);
  if (!l) throw new Error(`payment ${paymentId} of merchant ${tenant.merchantId} (${tenant.mode}) not found`);
  if (l.row.status !== 'waiting') return null;
  const attempt = await insertAttempt(tx, { payment_id: paymentId, ...externalAttempt(tenant.mode, s, now) });
  return payByTransfer(
    engine,
    tx,
    { ...l, attempts: [...l.attempts, attempt] },
    attempt,
    s,
    BigInt(l.row.price_amount),
    now,
    'charged',
  );
}

/** What an x402 authorization locked in escrow becomes: a manual payment waiting for its hold (docs/capture.md). */
export type ExternalHoldInput = Omit<ExternalSettlement, 'transfer'> & {
  /** The hold's deadlines as the payer signed them (the escrow's authorization and refund expiries). */
  captureBefore: Date;
  refundBefore: Date;
};

/**
 * Creates the manual payment (`source` x402) of an authorization the x402 facilitator locked in escrow, with its one
 * `external` coin choice, inside `tx`; answers it locked and `waiting`. The capture module records the hold and makes
 * it `authorized` in the same transaction (capture's `recordAuthorizedHold`).
 */
export async function insertExternalHold(engine: PaymentEngine, tx: Tx, s: ExternalHoldInput): Promise<Loaded> {
  const { paymentId } = await insertExternalPayment(engine, tx, s, {
    captureBefore: s.captureBefore,
    refundBefore: s.refundBefore,
  });
  return (await lockPayment(tx, { mode: s.mode, merchantId: s.merchantId }, paymentId))!;
}

async function insertExternalPayment(
  engine: PaymentEngine,
  tx: Tx,
  s: Omit<ExternalSettlement, 'transfer'>,
  hold: { captureBefore: Date; refundBefore: Date } | null,
): Promise<{ paymentId: string }> {
  const now = engine.deps.clock.now();
  return insertExternal(
    tx,
    {
      merchant_id: s.merchantId,
      mode: s.mode,
      status: 'waiting',
      price_amount: s.priceCents,
      price_currency: 'USD',
      order_id: s.orderId,
      description: s.description,
      success_url: null,
      cancel_url: null,
      webhook_url: null,
      metadata: JSON.stringify(s.metadata ?? {}),
      expires_at: new Date(now.getTime() + PAYMENT_LIFETIME_MS),
      created_at: now,
      updated_at: now,
      x402: JSON.stringify(s.x402),
      ...(hold
        ? { capture_method: 'manual' as const, capture_before: hold.captureBefore, refund_before: hold.refundBefore }
        : {}),
    },
    externalAttempt(s.mode, s, now),
  );
}

/** The one coin choice of a payment settled outside the checkout: `amount` at the peg, confirmed at one block. */
function externalAttempt(mode: Mode, s: Omit<ChargeSettlement, 'transfer'>, now: Date): ExternalAttempt {
  return {
    mode,
    chain: s.chain,
    token: s.token,
    address: s.address,
    address_index: s.addressIndex,
    pay_amount: s.amount.toString(),
    rate: '1',
    rate_source: 'peg',
    status: 'waiting',
    confirmation_tier: 1,
    confirmations_required: 1,
    expires_at: new Date(now.getTime() + 60_000),
    uri: null,
    created_at: now,
  };
}
