/**
 * Subscriptions that charge themselves: a payer's signed delegate approval and revoke, relayed with the hot wallet
 * as fee payer, and each charge by the grant's delegate are transfers of their own purposes (`grant`, `revoke`,
 * `charge`; src/chains/solana/charges.ts).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE solana_transfers DROP CONSTRAINT solana_transfers_purpose_check;
    ALTER TABLE solana_transfers ADD CONSTRAINT solana_transfers_purpose_check
      CHECK (purpose IN ('refund', 'payout', 'account', 'sweep', 'gasless', 'grant', 'revoke', 'charge'));
  `.execute(db);
}
