/** The x402 module's tables (migration 0030): receiving addresses, settlements, running totals. The only code on them. */
import { sql } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Db, DbOrTx, Tx } from '../../db/index.ts';
import type { X402SettlementsTable } from '../../db/schema.ts';
import type { Selectable } from 'kysely';

export type SettlementRow = Selectable<X402SettlementsTable>;

/** The merchant's x402 address on `chain`, if one was allotted. */
export async function payToOf(
  db: DbOrTx,
  merchantId: string,
  mode: Mode,
  chain: string,
): Promise<{ address: string; index: bigint } | null> {
  const row = await db
    .selectFrom('x402_pay_to')
    .select(['address', 'address_index'])
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .executeTakeFirst();
  return row ? { address: row.address, index: BigInt(row.address_index) } : null;
}

/** Stores an allotted address unless one is there already (two processes racing keep the first). */
export async function savePayTo(
  db: Db,
  row: { merchantId: string; mode: Mode; chain: string; index: bigint; address: string; now: Date },
): Promise<void> {
  await db
    .insertInto('x402_pay_to')
    .values({
      merchant_id: row.merchantId,
      mode: row.mode,
      chain: row.chain,
      address_index: row.index,
      address: row.address,
      created_at: row.now,
    })
    .onConflict((oc) => oc.columns(['merchant_id', 'mode', 'chain']).doNothing())
    .execute();
}

/** The settlement of an authorization on a network, if Kasse has one. */
export async function settlementByKey(
  db: DbOrTx,
  mode: Mode,
  chain: string,
  key: string,
): Promise<SettlementRow | undefined> {
  return db
    .selectFrom('x402_settlements')
    .selectAll()
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .where('auth_key', '=', key)
    .executeTakeFirst();
}

/** Claims an authorization for settlement: the new row, or the existing one when another request claimed it first. */
export async function claimSettlement(
  db: Db,
  row: Omit<SettlementRow, 'status' | 'transaction' | 'error' | 'payment_id' | 'settled_at' | 'request'> & {
    request: unknown;
  },
): Promise<{ row: SettlementRow; claimed: boolean }> {
  const inserted = await db
    .insertInto('x402_settlements')
    .values({ ...row, request: JSON.stringify(row.request), status: 'pending' })
    .onConflict((oc) => oc.columns(['mode', 'chain', 'auth_key']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { row: inserted, claimed: true };
  return { row: (await settlementByKey(db, row.mode, row.chain, row.auth_key))!, claimed: false };
}

export async function lockSettlement(tx: Tx, id: string): Promise<SettlementRow | undefined> {
  return tx.selectFrom('x402_settlements').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function getSettlement(db: DbOrTx, id: string): Promise<SettlementRow | undefined> {
  return db.selectFrom('x402_settlements').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function markSettled(
  tx: Tx,
  id: string,
  s: { transaction: string; paymentId: string; now: Date },
): Promise<void> {
  await tx
    .updateTable('x402_settlements')
    .set({ status: 'settled', transaction: s.transaction, payment_id: s.paymentId, settled_at: s.now, error: null })
    .where('id', '=', id)
    .execute();
}

export async function markFailed(
  db: DbOrTx,
  id: string,
  f: { transaction: string | null; error: string; now: Date },
): Promise<void> {
  await db
    .updateTable('x402_settlements')
    .set({ status: 'failed', transaction: f.transaction, error: f.error, settled_at: f.now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** Pending settlements older than `before` (the request that started them is gone), oldest first. */
export async function stalledSettlements(db: DbOrTx, before: Date, limit: number): Promise<SettlementRow[]> {
  return db
    .selectFrom('x402_settlements')
    .selectAll()
    .where('status', '=', 'pending')
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/**
 * Adds `microUsd` to the merchant's running x402 total (row-locked until `tx` ends); answers the total before and
 * after.
 */
export async function addToTotal(
  tx: Tx,
  merchantId: string,
  mode: Mode,
  microUsd: bigint,
): Promise<{ before: bigint; after: bigint }> {
  const { rows } = await sql<{ micro_usd: string }>`
    INSERT INTO x402_totals AS t (merchant_id, mode, micro_usd) VALUES (${merchantId}, ${mode}, ${microUsd.toString()})
    ON CONFLICT (merchant_id, mode) DO UPDATE SET micro_usd = t.micro_usd + excluded.micro_usd
    RETURNING micro_usd`.execute(tx);
  const after = BigInt(rows[0]!.micro_usd);
  return { before: after - microUsd, after };
}
