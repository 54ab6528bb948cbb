/**
 * x402 (docs/x402.md). Payments settled by the x402 facilitator carry `source` and their `x402` details; their coin
 * choice is `external` (settled by the facilitator, not found by a watcher, so a watcher never files a transfer to
 * the merchant's shared x402 address on one of them). The x402 module's tables: each merchant's receiving address
 * index per network (`x402_pay_to`), one row per authorization it settles (`x402_settlements`, unique per network
 * and authorization: the idempotency of settle across processes), and each merchant's running x402 total
 * (`x402_totals`, the sub-cent carry of cents-based figures).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE payments ADD COLUMN source text CHECK (source IN ('x402')), ADD COLUMN x402 jsonb;
    ALTER TABLE attempts ADD COLUMN external boolean NOT NULL DEFAULT false;
    CREATE INDEX payments_by_source ON payments (merchant_id, mode, source, created_at DESC, id DESC)
      WHERE source IS NOT NULL;

    CREATE TABLE x402_pay_to (
      merchant_id text NOT NULL REFERENCES merchants(id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      chain text NOT NULL,
      address_index bigint NOT NULL,
      address text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (merchant_id, mode, chain)
    );
    CREATE UNIQUE INDEX x402_pay_to_address ON x402_pay_to (mode, chain, lower(address));

    CREATE TABLE x402_settlements (
      id text PRIMARY KEY,
      merchant_id text NOT NULL REFERENCES merchants(id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      chain text NOT NULL,
      network text NOT NULL,
      auth_key text NOT NULL,
      payer text NOT NULL,
      pay_to text NOT NULL,
      token text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      resource text,
      description text,
      request jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'settled', 'failed')),
      transaction text,
      simulated boolean NOT NULL,
      error text,
      payment_id text REFERENCES payments(id),
      created_at timestamptz NOT NULL,
      settled_at timestamptz,
      UNIQUE (mode, chain, auth_key)
    );
    CREATE INDEX x402_settlements_pending ON x402_settlements (created_at) WHERE status = 'pending';

    CREATE TABLE x402_totals (
      merchant_id text NOT NULL REFERENCES merchants(id),
      mode text NOT NULL CHECK (mode IN ('test', 'live')),
      micro_usd numeric(78, 0) NOT NULL,
      PRIMARY KEY (merchant_id, mode)
    );
  `.execute(db);
}
