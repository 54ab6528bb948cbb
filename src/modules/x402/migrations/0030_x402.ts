/**
 * x402 (docs/x402.md). Payments settled by the x402 facilitator carry `source` and their `x402` details; their coin
 * choice is `external` (settled by the facilitator, not found by a watcher, so a watcher never files a transfer to
 * the merchant's shared x402 address on one of them). The x402 module's tables: each merchant's receiving address
 * index per network (`x402_pay_to`), one row per authorization it settles (`x402_settlements`, unique per network
 * and authorization: the idempotency of settle across processes), and each merchant's running x402 total
 * (`x402_totals`, the sub-cent carry of cents-based figures).
 *
 * Other modules' tables it changes: `payments` and `attempts` (modules/payments).
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode, tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE payments ADD COLUMN source text CHECK (source IN ('x402')), ADD COLUMN x402 jsonb;
    -- An x402 payment below a cent counts for 0 cents until the merchant's x402 total crosses one (docs/x402.md).
    ALTER TABLE payments DROP CONSTRAINT payments_price_amount_check, ADD CONSTRAINT payments_price_amount_check
      CHECK (price_amount BETWEEN 1 AND 100000000 OR (source = 'x402' AND price_amount >= 0));
    ALTER TABLE attempts ADD COLUMN external boolean NOT NULL DEFAULT false;
    -- Every x402 payment of a merchant on a network pays the one x402 address: its index repeats on them.
    ALTER TABLE attempts DROP CONSTRAINT attempts_address_index_key;
    CREATE UNIQUE INDEX attempts_address_index_key ON attempts (address_index) WHERE NOT external;
    DROP INDEX attempts_address;
    CREATE UNIQUE INDEX attempts_address ON attempts (mode, chain, lower(address)) WHERE NOT external;
    CREATE INDEX payments_by_source ON payments (merchant_id, mode, source, id DESC)
      WHERE source IS NOT NULL;

    CREATE TABLE x402_pay_to (
      ${merchantMode},
      chain text NOT NULL,
      address_index bigint NOT NULL,
      address text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (merchant_id, mode, chain)
    );
    CREATE UNIQUE INDEX x402_pay_to_address ON x402_pay_to (mode, chain, lower(address));

    CREATE TABLE x402_settlements (
      ${tenant},
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
      ${merchantMode},
      micro_usd numeric(78, 0) NOT NULL,
      PRIMARY KEY (merchant_id, mode)
    );
  `.execute(db);
}
