/**
 * The x402 facilitator's own request limit per key (docs/x402.md): a merchant's setting like `rate_limit_per_minute`,
 * null meaning the configured default (`KASSE_X402_RATE_LIMIT`). The spec's limit keeps governing the spec's operations.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE merchants ADD COLUMN x402_rate_limit_per_minute integer CHECK (x402_rate_limit_per_minute > 0);`.execute(
    db,
  );
}
