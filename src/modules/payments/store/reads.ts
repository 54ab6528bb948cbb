/**
 * Reads of payments: the API's list, the dashboard's search and volume, the balance's money on the way, what other
 * modules ask for (a payment's state, a payment for its invoice, locked) and the public reads of checkout pages
 * and chain families.
 */
import { sql } from 'kysely';
import { decodeCursor } from '../../../core/cursor.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import type { Mode } from '../../../core/mode.ts';
import { tenantOf, type Tenant } from '../../../core/tenant.ts';
import type { DbOrTx, Tx } from '../../../db/index.ts';
import type { PaymentSearch } from '../reports.ts';
import type { PaymentStatus } from '../model.ts';
import type { AttemptRow, PaymentRow } from './payments.ts';

/** Status, amount and times of the payments `ids` of `mode` (those that exist), in one query. */
export async function paymentStates(
  db: DbOrTx,
  mode: Mode,
  ids: readonly string[],
): Promise<Array<Pick<PaymentRow, 'id' | 'status' | 'price_amount' | 'created_at' | 'expires_at' | 'paid_at'>>> {
  if (ids.length === 0) return [];
  const { rows } = await sql<
    Pick<PaymentRow, 'id' | 'status' | 'price_amount' | 'created_at' | 'expires_at' | 'paid_at'>
  >`
    SELECT id, status, price_amount, created_at, expires_at, paid_at FROM payments WHERE mode = ${mode} AND id = ANY(${ids as string[]}::text[])`.execute(
    db,
  );
  return rows;
}

export interface PaymentListQuery {
  order_id?: string;
  status?: PaymentStatus;
  /** `x402`: only payments the x402 facilitator settled. */
  source?: 'x402';
  cursor?: string;
  limit: number;
}

/** The ids of a list query in its order, `limit + 1` deep (one more tells whether a next page exists). */
async function idsDeep(
  query: { limit(n: number): { execute(): Promise<Array<{ id: string }>> } },
  limit: number,
): Promise<string[]> {
  return (await query.limit(limit + 1).execute()).map((r) => r.id);
}

/** Ids of a merchant's payments, newest first: up to `limit + 1` (one more tells whether a next page exists). */
export async function listPaymentIds(db: DbOrTx, tenant: Tenant, q: PaymentListQuery): Promise<string[]> {
  let query = db
    .selectFrom('payments')
    .select('id')
    .where('merchant_id', '=', tenant.merchantId)
    .where('mode', '=', tenant.mode);
  if (q.order_id !== undefined) query = query.where('order_id', '=', q.order_id);
  if (q.status !== undefined) query = query.where('status', '=', q.status);
  if (q.source !== undefined) query = query.where('source', '=', q.source);
  if (q.cursor !== undefined) query = query.where('id', '<', decodeCursor(q.cursor, new RegExp(ID_PATTERNS.pay)));
  return idsDeep(query.orderBy('id', 'desc'), q.limit);
}

/** Ids of the dashboard's search (see PaymentSearch), newest first: one more than `q.limit` when there is a next page. */
export async function searchPaymentIds(
  db: DbOrTx,
  tenant: Tenant,
  q: PaymentSearch & { limit: number },
): Promise<string[]> {
  let query = db
    .selectFrom('payments as p')
    .select('p.id')
    .where('p.merchant_id', '=', tenant.merchantId)
    .where('p.mode', '=', tenant.mode);
  if (q.status) query = query.where('p.status', '=', q.status);
  if (q.order_id) query = query.where('p.order_id', '=', q.order_id);
  if (q.source) query = query.where('p.source', '=', q.source);
  if (q.from) query = query.where('p.created_at', '>=', q.from);
  if (q.to) query = query.where('p.created_at', '<', q.to);
  if (q.token)
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('attempts as a')
          .select(sql`1`.as('one'))
          .whereRef('a.payment_id', '=', 'p.id')
          .where('a.token', '=', q.token!),
      ),
    );
  if (q.cursor) query = query.where('p.id', '<', decodeCursor(q.cursor, new RegExp(ID_PATTERNS.pay)));
  return idsDeep(query.orderBy('p.id', 'desc'), q.limit);
}

