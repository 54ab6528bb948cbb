/**
 * The payments store: the only code that reads or writes the payment tables (`payments`, `attempts`, `deposits`,
 * `refunds`). Loading a payment with its attempts and deposits (optionally locked), mapping rows to the state
 * machine's `PaymentState` and back, and every other statement the module's services, its ports and its workers
 * need, each behind a named function. Every lookup takes the mode, and the merchant wherever the caller acts for
 * one, so test objects never show on the live API and the reverse.
 */
import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import { decodeCursor } from '../../core/cursor.ts';
import { ID_PATTERNS, newId } from '../../core/ids.ts';
import type { Mode } from '../../core/mode.ts';
import type { Db, DbOrTx, Tx } from '../../db/index.ts';
import { rowInsert, rowWrite, type Write } from '../../db/statement.ts';
import type { AttemptsTable, DepositsTable, PaymentsTable, RefundsTable } from '../../db/schema.ts';
import type { PaymentSearch } from './reports.ts';
import type { AttemptState, AttemptStatus, DepositStatus, PaymentState, PaymentStatus } from './model.ts';

export type PaymentRow = Selectable<PaymentsTable>;
export type AttemptRow = Selectable<AttemptsTable>;
export type DepositRow = Selectable<DepositsTable>;
export type RefundRow = Selectable<RefundsTable>;

/** A payment as stored: its row, its attempts (creation order) and their deposits (order seen). */
export interface Loaded {
  row: PaymentRow;
  attempts: AttemptRow[];
  deposits: DepositRow[];
}

export interface PaymentScope {
  mode: Mode;
  /** null only for callers that act for no merchant (watchers, workers, checkout pages). */
  merchantId: string | null;
}

// ---- Loading and saving a payment ----

export async function loadPayments(db: DbOrTx, scope: PaymentScope, ids: string[], forUpdate = false): Promise<Loaded[]> {
  if (ids.length === 0) return [];
  let q = db.selectFrom('payments').selectAll().where('mode', '=', scope.mode).where('id', 'in', ids);
  if (scope.merchantId !== null) q = q.where('merchant_id', '=', scope.merchantId);
  if (forUpdate) q = q.orderBy('id').forUpdate();
  const rows = await q.execute();
  if (rows.length === 0) return [];
  const found = rows.map((r) => r.id);
  const [attempts, deposits] = await Promise.all([
    db.selectFrom('attempts').selectAll().where('payment_id', 'in', found).orderBy('id').execute(),
    db.selectFrom('deposits').selectAll().where('payment_id', 'in', found).orderBy('seen_at').orderBy('id').execute(),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    if (!row) return [];
    return [{ row, attempts: attempts.filter((a) => a.payment_id === id), deposits: deposits.filter((d) => d.payment_id === id) }];
  });
}

export async function loadPayment(db: DbOrTx, scope: PaymentScope, id: string): Promise<Loaded | null> {
  return (await loadPayments(db, scope, [id]))[0] ?? null;
}

/** Loads a payment with `SELECT … FOR UPDATE` on its row, so concurrent changes to one payment serialize. */
export async function lockPayment(tx: Tx, scope: PaymentScope, id: string): Promise<Loaded | null> {
  return (await loadPayments(tx, scope, [id], true))[0] ?? null;
}

export function toState(l: Loaded): PaymentState {
  return {
    id: l.row.id,
    status: l.row.status as PaymentStatus,
    createdAt: l.row.created_at,
    expiresAt: l.row.expires_at,
    paidAt: l.row.paid_at,
    paidAttemptId: l.row.paid_attempt_id,
    paidAmount: l.row.paid_amount === null ? null : BigInt(l.row.paid_amount),
    attempts: l.attempts.map(
      (a): AttemptState => ({
        id: a.id,
        token: a.token,
        status: a.status as AttemptStatus,
        payAmount: BigInt(a.pay_amount),
        rate: a.rate,
        expiresAt: a.expires_at,
        overpaid: a.overpaid,
        wrongAsset: a.wrong_asset,
        deposits: l.deposits
          .filter((d) => d.attempt_id === a.id)
          .map((d) => ({
            id: d.id,
            token: d.token,
            amount: BigInt(d.amount),
            status: d.status as DepositStatus,
            confirmations: d.confirmations,
            seenAt: d.seen_at,
            valueCents: d.value_cents,
            atLeastTokenMinimum: d.at_least_min,
          })),
      }),
    ),
  };
}

