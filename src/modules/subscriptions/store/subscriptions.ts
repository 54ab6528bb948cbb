/**
 * The subscriptions store: with store/charges.ts the only code on the module's tables; this file reads and writes
 * `subscriptions` and `subscription_invoices` — lookups,
 * the scheduler's claims and leases, and every write the service, the payments hook and the scheduler make, each
 * behind a named function that runs in the caller's transaction (the one holding the rows' locks). Every lookup for
 * a merchant takes the tenant (mode and merchant), so a test subscription never shows on the live API and the reverse.
 * The scheduler's batch writes are one statement per batch each (arrays bound as parameters and `unnest`ed), so a
 * batch of any size costs the same few round trips.
 */
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Tenant } from '../../../core/tenant.ts';
import { decodeCursor } from '../../../core/cursor.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import type { DbOrTx, Tx } from '../../../db/index.ts';
import { rowsWhere, rowWhere, someRow, updateWhere } from '../../../db/rows.ts';
import type { SubscriptionInvoicesTable, SubscriptionsTable } from '../tables.ts';
import type { CancellationReason, Collection, OpenInvoice, SubscriptionState, SubscriptionStatus } from '../model.ts';

export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type InvoiceRow = Selectable<SubscriptionInvoicesTable>;
export type NewSubscription = Insertable<SubscriptionsTable>;

const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);

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

export async function loadSubscription(
  db: DbOrTx,
  tenant: Tenant,
  id: string,
  forUpdate = false,
): Promise<SubscriptionRow | null> {
  const where = [
    ['id', '=', id],
    ['mode', '=', tenant.mode],
    ['merchant_id', '=', tenant.merchantId],
  ] as const;
  return rowWhere(db, 'subscriptions', where, forUpdate);
}

/** A subscription by id alone (the customer's signed link names it), any merchant and mode. */
export async function findSubscription(db: DbOrTx, id: string): Promise<SubscriptionRow | null> {
  if (!new RegExp(ID_PATTERNS.sub).test(id)) return null;
  return rowWhere(db, 'subscriptions', [['id', '=', id]]);
}

