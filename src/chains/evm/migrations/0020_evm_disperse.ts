/**
 * Batched payouts through the Disperse contract (contracts/Disperse.sol): a batch is an outgoing transaction of its
 * own (purpose `disperse`) that pays its members, the payout rows, which keep their own status and are settled with
 * it; the hot wallet's one-time allowance to the contract is a transaction too (purpose `approve`). A payout that
 * a batch could not send goes out alone (`unbatched`). Rules: src/chains/evm/sender.ts and docs/evm.md.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE evm_transfers DROP CONSTRAINT evm_transfers_purpose_check;
    ALTER TABLE evm_transfers ADD CONSTRAINT evm_transfers_purpose_check CHECK (purpose IN ('refund', 'payout', 'gasless', 'disperse', 'approve'));
    -- the batch carrying this payout, and the payout's position in it (the contract reports failures by position)
    ALTER TABLE evm_transfers ADD COLUMN batch_id text REFERENCES evm_transfers(id);
    ALTER TABLE evm_transfers ADD COLUMN batch_index integer;
    -- a batch could not send it: it goes out in a transaction of its own
    ALTER TABLE evm_transfers ADD COLUMN unbatched boolean NOT NULL DEFAULT false;
    CREATE INDEX evm_transfers_batch ON evm_transfers (batch_id) WHERE batch_id IS NOT NULL;
    CREATE INDEX evm_transfers_batchable ON evm_transfers (mode, chain, created_at) WHERE status = 'pending' AND purpose = 'payout' AND batch_id IS NULL AND NOT unbatched;
  `.execute(db);
}