/**
 * Writes what the state machine changed (payment row and attempts; deposits are written by their own paths) and
 * returns the payment as it now stands, built from `l` and `after` without reading it back.
 */
export async function persist(tx: Tx, l: Loaded, before: PaymentState, after: PaymentState, now: Date): Promise<Loaded> {
  let row = l.row;
  const changed =
    before.status !== after.status ||
    before.paidAt?.getTime() !== after.paidAt?.getTime() ||
    before.paidAttemptId !== after.paidAttemptId ||
    (before.paidAmount ?? null) !== (after.paidAmount ?? null);
  if (changed) {
    const set = {
      status: after.status,
      paid_at: after.paidAt,
      paid_attempt_id: after.paidAttemptId,
      paid_amount: after.paidAmount == null ? null : after.paidAmount.toString(),
      updated_at: now,
    };
    await tx.updateTable('payments').set(set).where('id', '=', after.id).execute();
    row = { ...row, ...set };
  }
  const attempts: AttemptRow[] = [];
  for (const a of l.attempts) {
    const s = after.attempts.find((x) => x.id === a.id);
    if (!s || (a.status === s.status && a.overpaid === s.overpaid && a.wrong_asset === s.wrongAsset)) {
      attempts.push(a);
      continue;
    }
    const set = { status: s.status, overpaid: s.overpaid, wrong_asset: s.wrongAsset };
    await tx.updateTable('attempts').set(set).where('id', '=', a.id).execute();
    attempts.push({ ...a, ...set });
  }
  return { row, attempts, deposits: l.deposits };
}

/** Records the ledger bookkeeping of a payment: how many credits it had and whether one stands now. */
export async function saveCredit(tx: Tx, l: Loaded, seq: number, credited: boolean): Promise<Loaded> {
  if (seq === l.row.credit_seq && credited === l.row.credited) return l;
  await tx.updateTable('payments').set({ credit_seq: seq, credited }).where('id', '=', l.row.id).execute();
  return { ...l, row: { ...l.row, credit_seq: seq, credited } };
}

// ---- Creating payments and coin choices ----

export type NewPayment = Omit<Insertable<PaymentsTable>, 'id' | 'credit_seq' | 'credited' | 'deposits_dirty'>;

/**
 * Many new payments (those other modules issue in their own transaction) in one statement: each column bound as one array and `unnest`ed (a fixed number of parameters
 * whatever the batch size; times as ISO text, which the driver does not have to format). Answers in `values` order.
 */
export async function insertPayments(db: DbOrTx, values: readonly NewPayment[]): Promise<PaymentRow[]> {
  if (values.length === 0) return [];
  const ids = values.map(() => newId('pay'));
  const col = <K extends keyof NewPayment>(k: K) => values.map((v) => v[k] ?? null);
  const time = (k: 'expires_at' | 'paid_at' | 'created_at' | 'updated_at') => values.map((v) => (v[k] ? new Date(v[k] as Date | string).toISOString() : null));
  const { rows } = await sql<PaymentRow>`
    INSERT INTO payments (id, merchant_id, mode, status, price_amount, price_currency, order_id, description, success_url, cancel_url,
      webhook_url, metadata, expires_at, paid_at, paid_attempt_id, paid_amount, created_at, updated_at)
    SELECT * FROM unnest(${ids}::text[], ${col('merchant_id')}::text[], ${col('mode')}::text[], ${col('status')}::text[],
      ${col('price_amount')}::int[], ${col('price_currency')}::text[], ${col('order_id')}::text[], ${col('description')}::text[],
      ${col('success_url')}::text[], ${col('cancel_url')}::text[], ${col('webhook_url')}::text[], ${col('metadata')}::json[],
      ${time('expires_at')}::timestamptz[], ${time('paid_at')}::timestamptz[], ${col('paid_attempt_id')}::text[],
      ${values.map((v) => (v.paid_amount == null ? null : String(v.paid_amount)))}::numeric[], ${time('created_at')}::timestamptz[],
      ${time('updated_at')}::timestamptz[])
    RETURNING *`.execute(db);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!);
}

