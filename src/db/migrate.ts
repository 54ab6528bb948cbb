/** Forward-only migrations through Kysely's migrator, applied at start by the server and by the CLI. */
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './index.ts';
import { migrations } from './migrations/index.ts';

class StaticProvider implements MigrationProvider {
  constructor(private readonly all: Record<string, Migration>) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return this.all;
  }
}

/**
 * Applies the core migrations and `extra` ones (the chain families' tables). Names are recorded in
 * `kasse_migrations` and never change once released. The order rule:
 *
 * - The core's migrations are `NNNN_<what>`, numbered by the core alone. Families' first migrations took numbers
 *   among them (`0004_evm`, `0014_solana`, …) and keep those names, so existing databases run nothing twice.
 * - A family's new migrations are named in its namespace, `<family>/NNNN_<what>`, numbered within the family.
 * - Pending migrations run in the order of their names: every numbered one (`0…`) sorts before every namespaced one
 *   (`<letter>…`), so a family's new migration runs after the core tables it may use, and its own earlier ones.
 *   Families never depend on each other's tables, and the core never depends on a family's.
 * - A database may have run a family's migration before a core migration released later: that one simply runs next
 *   (unordered migrations are allowed), since neither depends on the other.
 */
export async function migrateToLatest(db: Db, extra: Record<string, Migration> = {}): Promise<string[]> {
  const all = { ...migrations };
  for (const [name, m] of Object.entries(extra)) {
    if (all[name]) throw new Error(`two migrations are named ${name}`);
    all[name] = m;
  }
  const migrator = new Migrator({
    db,
    provider: new StaticProvider(all),
    migrationTableName: 'kasse_migrations',
    migrationLockTableName: 'kasse_migrations_lock',
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
