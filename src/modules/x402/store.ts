/**
 * The x402 module's tables (migrations 0030, 0034): receiving addresses and the retired ones, settlements, running
 * totals. The only code on them but the discovery catalogue's (discovery.ts).
 */
import type { Tenant } from '../../core/tenant.ts';
import { sql, type Selectable } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Db, DbOrTx, Tx } from '../../db/index.ts';
import { ownedBy } from '../../db/owned.ts';
import type { X402SettlementsTable } from './tables.ts';

export type SettlementRow = Selectable<X402SettlementsTable>;

/** NOTIFY channel: a settlement ended (`settled` or `failed`); the payload is its id. */
export const X402_SETTLEMENTS_CHANNEL = 'kasse_x402_settlements';

export interface PayToRow {
  address: string;
  index: bigint;
  derivation: string | null;
}

/** The merchant's x402 address on `chain`, if one was allotted. */
export async function payToOf(db: DbOrTx, tenant: Tenant, chain: string): Promise<PayToRow | null> {
  const row = await ownedBy(db, 'x402_pay_to', tenant)
    .select(['address', 'address_index', 'derivation'])
    .where('chain', '=', chain)
    .executeTakeFirst();
  return row ? { address: row.address, index: BigInt(row.address_index), derivation: row.derivation } : null;
}

/** Stores an allotted address unless one is there already (two processes racing keep the first). */
export async function savePayTo(
  db: Db,
  row: { merchantId: string; mode: Mode; chain: string; index: bigint; address: string; derivation: string; now: Date },
): Promise<void> {
  await db
    .insertInto('x402_pay_to')
    .values({
      merchant_id: row.merchantId,
      mode: row.mode,
      chain: row.chain,
      address_index: row.index,
      address: row.address,
      derivation: row.derivation,
      created_at: row.now,
    })
    .onConflict((oc) => oc.columns(['merchant_id', 'mode', 'chain']).doNothing())
    .execute();
}

/**
 * Puts `address` (derived under `derivation`) in place of the one `was` and retires that one, unless another process
 * did already; one transaction.
 */
export async function replacePayTo(
  db: Db,
  r: { merchantId: string; mode: Mode; chain: string; was: PayToRow; address: string; derivation: string; now: Date },
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const changed = await tx
      .updateTable('x402_pay_to')
      .set({ address: r.address, derivation: r.derivation })
      .where('merchant_id', '=', r.merchantId)
      .where('mode', '=', r.mode)
      .where('chain', '=', r.chain)
      .where('address', '=', r.was.address)
      .executeTakeFirst();
    if (Number(changed.numUpdatedRows) === 0 || r.was.address.toLowerCase() === r.address.toLowerCase()) return;
    await tx
      .insertInto('x402_pay_to_retired')
      .values({
        merchant_id: r.merchantId,
        mode: r.mode,
        chain: r.chain,
        address: r.was.address,
        address_index: r.was.index,
        derivation: r.was.derivation,
        retired_at: r.now,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
  });
}