/** Status, amount and times of the payments `ids` of `mode` (those that exist), in one query. */
export async function paymentStates(db: DbOrTx, mode: Mode, ids: readonly string[]): Promise<Array<Pick<PaymentRow, 'id' | 'status' | 'price_amount' | 'created_at' | 'expires_at' | 'paid_at'>>> {
  if (ids.length === 0) return [];
  const { rows } = await sql<Pick<PaymentRow, 'id' | 'status' | 'price_amount' | 'created_at' | 'expires_at' | 'paid_at'>>`
    SELECT id, status, price_amount, created_at, expires_at, paid_at FROM payments WHERE mode = ${mode} AND id = ANY(${ids as string[]}::text[])`.execute(db);
  return rows;
}

/**
 * A new payment's complete row, made before it is written: every column given (none left to a default), so the row
 * the API answers with is the row stored, and creating a payment needs nothing read back.
 */
export function newPaymentRow(id: string, values: Omit<PaymentRow, 'id' | 'credit_seq' | 'credited' | 'deposits_dirty' | 'paid_at' | 'paid_attempt_id' | 'paid_amount'>): PaymentRow {
  return { id, ...values, paid_at: null, paid_attempt_id: null, paid_amount: null, credit_seq: 0, credited: false, deposits_dirty: false };
}

/** A new coin choice's complete row (see `newPaymentRow`). */
export function newAttemptRow(id: string, values: Omit<AttemptRow, 'id' | 'overpaid' | 'wrong_asset'>): AttemptRow {
  return { id, ...values, overpaid: false, wrong_asset: false };
}

// The INSERTs of creation as constant texts: the API's hot path builds no query per call (db/statement.ts).
const PAYMENT_COLUMNS = [
  'id', 'merchant_id', 'mode', 'status', 'price_amount', 'price_currency', 'order_id', 'description', 'success_url', 'cancel_url', 'webhook_url',
  'metadata', 'expires_at', 'paid_at', 'paid_attempt_id', 'paid_amount', 'credit_seq', 'credited', 'deposits_dirty', 'created_at', 'updated_at',
] as const satisfies ReadonlyArray<keyof PaymentRow>;
const ATTEMPT_COLUMNS = [
  'id', 'payment_id', 'mode', 'chain', 'token', 'address', 'address_index', 'pay_amount', 'rate', 'rate_source', 'status', 'overpaid',
  'wrong_asset', 'confirmation_tier', 'confirmations_required', 'expires_at', 'uri', 'created_at',
] as const satisfies ReadonlyArray<keyof AttemptRow>;
const INSERT_PAYMENT = rowInsert('payments', PAYMENT_COLUMNS);
const INSERT_ATTEMPT = rowInsert('attempts', ATTEMPT_COLUMNS);

/** The INSERTs of complete rows made by `newPaymentRow` and `newAttemptRow`, to run together (db/statement.ts). */
export function insertRows(payment: PaymentRow | null, attempts: readonly AttemptRow[]): Write[] {
  const writes: Write[] = [];
  if (payment) {
    const row = { ...payment, metadata: JSON.stringify(payment.metadata) };
    writes.push(rowWrite(INSERT_PAYMENT, PAYMENT_COLUMNS.map((c) => row[c])));
  }
  for (const a of attempts) writes.push(rowWrite(INSERT_ATTEMPT, ATTEMPT_COLUMNS.map((c) => a[c])));
  return writes;
}

/**
 * Deposit address indexes, from one sequence for every chain and mode so an index is never derived twice. A
 * process takes them a block at a time (one round trip per block, not per coin choice); indexes of a block left
 * unused when the process stops are skipped, as a sequence skips values of rolled-back transactions — an index
 * names an address, it does not count payments.
 */
export class AddressIndexes {
  private free: bigint[] = [];
  private refill: Promise<void> | null = null;

  constructor(
    private readonly db: Db,
    private readonly block = 16,
  ) {}

  async next(): Promise<bigint> {
    while (this.free.length === 0) {
      this.refill ??= sql<{ index: bigint }>`SELECT nextval('deposit_address_index') AS index FROM generate_series(1, ${this.block}::int)`
        .execute(this.db)
        .then(({ rows }) => {
          // Largest first: `pop` hands them out in ascending order.
          this.free = rows.map((r) => r.index).sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
        })
        .finally(() => {
          this.refill = null;
        });
      await this.refill;
    }
    return this.free.pop()!;
  }
}

