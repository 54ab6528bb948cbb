/**
 * Deposits, as chain watchers and the simulator report them: the issued addresses, storing a transfer on its
 * attempt, recounting confirmations (depth or commitment finality) and marking the payments to run again, orphaning
 * deposits on a reorg or a drop, and the funded addresses a family sweeps.
 */
import { sql, type RawBuilder } from 'kysely';
import { newId } from '../../../core/ids.ts';
import type { Mode } from '../../../core/mode.ts';
import type { DbOrTx, Tx } from '../../../db/index.ts';
import type { AttemptRow, DepositRow, Loaded } from './payments.ts';

/** The issued deposit addresses among `addresses` (compared in lower case), each mapped to its issued spelling. */
export async function issuedAddresses(
  db: DbOrTx,
  mode: Mode,
  chain: string,
  addresses: string[],
): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom('attempts')
    .select('address')
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .where(sql<boolean>`NOT external`)
    .where(sql<string>`lower(address)`, 'in', [...new Set(addresses.map((a) => a.toLowerCase()))])
    .execute();
  return new Map(rows.map((r) => [r.address.toLowerCase(), r.address]));
}

/** Whether any coin choice Kasse issued on `chain` is waiting for its money and not expired at `now`. */
export async function anyWaitingAttempt(db: DbOrTx, mode: Mode, chain: string, now: Date): Promise<boolean> {
  const row = await db
    .selectFrom('attempts')
    .select(sql<number>`1`.as('one'))
    .where('status', '=', 'waiting')
    .where('expires_at', '>', now)
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .where(sql<boolean>`NOT external`)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** The attempts that issued any of `addresses` (compared in lower case). */
export async function attemptsByAddress(
  db: DbOrTx,
  mode: Mode,
  chain: string,
  addresses: string[],
): Promise<AttemptRow[]> {
  return db
    .selectFrom('attempts')
    .selectAll()
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .where(sql<boolean>`NOT external`)
    .where(sql<string>`lower(address)`, 'in', [...new Set(addresses.map((a) => a.toLowerCase()))])
    .execute();
}

/** A transfer to be stored on an attempt: a watcher observation, or a simulated one (no block). */
export interface NewDeposit {
  token: string;
  txHash: string;
  index: number;
  amount: bigint;
  from: string | null;
  /** Null while the transfer is in no block yet (seen in the mempool) and for simulated deposits. */
  blockNumber: bigint | null;
  blockHash: string | null;
  status?: 'pending' | 'confirmed';
  confirmations?: number;
  seenAt?: Date;
}

/**
 * Stores one transfer on `attempt` inside the caller's transaction (the payment is locked). Idempotent on
 * (mode, chain, tx hash, index): a transfer seen again in a block takes that block (a mempool sighting moves into
 * its block; one seen again after its block was orphaned is revived as pending, in its new block or in the mempool).
 * Seen again without a block, a transfer recorded in one keeps it.
 */
export async function upsertDeposit(
  tx: Tx,
  attempt: AttemptRow,
  d: NewDeposit,
  fixed: { valueCents: bigint | null; atLeastMin: boolean; now: Date },
): Promise<DepositRow> {
  return tx
    .insertInto('deposits')
    .values({
      id: newId('dep'),
      attempt_id: attempt.id,
      payment_id: attempt.payment_id,
      mode: attempt.mode,
      chain: attempt.chain,
      token: d.token,
      tx_hash: d.txHash,
      log_index: d.index,
      amount: d.amount.toString(),
      from_address: d.from,
      block_number: d.blockNumber,
      block_hash: d.blockHash,
      status: d.status ?? 'pending',
      confirmations: d.confirmations ?? 0,
      confirmations_required: attempt.confirmations_required,
      value_cents: fixed.valueCents,
      at_least_min: fixed.atLeastMin,
      seen_at: d.seenAt ?? fixed.now,
      created_at: fixed.now,
    })
    .onConflict((oc) =>
      oc.columns(['mode', 'chain', 'tx_hash', 'log_index']).doUpdateSet({
        // Only the watcher's block-following takes a deposit out of its block (`orphanDeposits`): a sighting without
        // a block (the mempool, a lagging node) leaves the block where it is, so a reorg still finds it there.
        block_number: sql`CASE WHEN excluded.block_number IS NULL AND deposits.status <> 'orphaned'
          THEN deposits.block_number ELSE excluded.block_number END`,
        block_hash: sql`CASE WHEN excluded.block_number IS NULL AND deposits.status <> 'orphaned'
          THEN deposits.block_hash ELSE excluded.block_hash END`,
        status: sql`CASE WHEN deposits.status = 'orphaned' THEN 'pending' ELSE deposits.status END`,
      }),
    )
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** `l` with `rows` (new or changed deposits of the payment) in place, in the order they were seen. */
export function withDeposits(l: Loaded, rows: DepositRow[]): Loaded {
  if (rows.length === 0) return l;
  const byId = new Map(l.deposits.map((d) => [d.id, d]));
  for (const r of rows) byId.set(r.id, r);
  const deposits = [...byId.values()].sort(
    (a, b) => a.seen_at.getTime() - b.seen_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  return { ...l, deposits };
}

/**
 * Depth finality: one statement recounts the confirmations of every open deposit on the chain that has a block, and
 * marks (`deposits_dirty`) the payments where a deposit changed status or started counting confirmations. The mark
 * is durable: a crash before the state machine ran leaves it for the next pass.
 */
export async function recountConfirmations(
  db: DbOrTx,
  mode: Mode,
  chain: string,
  head: bigint,
  finality: number,
): Promise<void> {
  const h = head.toString();
  await sql`
    WITH cur AS (
      SELECT id, status, confirmations FROM deposits
      WHERE mode = ${mode} AND chain = ${chain} AND status IN ('pending', 'confirmed')
        AND block_number IS NOT NULL AND block_number <= ${h}::bigint
        AND confirmations <> (${h}::bigint - block_number + 1)::int
      FOR UPDATE
    ), upd AS (
      UPDATE deposits d SET
        confirmations = (${h}::bigint - d.block_number + 1)::int,
        status = CASE WHEN (${h}::bigint - d.block_number + 1) >= ${finality} THEN 'final'
                      WHEN (${h}::bigint - d.block_number + 1) >= d.confirmations_required THEN 'confirmed'
                      ELSE 'pending' END
      FROM cur WHERE d.id = cur.id
      RETURNING d.payment_id, d.status AS new_status, cur.status AS old_status, cur.confirmations AS old_confirmations
    )
    UPDATE payments SET deposits_dirty = true
    WHERE id IN (SELECT payment_id FROM upd WHERE new_status <> old_status OR old_confirmations = 0)`.execute(db);
}

/** A transfer named by the chain: its transaction and its position in it. */
export interface TransferKey {
  txHash: string;
  index: number;
}

const keyCondition = (keys: TransferKey[]): RawBuilder<boolean> =>
  sql<boolean>`(tx_hash, log_index) IN (${sql.join(keys.map((k) => sql`(${k.txHash}, ${k.index})`))})`;

/**
 * Commitment finality: sets the confirmations (and `final`) of the named open deposits as the chain reports them,
 * and marks the payments where a deposit changed status or started counting confirmations.
 */
export async function setConfirmations(
  db: DbOrTx,
  mode: Mode,
  chain: string,
  updates: Array<TransferKey & { confirmations: number; final: boolean }>,
): Promise<void> {
  if (updates.length === 0) return;
  const values = sql.join(
    updates.map((u) => sql`(${u.txHash}::text, ${u.index}::int, ${u.confirmations}::int, ${u.final}::boolean)`),
  );
  await sql`
    WITH v (tx_hash, log_index, confirmations, final) AS (VALUES ${values}),
    cur AS (
      SELECT d.id, d.status, d.confirmations, v.confirmations AS c, v.final FROM deposits d
      JOIN v ON v.tx_hash = d.tx_hash AND v.log_index = d.log_index
      WHERE d.mode = ${mode} AND d.chain = ${chain} AND d.status IN ('pending', 'confirmed')
      FOR UPDATE OF d
    ), upd AS (
      UPDATE deposits d SET
        confirmations = cur.c,
        status = CASE WHEN cur.final THEN 'final' WHEN cur.c >= d.confirmations_required THEN 'confirmed' ELSE 'pending' END
      FROM cur WHERE d.id = cur.id
      RETURNING d.payment_id, d.status AS new_status, cur.status AS old_status, cur.confirmations AS old_confirmations
    )
    UPDATE payments SET deposits_dirty = true
    WHERE id IN (SELECT payment_id FROM upd WHERE new_status <> old_status OR old_confirmations = 0)`.execute(db);
}

/** Payments marked by a recount, not yet run through the state machine. */
export async function markedPayments(db: DbOrTx, mode?: Mode): Promise<Array<{ id: string; mode: Mode }>> {
  let q = db.selectFrom('payments').select(['id', 'mode']).where('deposits_dirty', '=', true);
  if (mode) q = q.where('mode', '=', mode);
  return q.orderBy('id').execute();
}

export async function clearMark(tx: Tx, paymentId: string): Promise<void> {
  await tx.updateTable('payments').set({ deposits_dirty: false }).where('id', '=', paymentId).execute();
}

/** Which open deposits on the chain a reorg or a drop touches. */
export type DepositSelection = { fromBlock: bigint } | { keys: TransferKey[] };

function selected(s: DepositSelection): RawBuilder<boolean> {
  if ('fromBlock' in s)
    return sql<boolean>`status IN ('pending', 'confirmed') AND block_number >= ${s.fromBlock.toString()}::bigint`;
  return sql<boolean>`status IN ('pending', 'confirmed') AND ${keyCondition(s.keys)}`;
}

/** Payments with an open deposit on the chain in the selection. */
export async function paymentsWithDeposits(
  db: DbOrTx,
  mode: Mode,
  chain: string,
  s: DepositSelection,
): Promise<string[]> {
  if ('keys' in s && s.keys.length === 0) return [];
  const rows = await db
    .selectFrom('deposits')
    .select('payment_id')
    .distinct()
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .where(selected(s))
    .execute();
  return rows.map((r) => r.payment_id);
}

/**
 * Marks the locked payment's open deposits in the selection `orphaned` (their block left the chain, or they were
 * dropped); returns the payment with them changed.
 */
export async function orphanDeposits(tx: Tx, l: Loaded, chain: string, s: DepositSelection): Promise<Loaded> {
  const rows = await tx
    .updateTable('deposits')
    .set({ status: 'orphaned', confirmations: 0 })
    .where('payment_id', '=', l.row.id)
    .where('chain', '=', chain)
    .where(selected(s))
    .returningAll()
    .execute();
  return withDeposits(l, rows);
}

/**
 * Deposit addresses of `chain` holding confirmed or final money in blocks, with their derivation index and the
 * highest such block (addresses in lower case), in index order.
 */
export async function fundedAddresses(
  db: DbOrTx,
  mode: Mode,
  chain: string,
): Promise<Array<{ address: string; index: bigint; lastBlock: bigint }>> {
  const { rows } = await sql<{ address: string; address_index: bigint; last_block: bigint }>`
    SELECT lower(a.address) AS address, a.address_index, max(d.block_number) AS last_block
    FROM deposits d JOIN attempts a ON a.id = d.attempt_id
    WHERE d.mode = ${mode} AND d.chain = ${chain} AND d.status IN ('confirmed', 'final') AND d.block_number IS NOT NULL
    GROUP BY 1, 2
    ORDER BY a.address_index`.execute(db);
  return rows.map((r) => ({ address: r.address, index: BigInt(r.address_index), lastBlock: BigInt(r.last_block) }));
}
