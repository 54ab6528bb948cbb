/**
 * Row types of the tables, for typed queries. `Generated` columns have database defaults.
 * numeric(78,0) token amounts arrive as strings and are turned into bigint by the module that owns them.
 * Chain families add their own tables to `Database` from their folder (declaration merging).
 */
import type {
  X402PayToRetiredTable,
  X402PayToTable,
  X402ResourcesTable,
  X402SettlementsTable,
  X402TotalsTable,
} from '../modules/x402/tables.ts';
import type { ColumnType, Generated } from 'kysely';

export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json = ColumnType<unknown, string, string>;

export interface MerchantsTable {
  id: string;
  name: string;
  webhook_url_test: string | null;
  webhook_url_live: string | null;
  webhook_secret_enc: string;
  rate_limit_per_minute: number | null;
  /** The x402 facilitator routes' limit per key (migration 0035); null: KASSE_X402_RATE_LIMIT. */
  x402_rate_limit_per_minute: ColumnType<number | null, number | null | undefined, number | null>;
  fee_bps: number | null;
  created_at: Generated<Date>;
  /** Tax profile per mode (migration 0012; shape: src/modules/invoices/profile.ts). */
  tax_profile_test: ColumnType<unknown, string | null | undefined, string | null>;
  tax_profile_live: ColumnType<unknown, string | null | undefined, string | null>;
  /** Dashboard settings (migration 0011_dashboard). */
  payout_token: Generated<string>;
  approvals_required: number | null;
  webhook_secret_prev_enc: string | null;
  webhook_secret_prev_until: Timestamp | null;
  /** Brand colour (lower-case `#rrggbb`), logo (merchant_logos) and underpayment tolerance (migration 0031). */
  brand_color: string | null;
  logo_sha256: string | null;
  underpayment_tolerance_bps: Generated<number>;
}

/** A merchant's logo: PNG pixels re-encoded on upload, addressed by their SHA-256 (migration 0031). */
export interface MerchantLogosTable {
  sha256: string;
  png: Buffer;
  width: number;
  height: number;
  created_at: Generated<Date>;
}

export interface ApiKeysTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  key_hash: string;
  key_hint: string;
  created_at: Generated<Date>;
  revoked_at: Timestamp | null;
}

export interface RateLimitWindowsTable {
  key_id: string;
  window_start: Timestamp;
  used: number;
}

export interface IdempotencyKeysTable {
  merchant_id: string;
  mode: string;
  key: string;
  request_hash: string;
  response_status: number | null;
  response_body: Json | null;
  created_at: Generated<Date>;
}

export interface EventsTable {
  id: string;
  seq: Generated<bigint>;
  merchant_id: string;
  mode: 'test' | 'live';
  type: string;
  ordering_key: string;
  destination: string | null;
  /** json (text kept as written): insert a JSON string, read back a parsed value. */
  data: Json;
  created_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  event_seq: bigint | string;
  merchant_id: string;
  mode: 'test' | 'live';
  ordering_key: string;
  url: string;
  status: Generated<'pending' | 'delivered' | 'failed'>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  lease_token: string | null;
  last_attempt_at: Timestamp | null;
  last_http_status: number | null;
  last_error: string | null;
  delivered_at: Timestamp | null;
  created_at: Timestamp;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  started_at: Timestamp;
  duration_ms: number;
  outcome: 'delivered' | 'http_error' | 'timeout' | 'network_error' | 'refused';
  http_status: number | null;
  error: string | null;
  response_body: string | null;
}

export type Numeric = ColumnType<string, string | bigint, string | bigint>;

export interface PaymentsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  status: string;
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
  status: string;
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
  status: string;
  confirmations: Generated<number>;
  confirmations_required: number;
  value_cents: ColumnType<bigint, bigint | string, bigint | string> | null;
  at_least_min: boolean;
  seen_at: Timestamp;
  created_at: Timestamp;
}

