/** Hold and capture: the hot wallet's calls to the escrow are transfers of their own purposes (holds.ts). */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE evm_transfers DROP CONSTRAINT evm_transfers_purpose_check;
    ALTER TABLE evm_transfers ADD CONSTRAINT evm_transfers_purpose_check
      CHECK (purpose IN ('refund', 'payout', 'gasless', 'disperse', 'approve', 'x402', 'authorize', 'capture', 'void'));
  `.execute(db);
}
