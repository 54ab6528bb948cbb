/**
 * Row types of the tables, for typed queries. `Generated` columns have database defaults.
 * numeric(78,0) token amounts arrive as strings and are turned into bigint by the module that owns them.
 */
import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json = ColumnType<unknown, string, string>;

export interface MerchantsTable {
  id: string;
  name: string;
  webhook_url_test: string | null;
  webhook_url_live: string | null;
  webhook_secret_enc: string;
  rate_limit_per_minute: number | null;
  fee_bps: number | null;
  created_at: Generated<Date>;
  /** Dashboard settings (migration 0011_dashboard). */
  payout_token: Generated<string>;
  approvals_required: number | null;
  webhook_secret_prev_enc: string | null;
  webhook_secret_prev_until: Timestamp | null;
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

/** EVM watcher cursor: the last block whose deposits are recorded (migration 0004_evm). */
export interface EvmCursorsTable {
  mode: 'test' | 'live';
  chain: string;
  block_number: bigint;
  block_hash: string;
  updated_at: Generated<Date>;
}

/** Recent scanned block hashes, down to the finality depth, for reorg walk-back. */
export interface EvmBlocksTable {
  mode: 'test' | 'live';
  chain: string;
  number: bigint;
  hash: string;
  parent_hash: string;
}

/** One ForwarderFactory.sweep transaction. */
export interface EvmSweepsTable {
  id: string;
  mode: 'test' | 'live';
  chain: string;
  factory: string;
  treasury: string;
  tx_hash: string;
  nonce: bigint;
  raw_tx: string;
  status: 'broadcast' | 'confirmed' | 'failed';
  block_number: bigint | null;
  gas_used: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

export interface EvmSweepItemsTable {
  sweep_id: string;
  /** Lower case. */
  address: string;
  address_index: bigint;
  ok: boolean | null;
}

type Numeric = ColumnType<string, string | bigint, string | bigint>;

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
  simulated: boolean;
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
  max_uses: number | null;
  uses: Generated<number>;
  seq: Generated<number>;
  expires_at: Timestamp | null;
  active: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An outgoing hot-wallet transfer (migration 0006_evm_sender; src/chains/evm/sender.ts). */
export interface EvmTransfersTable {
  id: string;
  mode: 'test' | 'live';
  chain: string;
  purpose: 'refund' | 'payout' | 'gasless';
  status: 'pending' | 'signed' | 'broadcast' | 'sent' | 'failed';
  from_address: string;
  to_address: string;
  value: Numeric;
  data: string;
  token: string;
  destination: string;
  amount: Numeric;
  nonce: ColumnType<bigint, bigint | string, bigint | string> | null;
  gas_limit: Numeric | null;
  tx_hash: string | null;
  broadcast_block: ColumnType<bigint, bigint | string, bigint | string> | null;
  block_number: ColumnType<bigint, bigint | string, bigint | string> | null;
  gas_used: Numeric | null;
  error: string | null;
  tries: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: Timestamp | null;
  reported: Generated<boolean>;
  created_at: Timestamp;
  signed_at: Timestamp | null;
  broadcast_at: Timestamp | null;
  settled_at: Timestamp | null;
}

/** One signed version of an outgoing transfer's transaction (same nonce; replacements bump the fee). */
export interface EvmTransferTxsTable {
  transfer_id: string;
  version: number;
  tx_hash: string;
  raw: string;
  max_fee_per_gas: Numeric;
  max_priority_fee_per_gas: Numeric;
  created_at: Timestamp;
}

/** The hot wallet's next nonce per network and mode. */
export interface EvmNoncesTable {
  mode: 'test' | 'live';
  chain: string;
  address: string;
  next_nonce: ColumnType<bigint, bigint | string, bigint | string>;
  updated_at: Timestamp;
}

/** An EIP-3009 authorization relayed by Kasse (src/chains/evm/gasless.ts). */
export interface EvmGaslessTable {
  transfer_id: string;
  mode: 'test' | 'live';
  chain: string;
  contract: string;
  authorizer: string;
  auth_nonce: string;
  payment_id: string;
  attempt_id: string;
  value: Numeric;
  valid_after: Numeric;
  valid_before: Numeric;
  signature: string;
  created_at: Timestamp;
}

/** The email outbox (migration 0010_email; src/modules/email). */
export interface EmailOutboxTable {
  id: string;
  merchant_id: string | null;
  mode: 'test' | 'live' | null;
  kind: string;
  to_address: string;
  to_name: string | null;
  subject: string;
  text_body: string;
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
  evm_cursors: EvmCursorsTable;
  evm_blocks: EvmBlocksTable;
  evm_sweeps: EvmSweepsTable;
  evm_sweep_items: EvmSweepItemsTable;
  evm_transfers: EvmTransfersTable;
  evm_transfer_txs: EvmTransferTxsTable;
  evm_nonces: EvmNoncesTable;
  evm_gasless: EvmGaslessTable;
  links: LinksTable;
  email_outbox: EmailOutboxTable;
  users: UsersTable;
  user_tokens: UserTokensTable;
  user_recovery_codes: UserRecoveryCodesTable;
  sessions: SessionsTable;
  signin_throttle: SigninThrottleTable;
  audit_log: AuditLogTable;
  subscriptions: SubscriptionsTable;
  subscription_invoices: SubscriptionInvoicesTable;
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