export interface RefundsTable {
  id: string;
  payment_id: string;
  attempt_id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  status: 'pending' | 'sent' | 'failed';
  destination: string;
  token: string;
  amount: Numeric;
  tx_hash: string | null;
  note: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

export interface LedgerTransactionsTable {
  id: string;
  mode: 'test' | 'live';
  merchant_id: string | null;
  kind: string;
  payment_id: string | null;
  dedupe_key: string;
  reverses: string | null;
  created_at: Timestamp;
  /** The coin a payment posting concerns (migration 0012). */
  token: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface LedgerEntriesTable {
  id: Generated<bigint>;
  transaction_id: string;
  account: string;
  currency: string;
  amount: Numeric;
}

/** Payment links (migration 0005_links). */
export interface LinksTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  slug: string;
  kind: 'fixed' | 'open' | 'tip' | 'pos';
  title: string;
  description: string | null;
  amount_usd_cents: number | null;
  min_usd_cents: number | null;
  max_usd_cents: number | null;
  presets_usd_cents: number[];
  collect_email: boolean;
  success_url: string | null;
  locale: string | null;
  max_uses: number | null;
  uses: Generated<number>;
  seq: Generated<number>;
  expires_at: Timestamp | null;
  active: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An outgoing transfer (migration 0007_transfers; src/modules/transfers). */
export interface TransfersTable {
  id: string;
  mode: 'test' | 'live';
  purpose: string;
  chain: string;
  token: string;
  destination: string;
  amount: Numeric;
  status: 'pending' | 'sent' | 'failed';
  simulated: boolean;
  tx_hash: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

/** GST tax invoices (migration 0012_statements_invoices). Amounts in paise. */
export interface TaxInvoicesTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  payment_id: string;
  number: string;
  financial_year: string;
  seq: number;
  issued_at: Timestamp;
  customer_name: string | null;
  customer_tax_id: string | null;
  customer_state_code: string | null;
  place_of_supply: 'intra' | 'inter';
  currency: 'INR';
  fx_rate: string;
  fx_source: string;
  fx_date: ColumnType<string, string, string>;
  usd_cents: number;
  total: ColumnType<bigint, bigint | string, bigint | string>;
  taxable: ColumnType<bigint, bigint | string, bigint | string>;
  cgst: ColumnType<bigint, bigint | string, bigint | string>;
  sgst: ColumnType<bigint, bigint | string, bigint | string>;
  igst: ColumnType<bigint, bigint | string, bigint | string>;
  tax_rate_bps: number;
  tax_inclusive: boolean;
  sac: string | null;
  description: string | null;
  seller: Json;
  created_at: Timestamp;
}

/** Last invoice number issued per merchant, mode and financial year. */
export interface TaxInvoiceCountersTable {
  merchant_id: string;
  mode: 'test' | 'live';
  financial_year: string;
  last_number: number;
}

/** Balance of an account at an instant long past (migration 0012). */
export interface LedgerCheckpointsTable {
  account: string;
  currency: string;
  at: Timestamp;
  balance: ColumnType<string, string | bigint, string | bigint>;
}

/** The email outbox (migration 0010_email; src/modules/email). */
export interface EmailOutboxTable {
  id: string;
  merchant_id: string | null;
  mode: 'test' | 'live' | null;
  kind: string;
  to_address: string;
  to_name: string | null;
  /** null when the mail is composed from `content_ref` (migration 0027). */
  subject: string | null;
  /** null when the mail is stored as `content` or `content_ref` (migrations 0025, 0027). */
  text_body: string | null;
  html_body: string | null;
  message_id: string;
  dedupe_key: string | null;
  sensitive: Generated<boolean>;
  status: Generated<'pending' | 'claimed' | 'handed' | 'sent' | 'failed' | 'uncertain' | 'kept'>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  lease_token: string | null;
  last_error: string | null;
  smtp_response: string | null;
  sent_at: Timestamp | null;
  created_at: Timestamp;
  /** Files sent with the mail (migration 0013): `[{ filename, content_type, content_base64 }]`. */
  attachments: ColumnType<unknown, string | null | undefined, string | null>;
  /** The layout blocks the text and HTML parts are built from when sent or shown (migration 0025). */
  content: ColumnType<unknown, string | null | undefined, string | null>;
  /** What the kind's composer builds the subject and blocks from when sent or shown (migration 0027). */
  content_ref: string | null;
}

/** Dashboard users (migration 0011_dashboard; src/modules/users). */
export interface UsersTable {
  id: string;
  merchant_id: string;
  email: string;
  role: 'owner' | 'member' | 'viewer';
  password_hash: string | null;
  totp_secret_enc: string | null;
  totp_enabled_at: Timestamp | null;
  totp_last_step: ColumnType<bigint, bigint | string | number, bigint | string | number> | null;
  invited_by: string | null;
  last_signin_at: Timestamp | null;
  password_changed_at: Timestamp | null;
  removed_at: Timestamp | null;
  created_at: Timestamp;
}

export interface UserTokensTable {
  token_hash: string;
  user_id: string;
  purpose: 'setup' | 'reset';
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

export interface UserRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  used_at: Timestamp | null;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  merchant_id: string;
  stage: 'password' | 'enrol' | 'full';
  second_factor_at: Timestamp | null;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
}

/** What a dashboard session sees once on its next page (migration 0028; src/modules/users/notes.ts). */
export interface SessionNotesTable {
  id: string;
  session_id: string;
  kind: 'key' | 'page';
  mode: 'test' | 'live' | null;
  path: string | null;
  status: number | null;
  body: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface SigninThrottleTable {
  key: string;
  window_start: Timestamp;
  failures: number;
}

/** The audit log (src/modules/audit). */
export interface AuditLogTable {
  seq: Generated<bigint>;
  merchant_id: string | null;
  mode: 'test' | 'live' | null;
  at: Timestamp;
  actor_type: 'user' | 'key' | 'operator' | 'anonymous';
  actor_id: string | null;
  actor_label: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  details: Json | null;
}

export interface Database {
  merchants: MerchantsTable;
  merchant_logos: MerchantLogosTable;
  api_keys: ApiKeysTable;
  rate_limit_windows: RateLimitWindowsTable;
  idempotency_keys: IdempotencyKeysTable;
  payments: PaymentsTable;
  attempts: AttemptsTable;
  deposits: DepositsTable;
  refunds: RefundsTable;
  ledger_transactions: LedgerTransactionsTable;
  ledger_entries: LedgerEntriesTable;
  events: EventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  links: LinksTable;
  transfers: TransfersTable;
  tax_invoices: TaxInvoicesTable;
  tax_invoice_counters: TaxInvoiceCountersTable;
  ledger_checkpoints: LedgerCheckpointsTable;
  email_outbox: EmailOutboxTable;
  users: UsersTable;
  user_tokens: UserTokensTable;
  user_recovery_codes: UserRecoveryCodesTable;
  sessions: SessionsTable;
  session_notes: SessionNotesTable;
  signin_throttle: SigninThrottleTable;
  audit_log: AuditLogTable;
  statement_subscribers: StatementSubscribersTable;
  statement_email_schedule: StatementEmailScheduleTable;
  subscriptions: SubscriptionsTable;
  subscription_invoices: SubscriptionInvoicesTable;
  disbursements: DisbursementsTable;
  disbursement_items: DisbursementItemsTable;
  disbursement_approvals: DisbursementApprovalsTable;
  chain_health: ChainHealthTable;
  x402_pay_to: X402PayToTable;
  x402_settlements: X402SettlementsTable;
  x402_totals: X402TotalsTable;
  x402_pay_to_retired: X402PayToRetiredTable;
  x402_resources: X402ResourcesTable;
}

/** How a watched network's nodes answered its watcher (migration 0028; src/chains/health.ts). */
export interface ChainHealthTable {
  mode: 'test' | 'live';
  chain: string;
  ok_at: Timestamp | null;
  failed_at: Timestamp | null;
  failing_since: Timestamp | null;
  failures: number;
  error: string | null;
}

/** Owners who receive a mode's monthly statement by email (migration 0013; src/modules/statements/emails.ts). */
export interface StatementSubscribersTable {
  user_id: string;
  mode: 'test' | 'live';
  merchant_id: string;
  created_at: Timestamp;
}

/** The next statement email of a merchant and mode, and when it is due. */
export interface StatementEmailScheduleTable {
  merchant_id: string;
  mode: 'test' | 'live';
  month: string;
  due_at: Timestamp;
  attempts: Generated<number>;
  last_error: string | null;
}

/** Subscriptions (migration 0018_subscriptions). Times other than created_at/updated_at/run_at are on the subscription's clock. */
export interface SubscriptionsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  customer_email: string;
  customer_name: string | null;
  title: string;
  amount_usd_cents: number;
  interval: 'week' | 'month' | 'year';
  interval_count: number;
  grace_days: number;
  status: 'active' | 'past_due' | 'cancelled';
  started_at: Timestamp;
  next_due_at: Timestamp;
  periods_invoiced: Generated<number>;
  periods_paid: Generated<number>;
  last_payment_id: string | null;
  success_url: string | null;
  locale: string | null;
  metadata: Json;
  cancelled_at: Timestamp | null;
  cancellation_reason: 'merchant' | 'customer' | 'unpaid' | null;
  clock_offset_ms: Generated<bigint>;
  run_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SubscriptionInvoicesTable {
  payment_id: string;
  subscription_id: string;
  period: number;
  seq: number;
  due_at: Timestamp;
  grace_ends_at: Timestamp;
  issued_at: Timestamp;
  check_at: Timestamp | null;
  paid: Generated<boolean>;
}

/** Disbursements (migration 0020_disbursements). */
export interface DisbursementsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  title: string;
  token: string;
  status: 'pending_approval' | 'approved' | 'released' | 'cancelled';
  total_usd_cents: ColumnType<string, string | number | bigint, string | number | bigint>;
  item_count: number;
  approvals_required: number;
  approval_mac: string | null;
  created_by: string;
  created_at: Timestamp;
  approved_at: Timestamp | null;
  released_at: Timestamp | null;
  released_by: string | null;
  cancelled_at: Timestamp | null;
  completed_at: Timestamp | null;
}

export interface DisbursementItemsTable {
  disbursement_id: string;
  item_no: number;
  destination: string;
  usd_cents: number;
  amount: Numeric;
  label: string | null;
  payout_id: string | null;
  payout_status: 'pending' | 'signed' | 'broadcast' | 'sent' | 'failed' | null;
  tx_hash: string | null;
  error: string | null;
  sent_at: Timestamp | null;
  settled_at: Timestamp | null;
}

export interface DisbursementApprovalsTable {
  disbursement_id: string;
  user_id: string;
  approved_at: Timestamp;
  digest: string;
}
