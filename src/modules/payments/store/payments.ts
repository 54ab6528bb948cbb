/**
 * The payments store's core: the row types of the payment tables, loading a payment with its attempts and deposits
 * (optionally locked), mapping rows to the state machine's `PaymentState` and writing back what it changed. The
 * store (this folder) is the only code that reads or writes the payment tables (`payments`, `attempts`,
 * `deposits`), one file per job: this core, creation (create.ts), lists and the reads others ask for (reads.ts),
 * deposits and their confirmations (deposits.ts), the due work (due.ts) and x402 settlements (external.ts). Every
 * lookup takes the tenant (mode and merchant), so test objects never show on the live API and the reverse; the one
 * for callers that act for no merchant (the deposit sink, the due work) is named so (`lockPaymentById`) and takes
 * the mode.
 */
import type { Selectable } from 'kysely';
import type { Mode } from '../../../core/mode.ts';
import type { Tenant } from '../../../core/tenant.ts';
import type { DbOrTx, Tx } from '../../../db/index.ts';
import type { AttemptsTable, DepositsTable, PaymentsTable } from '../tables.ts';
import type { AttemptState, PaymentState } from '../model.ts';

export type PaymentRow = Selectable<PaymentsTable>;
export type AttemptRow = Selectable<AttemptsTable>;
export type DepositRow = Selectable<DepositsTable>;

/** A payment as stored: its row, its attempts (creation order) and their deposits (order seen). */
export interface Loaded {
  row: PaymentRow;
  attempts: AttemptRow[];
  deposits: DepositRow[];
}

/** The tenant's payments `ids` (those it has), in the order given. */
export function loadPayments(db: DbOrTx, tenant: Tenant, ids: string[], forUpdate = false): Promise<Loaded[]> {
  return select(db, tenant.mode, tenant.merchantId, ids, forUpdate);
}

export async function loadPayment(db: DbOrTx, tenant: Tenant, id: string): Promise<Loaded | null> {
  return (await loadPayments(db, tenant, [id]))[0] ?? null;
}

/** Loads a payment with `SELECT … FOR UPDATE` on its row, so concurrent changes to one payment serialize. */
export async function lockPayment(tx: Tx, tenant: Tenant, id: string): Promise<Loaded | null> {
  return (await loadPayments(tx, tenant, [id], true))[0] ?? null;
}

/** `lockPayment` of any merchant's payment of `mode`: for callers that act for no merchant (deposits, due work). */
export async function lockPaymentById(tx: Tx, mode: Mode, id: string): Promise<Loaded | null> {
  return (await select(tx, mode, null, [id], true))[0] ?? null;
}

/** Payments `ids` of `mode`, of `merchantId` unless null (the …ById callers). */
async function select(
  db: DbOrTx,
  mode: Mode,
  merchantId: string | null,
  ids: string[],
  forUpdate: boolean,
): Promise<Loaded[]> {
  if (ids.length === 0) return [];
  let q = db.selectFrom('payments').selectAll().where('mode', '=', mode).where('id', 'in', ids);
  if (merchantId !== null) q = q.where('merchant_id', '=', merchantId);
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
    return [
      {
        row,
        attempts: attempts.filter((a) => a.payment_id === id),
        deposits: deposits.filter((d) => d.payment_id === id),
      },
    ];
  });
}

export function toState(l: Loaded): PaymentState {
  return {
    id: l.row.id,
    status: l.row.status,
    createdAt: l.row.created_at,
    expiresAt: l.row.expires_at,
    paidAt: l.row.paid_at,
    paidAttemptId: l.row.paid_attempt_id,
    paidAmount: l.row.paid_amount === null ? null : BigInt(l.row.paid_amount),
    paidWithinTolerance: l.row.paid_within_tolerance,
    captureMethod: l.row.capture_method,
    holdReleased: l.row.hold_released,
    attempts: l.attempts.map(
      (a): AttemptState => ({
        id: a.id,
        token: a.token,
        status: a.status,
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
            status: d.status,
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
export async function persist(
  tx: Tx,
  l: Loaded,
  before: PaymentState,
  after: PaymentState,
  now: Date,
): Promise<Loaded> {
  let row = l.row;
  const changed =
    before.status !== after.status ||
    before.paidAt?.getTime() !== after.paidAt?.getTime() ||
    before.paidAttemptId !== after.paidAttemptId ||
    (before.paidAmount ?? null) !== (after.paidAmount ?? null) ||
    (before.paidWithinTolerance ?? false) !== (after.paidWithinTolerance ?? false) ||
    (before.holdReleased ?? false) !== (after.holdReleased ?? false);
  if (changed) {
    const set = {
      status: after.status,
      paid_at: after.paidAt,
      paid_attempt_id: after.paidAttemptId,
      paid_amount: after.paidAmount == null ? null : after.paidAmount.toString(),
      paid_within_tolerance: after.paidWithinTolerance ?? false,
      hold_released: after.holdReleased ?? false,
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

/**
 * Records the ledger bookkeeping of a payment: how many credits it had, whether one stands now, and the US cents its
 * latest credit was at when not the price (null: the price).
 */
export async function saveCredit(
  tx: Tx,
  l: Loaded,
  seq: number,
  credited: boolean,
  creditedCents: number | null,
): Promise<Loaded> {
  const { row } = l;
  if (seq === row.credit_seq && credited === row.credited && creditedCents === row.credited_cents) return l;
  const set = { credit_seq: seq, credited, credited_cents: creditedCents };
  await tx.updateTable('payments').set(set).where('id', '=', row.id).execute();
  return { ...l, row: { ...row, ...set } };
}

/** Sets the US cents of a manual payment's captures in flight (the capture module's count), returning the payment. */
export async function saveCapturePending(tx: Tx, l: Loaded, cents: number, now: Date): Promise<Loaded> {
  if (cents === l.row.capture_pending_cents) return l;
  await tx
    .updateTable('payments')
    .set({ capture_pending_cents: cents, updated_at: now })
    .where('id', '=', l.row.id)
    .execute();
  return { ...l, row: { ...l.row, capture_pending_cents: cents, updated_at: now } };
}
