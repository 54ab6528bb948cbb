/**
 * A refund or payout the hot wallet's coins in blocks cannot cover, but can with the change of Kasse's own
 * transactions not yet in a block, stays pending and waits for that change: when it started waiting bounds the wait
 * (`change_wait_ms`, docs/utxo.md).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE utxo_transfers ADD COLUMN waiting_since timestamptz`.execute(db);
}
