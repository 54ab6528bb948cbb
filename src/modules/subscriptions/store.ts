/**
 * The subscriptions store: lookups on `subscriptions` and `subscription_invoices` and the scheduler's claims. Every
 * lookup for a merchant takes the mode and the merchant, so a test subscription never shows on the live API and the
 * reverse. (The writes are still in service.ts and scheduler.ts, inside the transactions that lock the rows.)
 */
import { sql, type Selectable } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import { decodeCursor } from '../../core/cursor.ts';
import { ID_PATTERNS } from '../../core/ids.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';
import type { SubscriptionInvoicesTable, SubscriptionsTable } from '../../db/schema.ts';
import type { OpenInvoice, SubscriptionState, SubscriptionStatus } from './model.ts';

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type InvoiceRow = Selectable<SubscriptionInvoicesTable>;

export interface SubscriptionScope {
  mode: Mode;
  merchantId: string;
}

export interface ListFilter {
  status?: SubscriptionStatus;
  customer_email?: string;
  cursor?: string;
}

/** The subscription's clock: the wall clock plus its test-mode offset. */
export function clockOf(row: Pick<SubscriptionRow, 'clock_offset_ms'>, wall: Date): Date {
  return new Date(wall.getTime() + Number(row.clock_offset_ms));
}

export function stateOf(row: SubscriptionRow): SubscriptionState {
  return {
    status: row.status,
    interval: row.interval,
    intervalCount: row.interval_count,
    graceDays: row.grace_days,
    startedAt: row.started_at,
    nextDueAt: row.next_due_at,
    periodsInvoiced: row.periods_invoiced,
  };
}

export async function loadSubscription(db: DbOrTx, scope: SubscriptionScope, id: string, forUpdate = false): Promise<SubscriptionRow | null> {
  let q = db.selectFrom('subscriptions').selectAll().where('id', '=', id).where('mode', '=', scope.mode).where('merchant_id', '=', scope.merchantId);
  if (forUpdate) q = q.forUpdate();
  return (await q.executeTakeFirst()) ?? null;
}

/** A subscription by id alone (the customer's signed link names it), any merchant and mode. */
export async function findSubscription(db: DbOrTx, id: string): Promise<SubscriptionRow | null> {
  if (!new RegExp(ID_PATTERNS.sub).test(id)) return null;
  return (await db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}

/** Ids newest first, `limit + 1` of them (the extra one tells whether there is a next page). */
export async function listSubscriptionRows(db: DbOrTx, scope: SubscriptionScope, f: ListFilter, limit: number): Promise<SubscriptionRow[]> {
  let q = db.selectFrom('subscriptions').selectAll().where('merchant_id', '=', scope.merchantId).where('mode', '=', scope.mode);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.customer_email !== undefined) q = q.where(sql`lower(customer_email)`, '=', f.customer_email.toLowerCase());
  if (f.cursor !== undefined) q = q.where('id', '<', decodeCursor(f.cursor, new RegExp(ID_PATTERNS.sub)));
  return q.orderBy('id', 'desc').limit(limit + 1).execute();
}

/** Every invoice of the subscriptions, by subscription, period and seq. */
export async function invoicesOf(db: DbOrTx, subscriptionIds: readonly string[]): Promise<InvoiceRow[]> {
  if (subscriptionIds.length === 0) return [];
  return db
    .selectFrom('subscription_invoices')
    .selectAll()
    .where('subscription_id', 'in', subscriptionIds as string[])
    .orderBy('subscription_id')
    .orderBy('period')
    .orderBy('seq')
    .execute();
}

/** The invoices the scheduler still has to look at (the latest unpaid one of each open period). */
export async function openInvoicesOf(db: DbOrTx, subscriptionIds: readonly string[]): Promise<InvoiceRow[]> {
  if (subscriptionIds.length === 0) return [];
  return db
    .selectFrom('subscription_invoices')
    .selectAll()
    .where('subscription_id', 'in', subscriptionIds as string[])
    .where('check_at', 'is not', null)
    .orderBy('period')
    .execute();
}

export function openInvoice(r: InvoiceRow, paymentStatus: string): OpenInvoice {
  return { paymentId: r.payment_id, period: r.period, seq: r.seq, dueAt: r.due_at, graceEndsAt: r.grace_ends_at, checkAt: r.check_at!, paymentStatus };
}

/**
 * Claims up to `limit` subscriptions (not cancelled) whose scheduler work is due at `now` (wall clock): locked
 * `FOR UPDATE SKIP LOCKED` for the caller's transaction, so workers in several processes share them.
 */
export async function claimDue(tx: Tx, now: Date, limit: number): Promise<SubscriptionRow[]> {
  const { rows } = await sql<SubscriptionRow>`
    SELECT * FROM subscriptions WHERE run_at <= ${now} AND status <> 'cancelled'
    ORDER BY run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`.execute(tx);
  return rows;
}

/**
 * Leases up to `limit` cancelled subscriptions whose open payments are still to be withdrawn: their `run_at` moves
 * `leaseMs` ahead, so another worker takes them only if this one dies before clearing it.
 */
export async function leaseWithdrawals(db: DbOrTx, now: Date, leaseMs: number, limit: number): Promise<SubscriptionRow[]> {
  const { rows } = await sql<SubscriptionRow>`
    UPDATE subscriptions SET run_at = ${new Date(now.getTime() + leaseMs)}
    WHERE id IN (
      SELECT id FROM subscriptions WHERE run_at <= ${now} AND status = 'cancelled'
      ORDER BY run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    )
    RETURNING *`.execute(db);
  return rows;
}

/** Recomputes when the scheduler next has work for a subscription that is not cancelled (wall clock). */
export async function reschedule(tx: Tx, id: string): Promise<void> {
  await sql`
    UPDATE subscriptions s SET run_at = LEAST(s.next_due_at, (
      SELECT min(i.check_at) FROM subscription_invoices i WHERE i.subscription_id = s.id AND i.check_at IS NOT NULL
    )) - s.clock_offset_ms * interval '1 millisecond'
    WHERE s.id = ${id} AND s.status <> 'cancelled'`.execute(tx);
}
