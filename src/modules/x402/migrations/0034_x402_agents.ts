/**
 * x402 under agents' traffic (docs/x402.md), the x402 module's tables only:
 *
 * - `x402_settlements`: the client's `payment-identifier` and the digest of what it paid with (one identifier per
 *   merchant and mode: a retry with the same payment answers the same, another payment under it is refused), who was
 *   answered `success: true` for the authorization (`answered_to`: one request, or one identifier, ever), and when a
 *   settlement a crash left pending is looked at next (`resume_at`, backing off while its network does not answer).
 * - `x402_pay_to`: under which configuration of the network the address was derived (`derivation`); an address
 *   handed out under another one (the simulator before a node was configured) is retired to `x402_pay_to_retired`
 *   and a sweepable one derived in its place.
 * - `x402_resources`: the discovery catalogue (the `bazaar` extension): resources merchants' servers declared when
 *   they verified or settled through Kasse, and the merchant's switch and last payment for each agent-payable link.
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode, tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE x402_settlements
      ADD COLUMN payment_identifier text CHECK (char_length(payment_identifier) BETWEEN 16 AND 128),
      ADD COLUMN payload_digest text,
      ADD COLUMN answered_to text,
      ADD COLUMN resume_at timestamptz,
      ADD COLUMN resume_tries integer NOT NULL DEFAULT 0,
      ADD CHECK ((payment_identifier IS NULL) = (payload_digest IS NULL));
    -- Settled before: their success was answered already.
    UPDATE x402_settlements SET answered_to = 'req:earlier' WHERE status = 'settled';
    CREATE UNIQUE INDEX x402_settlements_identifier ON x402_settlements (merchant_id, mode, payment_identifier)
      WHERE payment_identifier IS NOT NULL;
    CREATE INDEX x402_settlements_by_merchant ON x402_settlements (merchant_id, mode, created_at DESC, id DESC);

    ALTER TABLE x402_pay_to ADD COLUMN derivation text;
    CREATE TABLE x402_pay_to_retired (
      ${merchantMode},
      chain text NOT NULL,
      address text NOT NULL,
      address_index bigint NOT NULL,
      derivation text,
      retired_at timestamptz NOT NULL,
      PRIMARY KEY (merchant_id, mode, chain, address)
    );

    CREATE TABLE x402_resources (
      ${tenant},
      kind text NOT NULL CHECK (kind IN ('declared', 'link')),
      link_id text,
      type text NOT NULL CHECK (type IN ('http', 'mcp')),
      resource text NOT NULL CHECK (char_length(resource) <= 2048),
      method text,
      tool_name text,
      description text,
      mime_type text,
      service_name text,
      tags jsonb,
      icon_url text,
      accepts jsonb NOT NULL DEFAULT '[]',
      bazaar jsonb,
      published boolean NOT NULL DEFAULT true,
      first_seen_at timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL,
      last_paid_at timestamptz,
      CHECK ((kind = 'link') = (link_id IS NOT NULL))
    );
    CREATE UNIQUE INDEX x402_resources_key ON x402_resources
      (merchant_id, mode, type, resource, coalesce(method, ''), coalesce(tool_name, '')) WHERE kind = 'declared';
    CREATE UNIQUE INDEX x402_resources_link ON x402_resources (link_id) WHERE kind = 'link';
    CREATE INDEX x402_resources_published ON x402_resources (mode, last_paid_at DESC) WHERE published AND kind = 'declared';
  `.execute(db);
}
