/**
 * What other modules need from a merchant's row, in the caller's transaction when it holds one: the fee, the display
 * name, the underpayment tolerance, the default webhook URL of a mode, the disbursement quorum, and the row lock that serializes a merchant's
 * balance-changing work. The merchants module is the only code on its tables; others ask here.
 */
import type { Tenant } from '../../core/tenant.ts';
import { notFound } from '../../core/errors.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';

/** The merchant's own fee in basis points; null when it has none (the operator's default applies) or no such merchant. */
export async function merchantFeeBps(db: DbOrTx, merchantId: string): Promise<number | null> {
  const row = await db.selectFrom('merchants').select('fee_bps').where('id', '=', merchantId).executeTakeFirst();
  return row?.fee_bps ?? null;
}

/** The merchant's underpayment tolerance in basis points (0 when there is no such merchant). */
export async function underpaymentToleranceBps(db: DbOrTx, merchantId: string): Promise<number> {
  const row = await db
    .selectFrom('merchants')
    .select('underpayment_tolerance_bps')
    .where('id', '=', merchantId)
    .executeTakeFirst();
  return row?.underpayment_tolerance_bps ?? 0;
}

/** The merchant's display name (what payers and wallets see as the payee); null when there is no such merchant. */
export async function merchantName(db: DbOrTx, merchantId: string): Promise<string | null> {
  const row = await db.selectFrom('merchants').select('name').where('id', '=', merchantId).executeTakeFirst();
  return row?.name ?? null;
}

/** The merchant's default webhook URL for `mode` (null when none is set). 404 for no merchant. */
export async function defaultWebhookUrl(db: DbOrTx, tenant: Tenant): Promise<string | null> {
  const { mode, merchantId } = tenant;
  const row = await db
    .selectFrom('merchants')
    .select(['webhook_url_test', 'webhook_url_live'])
    .where('id', '=', merchantId)
    .executeTakeFirst();
  if (!row) throw notFound('merchant');
  return mode === 'live' ? row.webhook_url_live : row.webhook_url_test;
}

/** How many owners must approve a disbursement (null: not fixed, every owner). 404 for no merchant. */
export async function approvalsRequired(db: DbOrTx, merchantId: string): Promise<number | null> {
  const row = await db
    .selectFrom('merchants')
    .select('approvals_required')
    .where('id', '=', merchantId)
    .executeTakeFirst();
  if (!row) throw notFound('merchant');
  return row.approvals_required;
}

/** Locks the merchant's row until `tx` ends: one such transaction at a time per merchant. 404 for no merchant. */
export async function lockMerchant(tx: Tx, merchantId: string): Promise<void> {
  const row = await tx.selectFrom('merchants').select('id').where('id', '=', merchantId).forUpdate().executeTakeFirst();
  if (!row) throw notFound('merchant');
}
