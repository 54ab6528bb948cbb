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

/** Solana (migration 0014_solana; src/chains/solana/). */
export interface SolanaCursorsTable {
  mode: 'test' | 'live';
  chain: string;
  slot: bigint;
  blockhash: string;
  final_slot: bigint;
  start_slot: bigint;
  updated_at: Generated<Date>;
}

export interface SolanaBlocksTable {
  mode: 'test' | 'live';
  chain: string;
  slot: bigint;
  blockhash: string;
  parent_slot: bigint;
  deposits: Generated<number>;
}

export interface SolanaAddressesTable {
  mode: 'test' | 'live';
  chain: string;
  address: string;
  address_index: bigint;
  token: string;
  token_account: string | null;
  created_at: Timestamp;
  last_deposit_slot: bigint | null;
  swept_slot: bigint | null;
  closed: Generated<boolean>;
}

export interface SolanaTransfersTable {
  id: string;
  mode: 'test' | 'live';
  chain: string;
  purpose: 'refund' | 'payout' | 'account' | 'sweep' | 'gasless';
  status: 'pending' | 'signed' | 'broadcast' | 'sent' | 'failed';
  plan: Json;
  token: string | null;
  destination: string | null;
  amount: string | null;
  signature: string | null;
  slot: bigint | null;
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

export interface SolanaTransferTxsTable {
  transfer_id: string;
  version: number;
  signature: string;
  raw: string;
  blockhash: string;
  last_valid_block_height: bigint;
  created_at: Timestamp;
}

export interface SolanaGaslessTable {
  transfer_id: string;
  mode: 'test' | 'live';
  chain: string;
  attempt_id: string;
  payer: string;
  active: Generated<boolean>;
  created_at: Timestamp;
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
  solana_cursors: SolanaCursorsTable;
  solana_blocks: SolanaBlocksTable;
  solana_addresses: SolanaAddressesTable;
  solana_transfers: SolanaTransfersTable;
  solana_transfer_txs: SolanaTransferTxsTable;
  solana_gasless: SolanaGaslessTable;
  links: LinksTable;
}
