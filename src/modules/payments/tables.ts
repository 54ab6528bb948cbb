/**
 * Row types of the payments module's tables (migrations/), merged into Kasse's `Database` type: a payment, its coin
 * choices and the deposits on them, loaded and changed together. Only store/ queries them: the rest of the module and
 * other modules go through its functions.
 */
import type { ColumnType, Generated } from 'kysely';
import type { Json, Numeric, Timestamp } from '../../db/schema.ts';
import type { AttemptStatus, CaptureMethod, DepositStatus, PaymentStatus } from './model.ts';

export interface PaymentsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  status: PaymentStatus;
  price_amount: number;
  price_currency: string;
  order_id: string;
  description: string | null;
  success_url: string | null;
  cancel_url: string | null;
  webhook_url: string | null;
  /** The payer's language (0032_locale); null: negotiated from the browser. */
  locale: string | null;
  metadata: Json;
  expires_at: Timestamp;
  paid_at: Timestamp | null;
  paid_attempt_id: string | null;
  paid_amount: Numeric | null;
  credit_seq: Generated<number>;
  credited: Generated<boolean>;
  deposits_dirty: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Paid with a confirmed amount short of the pay amount within the merchant's tolerance (migration 0031). */
  paid_within_tolerance: Generated<boolean>;
  /** US cents a payment paid within the tolerance was credited at (migration 0033); null: at the price. */
  credited_cents: ColumnType<number | null, number | null | undefined, number | null>;
  /** `x402` for a payment the x402 facilitator settled; null otherwise (migration 0030). */
  source: ColumnType<'x402' | null, 'x402' | null | undefined, never>;
  /** The x402 details (`X402Details` of payments/external.ts) of such a payment. */
  x402: ColumnType<unknown, string | null | undefined, never>;
  /** Migration 0036: `manual` payments are holds the merchant captures (docs/capture.md). */
  capture_method: ColumnType<CaptureMethod, CaptureMethod | undefined, never>;
  /** A manual payment's hold: captures until, refunds through the escrow until (null for automatic payments). */
  capture_before: ColumnType<Date | null, Date | string | null | undefined, never>;
  refund_before: ColumnType<Date | null, Date | string | null | undefined, never>;
  /** The rest of the hold went back to the payer (void, its deadline, or the payer's reclaim). */
  hold_released: Generated<boolean>;
  /** US cents of captures asked for and not settled yet (the capture module keeps it with its captures). */
  capture_pending_cents: Generated<number>;
}

export interface AttemptsTable {
  id: string;
  payment_id: string;
  mode: 'test' | 'live';
  chain: string;
  token: string;
  address: string;
  address_index: ColumnType<bigint, bigint | string, bigint | string>;
  pay_amount: Numeric;
  rate: string;
  rate_source: string;
  status: AttemptStatus;
  overpaid: Generated<boolean>;
  wrong_asset: Generated<boolean>;
  confirmation_tier: number;
  confirmations_required: number;
  expires_at: Timestamp;
  uri: string | null;
  created_at: Timestamp;
  /** Settled by the x402 facilitator, not by a watcher's report (watchers ignore its address; migration 0030). */
  external: Generated<boolean>;
}

export interface DepositsTable {
  id: string;
  attempt_id: string;
  payment_id: string;
  mode: 'test' | 'live';
  chain: string;
  token: string;
  tx_hash: string;
  log_index: number;
  amount: Numeric;
  from_address: string | null;
  block_number: ColumnType<bigint, bigint | string, bigint | string> | null;
  block_hash: string | null;
  status: DepositStatus;
  confirmations: Generated<number>;
  confirmations_required: number;
  value_cents: ColumnType<bigint, bigint | string, bigint | string> | null;
  at_least_min: boolean;
  seen_at: Timestamp;
  created_at: Timestamp;
}

declare module '../../db/schema.ts' {
  interface Database {
    payments: PaymentsTable;
    attempts: AttemptsTable;
    deposits: DepositsTable;
  }
}
