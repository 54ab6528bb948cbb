/**
 * Creating payments and coin choices: complete new rows made before they are written, their INSERTs as constant
 * texts, many payments in one statement, and the deposit address indexes.
 */
import { sql, type Insertable } from 'kysely';
import { newId } from '../../../core/ids.ts';
import type { Db, DbOrTx } from '../../../db/index.ts';
import { rowInsert, rowWrite, type Write } from '../../../db/statement.ts';
import type { PaymentsTable } from '../tables.ts';
import type { AttemptRow, PaymentRow } from './payments.ts';

export type NewPayment = Omit<Insertable<PaymentsTable>, 'id' | 'credit_seq' | 'credited' | 'deposits_dirty'>;

/**
 * Many new payments (those other modules issue in their own transaction) in one statement: each column bound as one array and `unnest`ed (a fixed number of parameters
 * whatever the batch size; times as ISO text, which the driver does not have to format). Answers in `values` order.
 */
export async function insertPayments(db: DbOrTx, values: readonly NewPayment[]): Promise<PaymentRow[]> {
  if (values.length === 0) return [];
  const ids = values.map(() => newId('pay'));
  const col = <K extends keyof NewPayment>(k: K) => values.map((v) => v[k] ?? null);
  const time = (k: 'expires_at' | 'paid_at' | 'created_at' | 'updated_at' | 'capture_before' | 'refund_before') =>
    values.map((v) => (v[k] ? new Date(v[k] as Date | string).toISOString() : null));
  const { rows } = await sql<PaymentRow>`
    INSERT INTO payments (id, merchant_id, mode, status, price_amount, price_currency, order_id, description, success_url, cancel_url,
      webhook_url, locale, metadata, expires_at, paid_at, paid_attempt_id, paid_amount, created_at, updated_at,
      capture_method, capture_before, refund_before)
    SELECT * FROM unnest(${ids}::text[], ${col('merchant_id')}::text[], ${col('mode')}::text[], ${col('status')}::text[],
      ${col('price_amount')}::int[], ${col('price_currency')}::text[], ${col('order_id')}::text[], ${col('description')}::text[],
      ${col('success_url')}::text[], ${col('cancel_url')}::text[], ${col('webhook_url')}::text[], ${col('locale')}::text[], ${col('metadata')}::json[],
      ${time('expires_at')}::timestamptz[], ${time('paid_at')}::timestamptz[], ${col('paid_attempt_id')}::text[],
      ${values.map((v) => (v.paid_amount == null ? null : String(v.paid_amount)))}::numeric[], ${time('created_at')}::timestamptz[],
      ${time('updated_at')}::timestamptz[], ${values.map((v) => v.capture_method ?? 'automatic')}::text[],
      ${time('capture_before')}::timestamptz[], ${time('refund_before')}::timestamptz[])
    RETURNING *`.execute(db);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)!);
}

/**
 * A new payment's complete row, made before it is written: every column given (none left to a default), so the row
 * the API answers with is the row stored, and creating a payment needs nothing read back.
 */
export function newPaymentRow(
  id: string,
  values: Omit<
    PaymentRow,
    | 'id'
    | 'credit_seq'
    | 'credited'
    | 'deposits_dirty'
    | 'paid_at'
    | 'paid_attempt_id'
    | 'paid_amount'
    | 'paid_within_tolerance'
    | 'credited_cents'
    | 'source'
    | 'x402'
    | 'hold_released'
    | 'capture_pending_cents'
  >,
): PaymentRow {
  return {
    id,
    ...values,
    hold_released: false,
    capture_pending_cents: 0,
    source: null,
    x402: null,
    paid_at: null,
    paid_attempt_id: null,
    paid_amount: null,
    paid_within_tolerance: false,
    credited_cents: null,
    credit_seq: 0,
    credited: false,
    deposits_dirty: false,
  };
}

/** A new coin choice's complete row (see `newPaymentRow`). */
export function newAttemptRow(
  id: string,
  values: Omit<AttemptRow, 'id' | 'overpaid' | 'wrong_asset' | 'external'>,
  external = false,
): AttemptRow {
  return { id, ...values, overpaid: false, wrong_asset: false, external };
}

// The INSERTs of creation as constant texts: the API's hot path builds no query per call (db/statement.ts).
const PAYMENT_COLUMNS = [
  'id',
  'merchant_id',
  'mode',
  'status',
  'price_amount',
  'price_currency',
  'order_id',
  'description',
  'success_url',
  'cancel_url',
  'webhook_url',
  'locale',
  'metadata',
  'expires_at',
  'paid_at',
  'paid_attempt_id',
  'paid_amount',
  'credit_seq',
  'credited',
  'deposits_dirty',
  'created_at',
  'updated_at',
  'capture_method',
  'capture_before',
  'refund_before',
] as const satisfies ReadonlyArray<keyof PaymentRow>;
const ATTEMPT_COLUMNS = [
  'id',
  'payment_id',
  'mode',
  'chain',
  'token',
  'address',
  'address_index',
  'pay_amount',
  'rate',
  'rate_source',
  'status',
  'overpaid',
  'wrong_asset',
  'confirmation_tier',
  'confirmations_required',
  'expires_at',
  'uri',
  'created_at',
  'external',
] as const satisfies ReadonlyArray<keyof AttemptRow>;
const INSERT_PAYMENT = rowInsert('payments', PAYMENT_COLUMNS);
const INSERT_ATTEMPT = rowInsert('attempts', ATTEMPT_COLUMNS);

/** The INSERTs of complete rows made by `newPaymentRow` and `newAttemptRow`, to run together (db/statement.ts). */
export function insertRows(payment: PaymentRow | null, attempts: readonly AttemptRow[]): Write[] {
  const writes: Write[] = [];
  if (payment) {
    const row = { ...payment, metadata: JSON.stringify(payment.metadata) };
    writes.push(
      rowWrite(
        INSERT_PAYMENT,
        PAYMENT_COLUMNS.map((c) => row[c]),
      ),
    );
  }
  for (const a of attempts)
    writes.push(
      rowWrite(
        INSERT_ATTEMPT,
        ATTEMPT_COLUMNS.map((c) => a[c]),
      ),
    );
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
      this.refill ??= sql<{
        index: bigint;
      }>`SELECT nextval('deposit_address_index') AS index FROM generate_series(1, ${this.block}::int)`
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
