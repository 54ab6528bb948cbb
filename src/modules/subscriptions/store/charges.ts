/**
 * The store of charged subscriptions: the only code that reads or writes `subscription_receivers`,
 * `subscription_grants` and `subscription_charges`. Every lookup a merchant's request makes takes its tenant; the
 * workers' claims take due rows with `FOR UPDATE SKIP LOCKED` and lease them (`locked_until`), so processes share
 * them and a process that dies gives them back when the lease ends.
 */
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Tenant } from '../../../core/tenant.ts';
import type { DbOrTx, Tx } from '../../../db/index.ts';
import { rowsWhere, rowWhere, updateWhere } from '../../../db/rows.ts';
import type { ChargeFailureReason, ChargeRowStatus, GrantRowStatus } from '../model.ts';
import type { SubscriptionChargesTable, SubscriptionGrantsTable } from '../tables.ts';

export type GrantRow = Selectable<SubscriptionGrantsTable>;
export type ChargeRow = Selectable<SubscriptionChargesTable>;
export type NewGrant = Insertable<SubscriptionGrantsTable>;
export type NewCharge = Insertable<SubscriptionChargesTable>;

// ---- Receivers ----

export async function receiverOf(
  db: DbOrTx,
  t: Tenant,
  chain: string,
): Promise<{ address: string; index: bigint } | null> {
  const row = await rowWhere(db, 'subscription_receivers', [
    ['merchant_id', '=', t.merchantId],
    ['mode', '=', t.mode],
    ['chain', '=', chain],
  ]);
  return row ? { address: row.address, index: BigInt(row.address_index) } : null;
}

/** Keeps the merchant's first receiver on `chain` (two processes racing keep the first row). */
export async function saveReceiver(
  db: DbOrTx,
  t: Tenant,
  chain: string,
  address: string,
  index: bigint,
  now: Date,
): Promise<void> {
  await db
    .insertInto('subscription_receivers')
    .values({ merchant_id: t.merchantId, mode: t.mode, chain, address, address_index: index, created_at: now })
    .onConflict((oc) => oc.columns(['merchant_id', 'mode', 'chain']).doNothing())
    .execute();
}

// ---- Grants ----

