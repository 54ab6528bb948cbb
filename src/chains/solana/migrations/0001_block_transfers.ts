/**
 * The deposits of each block the watcher read and has not yet seen finalized, as [signature, index] pairs, so the
 * finality check can tell the payments which transfers are now final. Null for blocks read before this column
 * existed (the watcher reads such a block again when it is finalized).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE solana_blocks ADD COLUMN transfers jsonb`.execute(db);
}
