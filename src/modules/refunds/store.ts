/**
 * The refunds store, the only code on the `refunds` table: a payment's open, sent and listed refunds, recording one,
 * and locking and settling it.
 */
import type { Insertable, Selectable } from 'kysely';
import { newId } from '../../core/ids.ts';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';
import { lockById, settleOutbound, type OutboundSettled } from '../../db/rows.ts';
import { ownedBy, rowInMode } from '../../db/owned.ts';
import type { RefundsTable } from './tables.ts';

export type RefundRow = Selectable<RefundsTable>;

/** The payment's refund that has not failed, if any (a payment has at most one at a time). */
export async function openRefund(db: DbOrTx, paymentId: string): Promise<Pick<RefundRow, 'status'> | undefined> {
  return db
    .selectFrom('refunds')
    .select('status')
    .where('payment_id', '=', paymentId)
    .where('status', '<>', 'failed')
    .executeTakeFirst();
}

/** Whether a refund of the payment is asked for and not yet settled (`pending`). */
export async function refundOpen(db: DbOrTx, paymentId: string): Promise<boolean> {
  const row = await db
    .selectFrom('refunds')
    .select('id')
    .where('payment_id', '=', paymentId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertRefund(tx: Tx, values: Omit<Insertable<RefundsTable>, 'id'>): Promise<RefundRow> {
  return tx
    .insertInto('refunds')
    .values({ id: newId('rfd'), ...values })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The tenant's refunds of the payment, oldest first. */
export async function paymentRefunds(db: DbOrTx, tenant: Tenant, paymentId: string): Promise<RefundRow[]> {
  return ownedBy(db, 'refunds', tenant)
    .selectAll()
    .where('payment_id', '=', paymentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The coins sent back by the payment's refunds that were sent. */
export async function sentRefunds(
  db: DbOrTx,
  paymentId: string,
): Promise<Array<Pick<RefundRow, 'attempt_id' | 'token' | 'amount'>>> {
  return db
    .selectFrom('refunds')
    .select(['attempt_id', 'token', 'amount'])
    .where('payment_id', '=', paymentId)
    .where('status', '=', 'sent')
    .execute();
}

/** A refund of `mode` by id (not locked). */
export const refundById = (db: DbOrTx, mode: Mode, refundId: string) => rowInMode(db, 'refunds', mode, refundId);

/** Locks a refund row (its payment is locked first). */
export const lockRefund = (tx: Tx, refundId: string) => lockById(tx, 'refunds', refundId);

/** Records how a refund's transfer ended. */
export const settleRefund = (tx: Tx, refundId: string, set: OutboundSettled) =>
  settleOutbound(tx, 'refunds', refundId, set);