/** Paid price (US cents) and count per UTC day (YYYY-MM-DD) of payments paid in [from, to) and not reversed since; days without any are absent. */
export async function paidVolume(
  db: DbOrTx,
  { mode, merchantId }: Tenant,
  from: Date,
  to: Date,
): Promise<Array<{ day: string; cents: string; count: string }>> {
  const { rows } = await sql<{ day: string; cents: string; count: string }>`
    SELECT to_char(date_trunc('day', paid_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, sum(price_amount) AS cents, count(*) AS count
    FROM payments
    WHERE merchant_id = ${merchantId} AND mode = ${mode} AND paid_at IS NOT NULL AND paid_at >= ${from} AND paid_at < ${to}
      AND status IN ('paid', 'refunded')
    GROUP BY 1`.execute(db);
  return rows;
}

// ---- Balance ----

/** Sum of the prices of the merchant's payments with money on the way (detected, confirming). */
export async function pendingCents(db: DbOrTx, tenant: Tenant): Promise<number> {
  const row = await db
    .selectFrom('payments')
    .select(sql<string>`coalesce(sum(price_amount), 0)`.as('sum'))
    .where('merchant_id', '=', tenant.merchantId)
    .where('mode', '=', tenant.mode)
    .where('status', 'in', ['detected', 'confirming'])
    .executeTakeFirstOrThrow();
  return Number(row.sum);
}

// ---- For tax invoices ----

/** What a tax invoice of a payment is made from; null when the merchant has no such payment in the mode. */
export async function invoiceablePayment(db: DbOrTx, tenant: Tenant, id: string) {
  return (
    db
      .selectFrom('payments')
      .select(['id', 'status', 'paid_at', 'price_amount', 'description'])
      // What the invoice is for: the price, or what a held payment's captures took so far (docs/capture.md).
      .select(
        sql<number>`CASE WHEN capture_method = 'manual' THEN coalesce(credited_cents, 0) ELSE price_amount END`.as(
          'invoice_cents',
        ),
      )
      .where('id', '=', id)
      .where('mode', '=', tenant.mode)
      .where('merchant_id', '=', tenant.merchantId)
      .executeTakeFirst() ?? null
  );
}

/**
 * Locks the payment for its invoice until `tx` ends (serializing with a refund or another invoice of it) and answers
 * its status as locked.
 */
export async function lockForInvoice(tx: Tx, id: string): Promise<string> {
  const row = await tx
    .selectFrom('payments')
    .select('status')
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return row.status;
}

// ---- Public reads (checkout pages, chain families) ----

/** A payment's mode and merchant, by the payment id alone; null when there is none. */
export async function publicOwner(db: DbOrTx, id: string): Promise<Tenant | null> {
  const row = await db.selectFrom('payments').select(['mode', 'merchant_id']).where('id', '=', id).executeTakeFirst();
  return row ? tenantOf(row) : null;
}

/**
 * A fingerprint per payment of everything a payer sees change (status, attempt statuses, deposit statuses and
 * confirmations), for many payments in one query.
 */
export async function fingerprints(db: DbOrTx, ids: string[]): Promise<Map<string, string>> {
  const { rows } = await sql<{ id: string; fp: string }>`
    SELECT p.id, p.status || '|' ||
      coalesce((SELECT string_agg(a.id || ':' || a.status, ',' ORDER BY a.id) FROM attempts a WHERE a.payment_id = p.id), '') || '|' ||
      coalesce((SELECT string_agg(d.id || ':' || d.status || ':' || d.confirmations, ',' ORDER BY d.id) FROM deposits d WHERE d.payment_id = p.id), '') AS fp
    FROM payments p WHERE p.id = ANY(${ids}::text[])`.execute(db);
  return new Map(rows.map((r) => [r.id, r.fp]));
}

/** A coin choice of a payment with its payment's mode and status; null when the payment does not exist. */
export async function attemptOfPayment(
  db: DbOrTx,
  paymentId: string,
  attemptId: string,
): Promise<{
  mode: Mode;
  status: PaymentStatus;
  capture_before: Date | null;
  refund_before: Date | null;
  attempt: AttemptRow | null;
} | null> {
  const payment = await db
    .selectFrom('payments')
    .select(['mode', 'status', 'capture_before', 'refund_before'])
    .where('id', '=', paymentId)
    .executeTakeFirst();
  if (!payment) return null;
  const attempt = await db
    .selectFrom('attempts')
    .selectAll()
    .where('id', '=', attemptId)
    .where('payment_id', '=', paymentId)
    .executeTakeFirst();
  return { ...payment, attempt: attempt ?? null };
}
