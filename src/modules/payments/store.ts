/**
 * Persistence of payments: loading a payment with its attempts and deposits (optionally locked), mapping rows to the
 * state machine's `PaymentState` and back, and rendering the API's Payment object. Every lookup takes the mode, and
 * the merchant wherever the caller acts for one, so test objects never show on the live API and the reverse.
 */
import type { Selectable } from 'kysely';
import type { ChainRegistry } from '../../chains/registry.ts';
import type { Mode } from '../../core/mode.ts';
import { formatUnits } from '../../core/money.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';
import type { AttemptsTable, DepositsTable, PaymentsTable } from '../../db/schema.ts';
import type { AttemptState, AttemptStatus, DepositStatus, PaymentState, PaymentStatus } from './model.ts';
import type { Payment, RATE_SOURCES } from './schema.ts';

type RateSourceName = (typeof RATE_SOURCES)[number];

export type PaymentRow = Selectable<PaymentsTable>;
export type AttemptRow = Selectable<AttemptsTable>;
export type DepositRow = Selectable<DepositsTable>;

/** A payment as stored: its row, its attempts (creation order) and their deposits (order seen). */
export interface Loaded {
  row: PaymentRow;
  attempts: AttemptRow[];
  deposits: DepositRow[];
}

/** Simulated deposits carry transaction hashes with this prefix; they have no block and no explorer page. */
export const SIMULATED_TX_PREFIX = '0xsim';

export interface PaymentScope {
  mode: Mode;
  /** null only for callers that act for no merchant (watchers, workers, checkout pages). */
  merchantId: string | null;
}

export async function loadPayments(db: DbOrTx, scope: PaymentScope, ids: string[], forUpdate = false): Promise<Loaded[]> {
  if (ids.length === 0) return [];
  let q = db.selectFrom('payments').selectAll().where('mode', '=', scope.mode).where('id', 'in', ids);
  if (scope.merchantId !== null) q = q.where('merchant_id', '=', scope.merchantId);
  if (forUpdate) q = q.orderBy('id').forUpdate();
  const rows = await q.execute();
  if (rows.length === 0) return [];
  const found = rows.map((r) => r.id);
  const [attempts, deposits] = await Promise.all([
    db.selectFrom('attempts').selectAll().where('payment_id', 'in', found).orderBy('id').execute(),
    db.selectFrom('deposits').selectAll().where('payment_id', 'in', found).orderBy('seen_at').orderBy('id').execute(),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    if (!row) return [];
    return [{ row, attempts: attempts.filter((a) => a.payment_id === id), deposits: deposits.filter((d) => d.payment_id === id) }];
  });
}

export async function loadPayment(db: DbOrTx, scope: PaymentScope, id: string): Promise<Loaded | null> {
  return (await loadPayments(db, scope, [id]))[0] ?? null;
}

/** Loads a payment with `SELECT … FOR UPDATE` on its row, so concurrent changes to one payment serialize. */
export async function lockPayment(tx: Tx, scope: PaymentScope, id: string): Promise<Loaded | null> {
  return (await loadPayments(tx, scope, [id], true))[0] ?? null;
}

export function toState(l: Loaded): PaymentState {
  return {
    id: l.row.id,
    status: l.row.status as PaymentStatus,
    createdAt: l.row.created_at,
    expiresAt: l.row.expires_at,
    paidAt: l.row.paid_at,
    paidAttemptId: l.row.paid_attempt_id,
    paidAmount: l.row.paid_amount === null ? null : BigInt(l.row.paid_amount),
    attempts: l.attempts.map(
      (a): AttemptState => ({
        id: a.id,
        token: a.token,
        status: a.status as AttemptStatus,
        payAmount: BigInt(a.pay_amount),
        rate: a.rate,
        expiresAt: a.expires_at,
        overpaid: a.overpaid,
        wrongAsset: a.wrong_asset,
        deposits: l.deposits
          .filter((d) => d.attempt_id === a.id)
          .map((d) => ({
            id: d.id,
            token: d.token,
            amount: BigInt(d.amount),
            status: d.status as DepositStatus,
            confirmations: d.confirmations,
            seenAt: d.seen_at,
            valueCents: d.value_cents,
            atLeastTokenMinimum: d.at_least_min,
          })),
      }),
    ),
  };
}

