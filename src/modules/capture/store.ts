/**
 * The capture module's store, the only code on `holds` and `hold_operations`: recording a hold and its operations,
 * locking and settling them, the holds due at their deadline, and the captures a statement counts.
 */
import { sql, type Insertable, type Selectable } from 'kysely';
import type { Tenant } from '../../core/tenant.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';
import { lockById, settleOutbound, type OutboundSettled } from '../../db/rows.ts';
import { ownedBy, rowInMode } from '../../db/owned.ts';
import type { Mode } from '../../core/mode.ts';
import type { HoldOperationsTable, HoldsTable } from './tables.ts';

export type HoldRow = Selectable<HoldsTable>;
export type OperationRow = Selectable<HoldOperationsTable>;

export async function insertHold(tx: Tx, values: Insertable<HoldsTable>): Promise<HoldRow> {
  return tx.insertInto('holds').values(values).returningAll().executeTakeFirstOrThrow();
}

/** The payment's hold that has not failed (a payment has at most one), locked when `lock`. */
export async function paymentHold(db: DbOrTx, paymentId: string, lock = false): Promise<HoldRow | undefined> {
  const q = db.selectFrom('holds').selectAll().where('payment_id', '=', paymentId).where('status', '<>', 'failed');
  return lock ? q.forUpdate().executeTakeFirst() : q.executeTakeFirst();
}

/** A hold of `mode` by id (not locked). */
export const holdById = (db: DbOrTx, mode: Mode, id: string) => rowInMode(db, 'holds', mode, id);

/** Locks a hold row (its payment is locked first). */
export const lockHold = (tx: Tx, id: string) => lockById(tx, 'holds', id);

export async function updateHold(
  tx: Tx,
  id: string,
  set: Partial<
    Pick<HoldRow, 'status' | 'released_by' | 'error' | 'authorized_at' | 'released_at'> & { captured: string }
  >,
): Promise<void> {
  await tx.updateTable('holds').set(set).where('id', '=', id).execute();
}

export async function insertOperation(tx: Tx, values: Insertable<HoldOperationsTable>): Promise<OperationRow> {
  return tx.insertInto('hold_operations').values(values).returningAll().executeTakeFirstOrThrow();
}

/** A hold's operations, oldest first. */
export async function holdOperations(db: DbOrTx, holdId: string): Promise<OperationRow[]> {
  return db
    .selectFrom('hold_operations')
    .selectAll()
    .where('hold_id', '=', holdId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** An operation of `mode` by id (not locked). */
export const operationById = (db: DbOrTx, mode: Mode, id: string) => rowInMode(db, 'hold_operations', mode, id);

/** Locks an operation row (its payment is locked first). */
export const lockOperation = (tx: Tx, id: string) => lockById(tx, 'hold_operations', id);

/** Records how an operation's transfer ended. */
export const settleOperation = (tx: Tx, id: string, set: OutboundSettled) =>
  settleOutbound(tx, 'hold_operations', id, set);

/** Where a pass over due holds stands: the last hold it looked at (holds are read in deadline, then id, order). */
export type DueCursor = Pick<HoldRow, 'capture_before' | 'id'>;

/**
 * Holds locked in escrow whose capture deadline is reached and that have no void in flight: the due work voids them,
 * or finds them reclaimed by the payer. Oldest deadline first, after `after` when given.
 */
export async function dueHolds(db: DbOrTx, now: Date, limit: number, after?: DueCursor): Promise<HoldRow[]> {
  return db
    .selectFrom('holds as h')
    .selectAll('h')
    .where('h.status', '=', 'authorized')
    .where('h.capture_before', '<=', now)
    .$if(after !== undefined, (q) =>
      q.where(({ eb, refTuple, tuple }) =>
        eb(refTuple('h.capture_before', 'h.id'), '>', tuple(after!.capture_before, after!.id)),
      ),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('hold_operations as o')
            .select(sql`1`.as('one'))
            .whereRef('o.hold_id', '=', 'h.id')
            .where('o.kind', '=', 'void')
            .where('o.status', '=', 'pending'),
        ),
      ),
    )
    .orderBy('h.capture_before')
    .orderBy('h.id')
    .limit(limit)
    .execute();
}

/** Ids of a merchant's payments whose holds are locked in escrow, nearest deadline first (the dashboard's list). */
export async function authorizedHoldPayments(db: DbOrTx, tenant: Tenant, limit: number): Promise<string[]> {
  const rows = await ownedBy(db, 'holds', tenant)
    .select('payment_id')
    .where('status', '=', 'authorized')
    .orderBy('capture_before')
    .limit(limit)
    .execute();
  return rows.map((r) => r.payment_id);
}

/** US cents of a merchant's captures settled in [from, to): the statements' reconciliation counts them. */
export async function capturedCents(db: DbOrTx, tenant: Tenant, from: Date, to: Date): Promise<bigint> {
  const row = await ownedBy(db, 'hold_operations', tenant)
    .select(sql<string>`coalesce(sum(amount_cents), 0)::text`.as('sum'))
    .where('kind', '=', 'capture')
    .where('status', '=', 'sent')
    .where('settled_at', '>=', from)
    .where('settled_at', '<', to)
    .executeTakeFirstOrThrow();
  return BigInt(row.sum);
}