export interface PaymentListQuery {
  order_id?: string;
  status?: PaymentStatus;
  cursor?: string;
  limit: number;
}

/** Ids of a merchant's payments, newest first: up to `limit + 1` (one more tells whether a next page exists). */
export async function listPaymentIds(db: DbOrTx, mode: Mode, merchantId: string, q: PaymentListQuery): Promise<string[]> {
  let query = db.selectFrom('payments').select('id').where('merchant_id', '=', merchantId).where('mode', '=', mode);
  if (q.order_id !== undefined) query = query.where('order_id', '=', q.order_id);
  if (q.status !== undefined) query = query.where('status', '=', q.status);
  if (q.cursor !== undefined) query = query.where('id', '<', decodeCursor(q.cursor, new RegExp(ID_PATTERNS.pay)));
  return (await query.orderBy('id', 'desc').limit(q.limit + 1).execute()).map((r) => r.id);
}

/** Ids of the dashboard's search (see PaymentSearch), newest first: one more than `q.limit` when there is a next page. */
export async function searchPaymentIds(db: DbOrTx, mode: Mode, merchantId: string, q: PaymentSearch & { limit: number }): Promise<string[]> {
  let query = db.selectFrom('payments as p').select('p.id').where('p.merchant_id', '=', merchantId).where('p.mode', '=', mode);
  if (q.status) query = query.where('p.status', '=', q.status);
  if (q.order_id) query = query.where('p.order_id', '=', q.order_id);
  if (q.from) query = query.where('p.created_at', '>=', q.from);
  if (q.to) query = query.where('p.created_at', '<', q.to);
  if (q.token) query = query.where((eb) => eb.exists(eb.selectFrom('attempts as a').select(sql`1`.as('one')).whereRef('a.payment_id', '=', 'p.id').where('a.token', '=', q.token!)));
  if (q.cursor) query = query.where('p.id', '<', decodeCursor(q.cursor, new RegExp(ID_PATTERNS.pay)));
  return (await query.orderBy('p.id', 'desc').limit(q.limit + 1).execute()).map((r) => r.id);
}

/** Paid price (US cents) and count per UTC day (YYYY-MM-DD) of payments paid in [from, to) and not reversed since; days without any are absent. */
export async function paidVolume(db: DbOrTx, mode: Mode, merchantId: string, from: Date, to: Date): Promise<Array<{ day: string; cents: string; count: string }>> {
  const { rows } = await sql<{ day: string; cents: string; count: string }>`
    SELECT to_char(date_trunc('day', paid_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, sum(price_amount) AS cents, count(*) AS count
    FROM payments
    WHERE merchant_id = ${merchantId} AND mode = ${mode} AND paid_at IS NOT NULL AND paid_at >= ${from} AND paid_at < ${to}
      AND status IN ('paid', 'refunded')
    GROUP BY 1`.execute(db);
  return rows;
}

// ---- Deposits (what chain watchers report) ----

/** The issued deposit addresses among `addresses` (compared in lower case), each mapped to its issued spelling. */
export async function issuedAddresses(db: DbOrTx, mode: Mode, chain: string, addresses: string[]): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom('attempts')
    .select('address')
    .where('mode', '=', mode)
    .where('chain', '=', chain)
    .where(sql<string>`lower(address)`, 'in', [...new Set(addresses.map((a) => a.toLowerCase()))])
    .execute();
  return new Map(rows.map((r) => [r.address.toLowerCase(), r.address]));
}

