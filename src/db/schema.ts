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

export interface Database {
  merchants: MerchantsTable;
  api_keys: ApiKeysTable;
  rate_limit_windows: RateLimitWindowsTable;
  idempotency_keys: IdempotencyKeysTable;
}