/** Writes what the state machine changed (payment row and attempts); deposits are written by their own paths. */
export async function persist(tx: Tx, before: PaymentState, after: PaymentState, now: Date): Promise<void> {
  const changed =
    before.status !== after.status ||
    before.paidAt?.getTime() !== after.paidAt?.getTime() ||
    before.paidAttemptId !== after.paidAttemptId ||
    (before.paidAmount ?? null) !== (after.paidAmount ?? null);
  if (changed) {
    await tx
      .updateTable('payments')
      .set({
        status: after.status,
        paid_at: after.paidAt,
        paid_attempt_id: after.paidAttemptId,
        paid_amount: after.paidAmount == null ? null : after.paidAmount.toString(),
        updated_at: now,
      })
      .where('id', '=', after.id)
      .execute();
  }
  for (const a of after.attempts) {
    const b = before.attempts.find((x) => x.id === a.id);
    if (b && b.status === a.status && b.overpaid === a.overpaid && b.wrongAsset === a.wrongAsset) continue;
    await tx.updateTable('attempts').set({ status: a.status, overpaid: a.overpaid, wrong_asset: a.wrongAsset }).where('id', '=', a.id).execute();
  }
}

/** Decimals and display symbol of a token id; ids no longer configured fall back to 0 decimals. */
function tokenMeta(chains: ChainRegistry, mode: Mode, id: string): { decimals: number; symbol: string } {
  const t = chains.token(mode, id);
  return t ? { decimals: t.decimals, symbol: t.symbol } : { decimals: 0, symbol: (id.split(':')[1] ?? id).toUpperCase() };
}

/** Sum of the non-orphaned deposits of the attempt's own coin (what `received_amount` shows). */
export function receivedAmount(a: AttemptRow, deposits: DepositRow[]): bigint {
  let sum = 0n;
  for (const d of deposits) if (d.attempt_id === a.id && d.token === a.token && d.status !== 'orphaned') sum += BigInt(d.amount);
  return sum;
}

/** Confirmed (confirmed or final) amount of the attempt's own coin: what a refund returns. */
export function confirmedAmount(a: AttemptRow, deposits: DepositRow[]): bigint {
  let sum = 0n;
  for (const d of deposits) if (d.attempt_id === a.id && d.token === a.token && (d.status === 'confirmed' || d.status === 'final')) sum += BigInt(d.amount);
  return sum;
}

/** The API's Payment object, fields in the spec's order, every field present. */
export function paymentJson(l: Loaded, chains: ChainRegistry, checkoutBase: string): Payment {
  const p = l.row;
  const mode = p.mode;
  return {
    id: p.id,
    status: p.status as PaymentStatus,
    price_amount: p.price_amount,
    price_currency: p.price_currency as 'USD',
    order_id: p.order_id,
    description: p.description,
    checkout_url: `${checkoutBase}/p/${p.id}`,
    expires_at: p.expires_at.toISOString(),
    paid_at: p.paid_at?.toISOString() ?? null,
    paid_attempt_id: p.paid_attempt_id,
    success_url: p.success_url,
    cancel_url: p.cancel_url,
    metadata: (p.metadata ?? {}) as Record<string, unknown>,
    created_at: p.created_at.toISOString(),
    attempts: l.attempts.map((a) => {
      const meta = tokenMeta(chains, mode, a.token);
      const network = chains.network(mode, a.chain);
      const received = receivedAmount(a, l.deposits);
      return {
        id: a.id,
        chain: a.chain,
        token: a.token,
        symbol: meta.symbol,
        address: a.address,
        pay_amount: BigInt(a.pay_amount).toString(),
        pay_amount_display: formatUnits(BigInt(a.pay_amount), meta.decimals),
        received_amount: received.toString(),
        received_amount_display: formatUnits(received, meta.decimals),
        rate: a.rate,
        rate_source: a.rate_source as RateSourceName,
        status: a.status as AttemptStatus,
        overpaid: a.overpaid,
        wrong_asset: a.wrong_asset,
        confirmation_tier: a.confirmation_tier,
        confirmations_required: a.confirmations_required,
        expires_at: a.expires_at.toISOString(),
        uri: a.uri,
        deposits: l.deposits
          .filter((d) => d.attempt_id === a.id)
          .map((d) => {
            const amount = BigInt(d.amount);
            return {
              tx_hash: d.tx_hash,
              token: d.token,
              amount: amount.toString(),
              amount_display: formatUnits(amount, tokenMeta(chains, mode, d.token).decimals),
              from: d.from_address,
              block_number: d.block_number === null ? null : d.block_number.toString(),
              status: d.status as DepositStatus,
              confirmations: d.confirmations,
              explorer_url: network && !d.tx_hash.startsWith(SIMULATED_TX_PREFIX) ? chains.adapter(mode, a.chain).explorerUrl(d.tx_hash) : null,
            };
          }),
      };
    }),
  };
}

/** The Payment object (modules/payments/schema.ts). */
export type PaymentJson = Payment;