/** Ids newest first, `limit + 1` of them (the extra one tells whether there is a next page). */
export async function listSubscriptionRows(
  db: DbOrTx,
  tenant: Tenant,
  f: ListFilter,
  limit: number,
): Promise<SubscriptionRow[]> {
  let q = db
    .selectFrom('subscriptions')
    .selectAll()
    .where('merchant_id', '=', tenant.merchantId)
    .where('mode', '=', tenant.mode);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  if (f.customer_email !== undefined) q = q.where(sql`lower(customer_email)`, '=', f.customer_email.toLowerCase());
  if (f.cursor !== undefined) q = q.where('id', '<', decodeCursor(f.cursor, new RegExp(ID_PATTERNS.sub)));
  return q
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

/** Every invoice of the subscriptions, by subscription, period and seq. */
export async function invoicesOf(db: DbOrTx, subscriptionIds: readonly string[]): Promise<InvoiceRow[]> {
  const where = [['subscription_id', 'in', subscriptionIds]] as const;
  return rowsWhere(db, 'subscription_invoices', where, ['subscription_id', 'period', 'seq']);
}

/** The invoices of the payments `paymentIds` (those that are invoices). */
export async function invoicesByPayment(db: DbOrTx, paymentIds: readonly string[]): Promise<InvoiceRow[]> {
  return rowsWhere(db, 'subscription_invoices', [['payment_id', 'in', paymentIds]]);
}

/** The subscriptions `ids`, any merchant and mode (for what already names them: a stored mail's reference). */
export async function subscriptionsByIds(db: DbOrTx, ids: readonly string[]): Promise<SubscriptionRow[]> {
  return rowsWhere(db, 'subscriptions', [['id', 'in', ids]]);
}

/** The invoices the scheduler still has to look at (the latest unpaid one of each open period). */
export async function openInvoicesOf(db: DbOrTx, subscriptionIds: readonly string[]): Promise<InvoiceRow[]> {
  const where = [
    ['subscription_id', 'in', subscriptionIds],
    ['check_at', 'is not', null],
  ] as const;
  return rowsWhere(db, 'subscription_invoices', where, ['period']);
}

export function openInvoice(r: InvoiceRow, paymentStatus: string): OpenInvoice {
  return {
    paymentId: r.payment_id,
    period: r.period,
    seq: r.seq,
    dueAt: r.due_at,
    graceEndsAt: r.grace_ends_at,
    checkAt: r.check_at!,
    paymentStatus,
  };
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
export async function leaseWithdrawals(
  db: DbOrTx,
  now: Date,
  leaseMs: number,
  limit: number,
): Promise<SubscriptionRow[]> {
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

// ---- Writes ----

export async function insertSubscription(tx: Tx, values: NewSubscription): Promise<SubscriptionRow> {
  return tx.insertInto('subscriptions').values(values).returningAll().executeTakeFirstOrThrow();
}

/** Locks the subscription `id` if its scheduler work is due at `wall` (skipping it when another worker holds it). */
export async function lockDue(tx: Tx, id: string, wall: Date): Promise<SubscriptionRow[]> {
  const { rows } = await sql<SubscriptionRow>`
    SELECT * FROM subscriptions WHERE id = ${id} AND run_at <= ${wall} AND status <> 'cancelled' FOR UPDATE SKIP LOCKED`.execute(
    tx,
  );
  return rows;
}

/** Moves the scheduler's next look at a subscription that is not cancelled to `at` (wall clock). */
export async function setRunAt(db: DbOrTx, id: string, at: Date): Promise<void> {
  await updateWhere(db, 'subscriptions', { run_at: at }, [
    ['id', '=', id],
    ['status', '<>', 'cancelled'],
  ]);
}

/** A cancelled subscription whose open payments are withdrawn: the scheduler has nothing more to do for it. */
export async function clearWithdrawal(db: DbOrTx, id: string): Promise<void> {
  await updateWhere(db, 'subscriptions', { run_at: null }, [
    ['id', '=', id],
    ['status', '=', 'cancelled'],
  ]);
}

/** How the subscription's periods are collected from now on. */
export async function setCollection(tx: Tx, id: string, collection: Collection, wall: Date): Promise<void> {
  await tx.updateTable('subscriptions').set({ collection, updated_at: wall }).where('id', '=', id).execute();
}

export async function setClockOffset(tx: Tx, id: string, offsetMs: bigint): Promise<void> {
  await tx.updateTable('subscriptions').set({ clock_offset_ms: offsetMs }).where('id', '=', id).execute();
}

/** Cancels the subscription (final) and clears its invoices' check times; returns the row as it now stands. */
export async function markCancelled(
  tx: Tx,
  id: string,
  at: Date,
  reason: CancellationReason,
  wall: Date,
): Promise<SubscriptionRow> {
  const row = await tx
    .updateTable('subscriptions')
    .set({ status: 'cancelled', cancelled_at: at, cancellation_reason: reason, run_at: wall, updated_at: wall })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await clearChecks(tx, [id]);
  return row;
}

/** The scheduler no longer looks at any invoice of these subscriptions. */
export async function clearChecks(tx: Tx, subscriptionIds: readonly string[]): Promise<void> {
  await updateWhere(tx, 'subscription_invoices', { check_at: null }, [
    ['subscription_id', 'in', subscriptionIds],
    ['check_at', 'is not', null],
  ]);
}

/** The invoice a payment belongs to, if any. */
export async function invoiceOfPayment(tx: Tx, paymentId: string): Promise<InvoiceRow | null> {
  return rowWhere(tx, 'subscription_invoices', [['payment_id', '=', paymentId]]);
}

export async function setInvoicePaid(tx: Tx, paymentId: string, paid: boolean): Promise<void> {
  await tx.updateTable('subscription_invoices').set({ paid }).where('payment_id', '=', paymentId).execute();
}

/** Sets (or with null clears) when the scheduler looks at an invoice's payment again (subscription's clock). */
export async function setInvoiceCheck(tx: Tx, paymentId: string, at: Date | null): Promise<void> {
  await tx.updateTable('subscription_invoices').set({ check_at: at }).where('payment_id', '=', paymentId).execute();
}

/** The period is settled: none of its invoices is looked at again. */
export async function clearPeriodChecks(tx: Tx, subscriptionId: string, period: number): Promise<void> {
  await updateWhere(tx, 'subscription_invoices', { check_at: null }, [
    ['subscription_id', '=', subscriptionId],
    ['period', '=', period],
  ]);
}

/** Whether another payment of the period than `except` is paid. */
export async function periodPaidBy(tx: Tx, subscriptionId: string, period: number, except: string): Promise<boolean> {
  return someRow(tx, 'subscription_invoices', [
    ['subscription_id', '=', subscriptionId],
    ['period', '=', period],
    ['paid', '=', true],
    ['payment_id', '<>', except],
  ]);
}

/** Whether some period of the subscription is still overdue (a fresh payment of it is open). */
export async function hasOverdue(tx: Tx, subscriptionId: string): Promise<boolean> {
  return someRow(tx, 'subscription_invoices', [
    ['subscription_id', '=', subscriptionId],
    ['check_at', 'is not', null],
    ['seq', '>=', 2],
  ]);
}

/** Counts a period paid (`+1`) or un-paid (`-1`), with the status it now has; returns the row as it now stands. */
export async function countPaid(
  tx: Tx,
  id: string,
  delta: 1 | -1,
  status: SubscriptionStatus | null,
  wall: Date,
): Promise<SubscriptionRow> {
  return tx
    .updateTable('subscriptions')
    .set((eb) => ({ periods_paid: eb('periods_paid', '+', delta), ...(status ? { status } : {}), updated_at: wall }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The scheduler's new invoice rows, one statement for the batch. */
export async function insertInvoices(tx: Tx, rows: readonly Omit<InvoiceRow, 'paid'>[]): Promise<void> {
  if (rows.length === 0) return;
  const col = <K extends keyof Omit<InvoiceRow, 'paid'>>(k: K) => rows.map((r) => r[k]);
  const time = (k: 'due_at' | 'grace_ends_at' | 'issued_at' | 'check_at') => rows.map((r) => isoOrNull(r[k]));
  await sql`
    INSERT INTO subscription_invoices (payment_id, subscription_id, period, seq, due_at, grace_ends_at, issued_at, check_at)
    SELECT * FROM unnest(${col('payment_id')}::text[], ${col('subscription_id')}::text[], ${col('period')}::int[], ${col('seq')}::int[],
      ${time('due_at')}::timestamptz[], ${time('grace_ends_at')}::timestamptz[], ${time('issued_at')}::timestamptz[], ${time('check_at')}::timestamptz[])`.execute(
    tx,
  );
}

/** New check times (null: never again) of invoices, by payment id, one statement. */
export async function setInvoiceChecks(tx: Tx, checks: ReadonlyMap<string, Date | null>): Promise<void> {
  if (checks.size === 0) return;
  await sql`
    UPDATE subscription_invoices AS i SET check_at = v.check_at
    FROM unnest(${[...checks.keys()]}::text[], ${[...checks.values()].map(isoOrNull)}::timestamptz[]) AS v(payment_id, check_at)
    WHERE i.payment_id = v.payment_id`.execute(tx);
}

/** The scheduler's state of each subscription of a batch after its plan, one statement. */
export type PlannedState = Pick<
  SubscriptionRow,
  | 'id'
  | 'status'
  | 'next_due_at'
  | 'periods_invoiced'
  | 'last_payment_id'
  | 'cancelled_at'
  | 'cancellation_reason'
  | 'run_at'
>;

export async function writeStates(tx: Tx, states: readonly PlannedState[], wall: Date): Promise<void> {
  if (states.length === 0) return;
  const col = <K extends keyof PlannedState>(k: K) => states.map((s) => s[k]);
  await sql`
    UPDATE subscriptions AS s SET status = v.status, next_due_at = v.next_due_at, periods_invoiced = v.periods_invoiced,
      last_payment_id = v.last_payment_id, cancelled_at = v.cancelled_at, cancellation_reason = v.cancellation_reason,
      run_at = v.run_at, updated_at = ${wall}
    FROM unnest(${col('id')}::text[], ${col('status')}::text[], ${states.map((s) => s.next_due_at.toISOString())}::timestamptz[],
      ${col('periods_invoiced')}::int[], ${col('last_payment_id')}::text[], ${states.map((s) => isoOrNull(s.cancelled_at))}::timestamptz[],
      ${col('cancellation_reason')}::text[], ${states.map((s) => isoOrNull(s.run_at))}::timestamptz[])
      AS v(id, status, next_due_at, periods_invoiced, last_payment_id, cancelled_at, cancellation_reason, run_at)
    WHERE s.id = v.id`.execute(tx);
}