/** The addresses retired on the merchant's networks of `mode`, newest first. */
export async function retiredPayTo(db: DbOrTx, tenant: Tenant) {
  return ownedBy(db, 'x402_pay_to_retired', tenant)
    .select(['chain', 'address', 'derivation', 'retired_at'])
    .orderBy('retired_at', 'desc')
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

/** The settlement a payment identifier of the merchant names, if any. */
export async function settlementByIdentifier(
  db: DbOrTx,
  tenant: Tenant,
  identifier: string,
): Promise<SettlementRow | undefined> {
  return ownedBy(db, 'x402_settlements', tenant)
    .selectAll()
    .where('payment_identifier', '=', identifier)
    .executeTakeFirst();
}

export type NewSettlement = Omit<
  SettlementRow,
  'status' | 'transaction' | 'error' | 'payment_id' | 'settled_at' | 'request' | 'resume_at' | 'resume_tries'
> & { request: unknown };

/**
 * Claims an authorization for settlement with one INSERT: the new row, or null when the authorization (or the payment
 * identifier) is claimed already, by another request or another process.
 */
export async function claimSettlement(db: Db, row: NewSettlement): Promise<SettlementRow | null> {
  const inserted = await db
    .insertInto('x402_settlements')
    .values({ ...row, request: JSON.stringify(row.request), status: 'pending' })
    .onConflict((oc) => oc.doNothing())
    .returningAll()
    .executeTakeFirst();
  return inserted ?? null;
}

/**
 * Makes `to` the one the settlement's success is answered to, if nobody is yet (or it is `to` already): true when it
 * is `to` now.
 */
export async function takeAnswer(db: DbOrTx, id: string, to: string): Promise<boolean> {
  const { rows } = await sql<{ answered_to: string }>`
    UPDATE x402_settlements SET answered_to = ${to}
    WHERE id = ${id} AND (answered_to IS NULL OR answered_to = ${to})
    RETURNING answered_to`.execute(db);
  return rows.length === 1;
}

/** Gives the answer back (a request that could only answer `settlement_pending`): a later request may take it. */
export async function releaseAnswer(db: DbOrTx, id: string, from: string): Promise<void> {
  await db
    .updateTable('x402_settlements')
    .set({ answered_to: null })
    .where('id', '=', id)
    .where('answered_to', '=', from)
    .execute();
}

/**
 * Notes the transaction a pending settlement waits for (its answer names it, so a client's middleware knows the
 * transfer is on its way and asks again); the row as it is now, or nothing when it is no longer pending.
 */
export async function notePending(db: DbOrTx, id: string, transaction: string): Promise<SettlementRow | undefined> {
  return db
    .updateTable('x402_settlements')
    .set({ transaction })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

export async function getSettlement(db: DbOrTx, id: string): Promise<SettlementRow | undefined> {
  return db.selectFrom('x402_settlements').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * How a pending settlement ends: settled with its payment (in the transaction that recorded it), or failed with its
 * reason (`<code>: <sentence>`).
 */
export type SettlementEnd =
  | { status: 'settled'; transaction: string; paymentId: string }
  | { status: 'failed'; transaction: string | null; error: string };

/**
 * Ends settlement `id` at `now` if it is pending and, in the same statement, announces it (delivered at commit); the
 * row as it is now, or nothing when it was not pending (another request or process ended it first: a settled one's
 * transaction rolls back).
 */
export async function endSettlement(
  db: DbOrTx,
  id: string,
  e: SettlementEnd,
  now: Date,
): Promise<SettlementRow | undefined> {
  const set =
    e.status === 'settled'
      ? { transaction: e.transaction, payment_id: e.paymentId, error: null }
      : { transaction: e.transaction, error: e.error, resume_at: null };
  const update = db
    .updateTable('x402_settlements')
    .set({ ...set, status: e.status, settled_at: now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll();
  const { rows } = await sql<SettlementRow>`
    WITH u AS (${update}) SELECT u.*, pg_notify(${X402_SETTLEMENTS_CHANNEL}, u.id) AS notified FROM u`.execute(db);
  if (!rows[0]) return undefined;
  const { notified: _, ...row } = rows[0] as SettlementRow & { notified: unknown };
  return row;
}

/**
 * Pending settlements older than `before` (the request that started them is over or its process died) whose next
 * look is due at `now`, oldest first.
 */
export async function stalledSettlements(db: DbOrTx, before: Date, now: Date, limit: number): Promise<SettlementRow[]> {
  return db
    .selectFrom('x402_settlements')
    .selectAll()
    .where('status', '=', 'pending')
    .where('created_at', '<', before)
    .where((eb) => eb.or([eb('resume_at', 'is', null), eb('resume_at', '<=', now)]))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** A pending settlement whose resumption failed for a passing reason: looked at again at `at`. */
export async function resumeLater(db: DbOrTx, id: string, at: Date): Promise<void> {
  await db
    .updateTable('x402_settlements')
    .set((eb) => ({ resume_at: at, resume_tries: eb('resume_tries', '+', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** The merchant's settlements of `mode`, newest first, optionally of one status. */
export async function listSettlements(
  db: DbOrTx,
  tenant: Tenant,
  q: { status?: SettlementRow['status']; limit: number },
): Promise<SettlementRow[]> {
  let query = ownedBy(db, 'x402_settlements', tenant).selectAll();
  if (q.status) query = query.where('status', '=', q.status);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).execute();
}

/**
 * Adds `microUsd` to the merchant's running x402 total (row-locked until `tx` ends); answers the total before and
 * after.
 */
export async function addToTotal(tx: Tx, tenant: Tenant, microUsd: bigint): Promise<{ before: bigint; after: bigint }> {
  const { mode, merchantId } = tenant;
  const { rows } = await sql<{ micro_usd: string }>`
    INSERT INTO x402_totals AS t (merchant_id, mode, micro_usd) VALUES (${merchantId}, ${mode}, ${microUsd.toString()})
    ON CONFLICT (merchant_id, mode) DO UPDATE SET micro_usd = t.micro_usd + excluded.micro_usd
    RETURNING micro_usd`.execute(tx);
  const after = BigInt(rows[0]!.micro_usd);
  return { before: after - microUsd, after };
}

/** The merchant whose x402 address `address` is in `mode`, if any (hex addresses in any case, others exactly). */
export async function merchantOfPayTo(db: DbOrTx, mode: Mode, address: string): Promise<string | null> {
  const rows = await db
    .selectFrom('x402_pay_to')
    .select(['merchant_id', 'address'])
    .where('mode', '=', mode)
    .where(sql<string>`lower(address)`, '=', address.toLowerCase())
    .execute();
  const hex = address.startsWith('0x');
  return rows.find((r) => (hex ? true : r.address === address))?.merchant_id ?? null;
}
