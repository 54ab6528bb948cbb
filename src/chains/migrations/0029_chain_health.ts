/**
 * How each watched network's nodes answered its watcher (src/chains/health.ts): the last pass that reached them,
 * the failures in a row since, and the last error. Written by the workers role, read by every process (GET
 * /currencies, the dashboard, `kasse <family> status`).
 */
import { sql, type Kysely } from 'kysely';
import { network } from '../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE chain_health (
      ${network},
      ok_at timestamptz,
      failed_at timestamptz,
      failing_since timestamptz,
      failures integer NOT NULL DEFAULT 0,
      error text,
      PRIMARY KEY (mode, chain)
    );
  `.execute(db);
}
