/**
 * Payments other modules issue as part of their own change (subscription invoices): created inside the caller's
 * transaction, many in one statement, with no coin choice (the payer picks one on the checkout), no Idempotency-Key
 * and no network I/O — so the caller's row lock decides that a payment is issued once, and the payment commits or
 * rolls back with the change that issued it. Also a light read of many payments' status for such modules' objects.
 */
import type { Mode } from '../../core/mode.ts';
import { invalid } from '../../core/errors.ts';
import type { DbOrTx } from '../../db/index.ts';
import type { PaymentEngine } from './engine.ts';
import { PAYMENT_LIFETIME_MS, type PaymentStatus } from './model.ts';
import type { Payment } from './schema.ts';
import { insertPayments, type NewPayment } from './store/create.ts';
import { paymentStates } from './store/reads.ts';

/** NOTE: spec limit "metadata up to 4 kB", measured as the UTF-8 bytes of its JSON text. */
const METADATA_MAX_BYTES = 4096;

export interface IssuedPaymentInput {
  merchantId: string;
  price_amount: number;
  order_id: string;
  description: string | null;
  success_url: string | null;
  /** The payer's language (a subscription's), already checked. */
  locale: string | null;
  metadata: Record<string, unknown>;
}

/** What a module that issued payments shows of each: its state and where to pay it. */
export interface PaymentSummary {
  id: string;
  status: PaymentStatus;
  price_amount: number;
  checkout_url: string;
  created_at: Date;
  expires_at: Date;
  paid_at: Date | null;
}

/** Creates `items` (all of `mode`) in `db` — the caller's transaction — with one INSERT; answers in the same order. */
export async function createPaymentsIn(
  engine: PaymentEngine,
  db: DbOrTx,
  mode: Mode,
  items: readonly IssuedPaymentInput[],
): Promise<Payment[]> {
  if (items.length === 0) return [];
  const now = engine.deps.clock.now();
  const expires = new Date(now.getTime() + PAYMENT_LIFETIME_MS);
  const values = items.map((i): NewPayment => {
    const metadata = JSON.stringify(i.metadata);
    if (Buffer.byteLength(metadata, 'utf8') > METADATA_MAX_BYTES)
      throw invalid(`metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON`, 'metadata');
    return {
      merchant_id: i.merchantId,
      mode,
      status: 'waiting',
      price_amount: i.price_amount,
      price_currency: 'USD',
      order_id: i.order_id,
      description: i.description,
      success_url: i.success_url,
      cancel_url: null,
      webhook_url: null,
      locale: i.locale,
      metadata,
      expires_at: expires,
      created_at: now,
      updated_at: now,
    };
  });
  // RETURNING gives the rows in the order of VALUES (PostgreSQL keeps it for a plain INSERT … VALUES).
  const rows = await insertPayments(db, values);
  return rows.map((row) => engine.json({ row, attempts: [], deposits: [] }));
}

/** Status, amount, times and checkout URL of the payments `ids` of `mode` (those that exist), in one query. */
export async function paymentSummaries(
  engine: PaymentEngine,
  db: DbOrTx,
  mode: Mode,
  ids: readonly string[],
): Promise<Map<string, PaymentSummary>> {
  const rows = await paymentStates(db, mode, ids);
  const base = engine.deps.checkoutBase();
  return new Map(rows.map((r) => [r.id, { ...r, checkout_url: `${base}/p/${r.id}` }]));
}
