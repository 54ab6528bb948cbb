/**
 * Row type of the Idempotency-Key records (created by merchants/migrations/0001_foundation.ts), merged into
 * Kasse's `Database` type.
 */
import type { Generated } from 'kysely';
import type { Json } from '../../db/schema.ts';

export interface IdempotencyKeysTable {
  merchant_id: string;
  mode: string;
  key: string;
  request_hash: string;
  response_status: number | null;
  response_body: Json | null;
  created_at: Generated<Date>;
}

declare module '../../db/schema.ts' {
  interface Database {
    idempotency_keys: IdempotencyKeysTable;
  }
}
