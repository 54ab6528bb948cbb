/**
 * Merchants, API keys (hashes only), rate-limit windows and idempotency records. Other modules' tables it makes:
 * `rate_limit_windows` (modules/ratelimit), `idempotency_keys` (modules/idempotency).
 */
import { sql, type Kysely } from 'kysely';
import { tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE merchants (
      id text PRIMARY KEY,
      name text NOT NULL,
      webhook_url_test text,
      webhook_url_live text,
      webhook_secret_enc text NOT NULL,
      rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0),
      fee_bps integer CHECK (fee_bps BETWEEN 0 AND 10000),
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE api_keys (
      ${tenant},
      key_hash text NOT NULL UNIQUE,
      key_hint text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    );
    CREATE INDEX api_keys_merchant ON api_keys (merchant_id);
    -- Fixed one-minute windows; processes lease blocks of the allowance from here (see modules/ratelimit).
    CREATE TABLE rate_limit_windows (
      key_id text NOT NULL,
      window_start timestamptz NOT NULL,
      used integer NOT NULL,
      PRIMARY KEY (key_id, window_start)
    );
    -- The row is inserted first in the request's transaction, so a concurrent request with the same key waits
    -- on it and then replays the stored response instead of creating twice.
    CREATE TABLE idempotency_keys (
      merchant_id text NOT NULL REFERENCES merchants(id),
      mode text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      response_status integer,
      response_body json,  -- json keeps the stored text exactly (key order), which a replay returns
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (merchant_id, mode, key)
    );
  `.execute(db);
}