export async function insertGrant(tx: Tx, row: NewGrant): Promise<GrantRow> {
  return tx.insertInto('subscription_grants').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The grant in force or on its way of each subscription (at most one each). */
export async function currentGrants(db: DbOrTx, subscriptionIds: readonly string[]): Promise<Map<string, GrantRow>> {
  const rows = await rowsWhere(db, 'subscription_grants', [
    ['subscription_id', 'in', subscriptionIds],
    ['status', 'in', ['pending', 'active']],
  ]);
  return new Map(rows.map((r) => [r.subscription_id, r]));
}

/** Every grant of the subscriptions, oldest first. */
export async function grantsOf(db: DbOrTx, subscriptionIds: readonly string[]): Promise<GrantRow[]> {
  return rowsWhere(db, 'subscription_grants', [['subscription_id', 'in', subscriptionIds]], ['created_at', 'id']);
}

export async function grantById(db: DbOrTx, id: string, forUpdate = false): Promise<GrantRow | null> {
  return rowWhere(db, 'subscription_grants', [['id', '=', id]], forUpdate);
}

/** How many grants the subscription has had (any state): a new grant's terms differ by this. */
export async function grantCount(db: DbOrTx, subscriptionId: string): Promise<number> {
  const r = await db
    .selectFrom('subscription_grants')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('subscription_id', '=', subscriptionId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Grants whose relay is on its way, oldest first (their transitions are guarded: any worker may follow them). */
export async function pendingGrants(db: DbOrTx, limit: number): Promise<GrantRow[]> {
  return db
    .selectFrom('subscription_grants')
    .selectAll()
    .where('status', '=', 'pending')
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** Moves a grant that is still `from` to `to` (with its times and error); false when it had moved on. */
export async function setGrantStatus(
  tx: Tx,
  id: string,
  from: readonly GrantRowStatus[],
  to: GrantRowStatus,
  now: Date,
  extra: { error?: string | null; revokeTransfer?: string | null } = {},
): Promise<GrantRow | null> {
  const row = await tx
    .updateTable('subscription_grants')
    .set({
      status: to,
      updated_at: now,
      ...(to === 'active' ? { granted_at: now } : {}),
      ...(to === 'revoked' || to === 'exhausted' ? { ended_at: now } : {}),
      ...(extra.error !== undefined ? { error: extra.error } : {}),
      ...(extra.revokeTransfer !== undefined ? { revoke_transfer: extra.revokeTransfer } : {}),
    })
    .where('id', '=', id)
    .where('status', 'in', from as GrantRowStatus[])
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/** A simulated grant's wallet holds enough again, or no longer. */
export async function setFunded(tx: Tx, id: string, funded: boolean, now: Date): Promise<void> {
  await tx.updateTable('subscription_grants').set({ funded, updated_at: now }).where('id', '=', id).execute();
}

/** Adds a charge that landed to its grant's count and total. */
export async function countCharge(tx: Tx, id: string, amount: bigint, now: Date): Promise<void> {
  await tx
    .updateTable('subscription_grants')
    .set((eb) => ({
      charges: eb('charges', '+', 1),
      charged: sql`charged + ${amount.toString()}::numeric`,
      updated_at: now,
    }))
    .where('id', '=', id)
    .execute();
}

// ---- Charges ----

export async function insertCharges(tx: Tx, rows: readonly NewCharge[]): Promise<void> {
  if (rows.length === 0) return;
  await tx
    .insertInto('subscription_charges')
    .values(rows as NewCharge[])
    .execute();
}

/** Every charge attempt of the subscriptions, oldest first. */
export async function chargesOf(db: DbOrTx, subscriptionIds: readonly string[]): Promise<ChargeRow[]> {
  return rowsWhere(db, 'subscription_charges', [['subscription_id', 'in', subscriptionIds]], ['created_at', 'id']);
}

export async function chargeById(db: DbOrTx, id: string, forUpdate = false): Promise<ChargeRow | null> {
  return rowWhere(db, 'subscription_charges', [['id', '=', id]], forUpdate);
}

/**
 * Leases up to `limit` charges to submit or follow that are due on their subscription's clock at wall-clock `wall`
 * (only those of `subscriptionId` when given): their lease moves `leaseMs` ahead, so another worker takes them only
 * after this one died.
 */
export async function leaseDueCharges(
  db: DbOrTx,
  wall: Date,
  leaseMs: number,
  limit: number,
  subscriptionId?: string,
): Promise<ChargeRow[]> {
  const only = subscriptionId === undefined ? sql`` : sql`AND c.subscription_id = ${subscriptionId}`;
  const { rows } = await sql<ChargeRow>`
    UPDATE subscription_charges SET locked_until = ${new Date(wall.getTime() + leaseMs)}
    WHERE id IN (
      SELECT c.id FROM subscription_charges c JOIN subscriptions s ON s.id = c.subscription_id
      WHERE c.status IN ('scheduled', 'submitted')
        AND c.due_at <= ${wall}::timestamptz + s.clock_offset_ms * interval '1 millisecond'
        AND (c.locked_until IS NULL OR c.locked_until <= ${wall}) ${only}
      ORDER BY c.due_at LIMIT ${limit} FOR UPDATE OF c SKIP LOCKED
    )
    RETURNING *`.execute(db);
  return rows;
}

/** Gives a leased charge back (its lease ends now). */
export async function releaseCharge(db: DbOrTx, id: string): Promise<void> {
  await db.updateTable('subscription_charges').set({ locked_until: null }).where('id', '=', id).execute();
}

/** A charge still `scheduled` or `submitted` is looked at again at `at` (subscription clock). */
export async function chargeLater(db: DbOrTx, id: string, at: Date): Promise<void> {
  await updateWhere(db, 'subscription_charges', { due_at: at, locked_until: null }, [
    ['id', '=', id],
    ['status', 'in', ['scheduled', 'submitted']],
  ]);
}

/** scheduled → submitted; false when it was no longer scheduled (another worker submitted or cancelled it). */
export async function markSubmitted(tx: Tx, id: string, wall: Date, dueAt: Date): Promise<boolean> {
  return moveCharge(tx, id, 'scheduled', { status: 'submitted', submitted_at: wall, due_at: dueAt });
}

/** Writes `set` on the charge if it is still `from`; false when it had moved on. */
async function moveCharge(
  tx: Tx,
  id: string,
  from: ChargeRowStatus,
  set: Updateable<SubscriptionChargesTable>,
): Promise<boolean> {
  const changed = await updateWhere(tx, 'subscription_charges', set, [
    ['id', '=', id],
    ['status', '=', from],
  ]);
  return changed > 0;
}

/** submitted → succeeded with its payment and transaction; false when it had settled already. */
export async function markSucceeded(
  tx: Tx,
  id: string,
  paymentId: string,
  txHash: string,
  wall: Date,
): Promise<boolean> {
  return moveCharge(tx, id, 'submitted', {
    status: 'succeeded',
    payment_id: paymentId,
    tx_hash: txHash,
    settled_at: wall,
    locked_until: null,
  });
}

/** A charge still `from` fails with its reason; false when it had moved on. */
export async function markFailed(
  tx: Tx,
  id: string,
  from: 'scheduled' | 'submitted',
  reason: ChargeFailureReason,
  message: string,
  txHash: string | null,
  wall: Date,
): Promise<boolean> {
  return moveCharge(tx, id, from, {
    status: 'failed',
    failure_reason: reason,
    failure_message: message,
    tx_hash: txHash,
    settled_at: wall,
    locked_until: null,
  });
}

/** Scheduled charges that will not be attempted (of a grant, or a subscription, or one charge), with why: those. */
export async function cancelScheduled(
  tx: Tx,
  where: { grantId?: string; subscriptionId?: string; chargeId?: string },
  message: string,
  wall: Date,
): Promise<ChargeRow[]> {
  let q = tx
    .updateTable('subscription_charges')
    .set({ status: 'cancelled', failure_message: message, settled_at: wall, locked_until: null })
    .where('status', '=', 'scheduled');
  if (where.grantId !== undefined) q = q.where('grant_id', '=', where.grantId);
  if (where.subscriptionId !== undefined) q = q.where('subscription_id', '=', where.subscriptionId);
  if (where.chargeId !== undefined) q = q.where('id', '=', where.chargeId);
  return q.returningAll().execute();
}

/** The grant's charges handed to the transfer queue and not settled yet, locked. */
export async function submittedCharges(tx: Tx, grantId: string): Promise<ChargeRow[]> {
  return tx
    .selectFrom('subscription_charges')
    .selectAll()
    .where('grant_id', '=', grantId)
    .where('status', '=', 'submitted')
    .orderBy('id')
    .forUpdate()
    .execute();
}

/** The attempts of one period of a subscription so far. */
export async function periodCharges(db: DbOrTx, subscriptionId: string, period: number): Promise<ChargeRow[]> {
  return rowsWhere(
    db,
    'subscription_charges',
    [
      ['subscription_id', '=', subscriptionId],
      ['period', '=', period],
    ],
    ['attempt'],
  );
}

/** The earliest due time (subscription clock) of the subscription's charges still to submit, or null. */
export async function nextChargeDue(db: DbOrTx, subscriptionId: string): Promise<Date | null> {
  const r = await db
    .selectFrom('subscription_charges')
    .select((eb) => eb.fn.min('due_at').as('at'))
    .where('subscription_id', '=', subscriptionId)
    .where('status', '=', 'scheduled')
    .executeTakeFirst();
  return (r?.at as Date | null | undefined) ?? null;
}