/** The attempts that issued any of `addresses` (compared in lower case). */
export async function attemptsByAddress(db: DbOrTx, mode: Mode, chain: string, addresses: string[]): Promise<AttemptRow[]> {
  return db
    .selectFrom('attempts')
    .selectAll()
    .where('mode', '=', mode)
    .where('chain', '=', chain)
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
 * (mode, chain, tx hash, index): a transfer seen again takes the block it is reported in now (a mempool sighting
 * moves into its block; one seen again after its block was orphaned is revived as pending in its new block).
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
        block_number: (eb) => eb.ref('excluded.block_number'),
        block_hash: (eb) => eb.ref('excluded.block_hash'),
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
  const deposits = [...byId.values()].sort((a, b) => a.seen_at.getTime() - b.seen_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { ...l, deposits };
}

/**
 * Depth finality: one statement recounts the confirmations of every open deposit on the chain that has a block, and
 * marks (`deposits_dirty`) the payments where a deposit changed status or started counting confirmations. The mark
 * is durable: a crash before the state machine ran leaves it for the next pass.
 */
export async function recountConfirmations(db: DbOrTx, mode: Mode, chain: string, head: bigint, finality: number): Promise<void> {
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
export async function setConfirmations(db: DbOrTx, mode: Mode, chain: string, updates: Array<TransferKey & { confirmations: number; final: boolean }>): Promise<void> {
  if (updates.length === 0) return;
  const values = sql.join(updates.map((u) => sql`(${u.txHash}::text, ${u.index}::int, ${u.confirmations}::int, ${u.final}::boolean)`));
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
  if ('fromBlock' in s) return sql<boolean>`status IN ('pending', 'confirmed') AND block_number >= ${s.fromBlock.toString()}::bigint`;
  return sql<boolean>`status IN ('pending', 'confirmed') AND ${keyCondition(s.keys)}`;
}

/** Payments with an open deposit on the chain in the selection. */
export async function paymentsWithDeposits(db: DbOrTx, mode: Mode, chain: string, s: DepositSelection): Promise<string[]> {
  if ('keys' in s && s.keys.length === 0) return [];
  const rows = await db.selectFrom('deposits').select('payment_id').distinct().where('mode', '=', mode).where('chain', '=', chain).where(selected(s)).execute();
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

// ---- Due work ----

export interface DueRow {
  id: string;
  mode: Mode;
}

/** The next payment (locked, skipping locked ones) whose 24 hours ran out while waiting. */
export const dueLifetime = (now: Date) => (skip: string[]) => sql<DueRow>`
  SELECT p.id, p.mode FROM payments p
  WHERE p.status = 'waiting' AND p.expires_at <= ${now} AND p.id <> ALL(${skip}::text[])
  ORDER BY p.expires_at LIMIT 1 FOR UPDATE SKIP LOCKED`;

/** The next payment (locked) with a coin hold that ran out. */
export const dueHold = (now: Date) => (skip: string[]) => sql<DueRow>`
  SELECT p.id, p.mode FROM attempts a JOIN payments p ON p.id = a.payment_id
  WHERE a.status = 'waiting' AND a.expires_at <= ${now} AND p.id <> ALL(${skip}::text[])
  ORDER BY a.expires_at LIMIT 1 FOR UPDATE OF p SKIP LOCKED`;

/** The next late payment (locked) still inside the auto-acceptance window and without a refund requested. */
export const dueLate = (since: Date) => (skip: string[]) => sql<DueRow>`
  SELECT p.id, p.mode FROM payments p
  WHERE p.status = 'late' AND p.expires_at > ${since} AND p.id <> ALL(${skip}::text[])
    AND NOT EXISTS (SELECT 1 FROM refunds r WHERE r.payment_id = p.id AND r.status <> 'failed')
  ORDER BY p.expires_at LIMIT 1 FOR UPDATE SKIP LOCKED`;

// ---- Balance ----

/** Sum of the prices of the merchant's payments with money on the way (detected, confirming). */
export async function pendingCents(db: DbOrTx, mode: Mode, merchantId: string): Promise<number> {
  const row = await db
    .selectFrom('payments')
    .select(sql<string>`coalesce(sum(price_amount), 0)`.as('sum'))
    .where('merchant_id', '=', merchantId)
    .where('mode', '=', mode)
    .where('status', 'in', ['detected', 'confirming'])
    .executeTakeFirstOrThrow();
  return Number(row.sum);
}

// ---- Refunds ----

/** The payment's refund that has not failed, if any (a payment has at most one at a time). */
export async function openRefund(db: DbOrTx, paymentId: string): Promise<Pick<RefundRow, 'status'> | undefined> {
  return db.selectFrom('refunds').select('status').where('payment_id', '=', paymentId).where('status', '<>', 'failed').executeTakeFirst();
}

export async function insertRefund(tx: Tx, values: Omit<Insertable<RefundsTable>, 'id'>): Promise<RefundRow> {
  return tx
    .insertInto('refunds')
    .values({ id: newId('rfd'), ...values })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The payment's refunds in the scope's merchant and mode, oldest first. */
export async function paymentRefunds(db: DbOrTx, scope: PaymentScope, paymentId: string): Promise<RefundRow[]> {
  let q = db.selectFrom('refunds').selectAll().where('payment_id', '=', paymentId).where('mode', '=', scope.mode);
  if (scope.merchantId !== null) q = q.where('merchant_id', '=', scope.merchantId);
  return q.orderBy('created_at').orderBy('id').execute();
}

/** The coins sent back by the payment's refunds that were sent. */
export async function sentRefunds(db: DbOrTx, paymentId: string): Promise<Array<Pick<RefundRow, 'attempt_id' | 'token' | 'amount'>>> {
  return db.selectFrom('refunds').select(['attempt_id', 'token', 'amount']).where('payment_id', '=', paymentId).where('status', '=', 'sent').execute();
}

/** The payment a refund belongs to, in `mode`. */
export async function refundPayment(db: DbOrTx, mode: Mode, refundId: string): Promise<string | null> {
  const row = await db.selectFrom('refunds').select('payment_id').where('id', '=', refundId).where('mode', '=', mode).executeTakeFirst();
  return row?.payment_id ?? null;
}

// ---- For tax invoices ----

/** What a tax invoice of a payment is made from; null when the merchant has no such payment in the mode. */
export async function invoiceablePayment(db: DbOrTx, mode: Mode, merchantId: string, id: string) {
  return db.selectFrom('payments').select(['id', 'status', 'paid_at', 'price_amount', 'description']).where('id', '=', id).where('mode', '=', mode).where('merchant_id', '=', merchantId).executeTakeFirst() ?? null;
}

/**
 * Locks the payment for its invoice until `tx` ends (serializing with a refund or another invoice of it) and answers
 * its status as locked.
 */
export async function lockForInvoice(tx: Tx, id: string): Promise<string> {
  const row = await tx.selectFrom('payments').select('status').where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
  return row.status;
}

/** Locks a refund row (its payment is locked first). */
export async function lockRefund(tx: Tx, refundId: string): Promise<RefundRow> {
  return tx.selectFrom('refunds').selectAll().where('id', '=', refundId).forUpdate().executeTakeFirstOrThrow();
}

export async function settleRefund(tx: Tx, refundId: string, set: { status: 'sent' | 'failed'; tx_hash: string | null; error: string | null; settled_at: Date }): Promise<void> {
  await tx.updateTable('refunds').set(set).where('id', '=', refundId).execute();
}

// ---- Public reads (checkout pages, chain families) ----

/** A payment's mode and merchant, by the payment id alone; null when there is none. */
export async function publicOwner(db: DbOrTx, id: string): Promise<{ mode: Mode; merchantId: string } | null> {
  const row = await db.selectFrom('payments').select(['mode', 'merchant_id']).where('id', '=', id).executeTakeFirst();
  return row ? { mode: row.mode, merchantId: row.merchant_id } : null;
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
export async function attemptOfPayment(db: DbOrTx, paymentId: string, attemptId: string): Promise<{ mode: Mode; status: string; attempt: AttemptRow | null } | null> {
  const payment = await db.selectFrom('payments').select(['mode', 'status']).where('id', '=', paymentId).executeTakeFirst();
  if (!payment) return null;
  const attempt = await db.selectFrom('attempts').selectAll().where('id', '=', attemptId).where('payment_id', '=', paymentId).executeTakeFirst();
  return { mode: payment.mode, status: payment.status, attempt: attempt ?? null };
}

/**
 * Deposit addresses of `chain` holding confirmed or final money in blocks, with their derivation index and the
 * highest such block (addresses in lower case), in index order.
 */
export async function fundedAddresses(db: DbOrTx, mode: Mode, chain: string): Promise<Array<{ address: string; index: bigint; lastBlock: bigint }>> {
  const { rows } = await sql<{ address: string; address_index: bigint; last_block: bigint }>`
    SELECT lower(a.address) AS address, a.address_index, max(d.block_number) AS last_block
    FROM deposits d JOIN attempts a ON a.id = d.attempt_id
    WHERE d.mode = ${mode} AND d.chain = ${chain} AND d.status IN ('confirmed', 'final') AND d.block_number IS NOT NULL
    GROUP BY 1, 2
    ORDER BY a.address_index`.execute(db);
  return rows.map((r) => ({ address: r.address, index: BigInt(r.address_index), lastBlock: BigInt(r.last_block) }));
}
