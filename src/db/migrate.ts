/**
 * Forward-only migrations through Kysely's migrator. db/ runs them and owns none: each module keeps its tables'
 * migrations in `modules/<name>/migrations/` (listed in that folder's `index.ts`), the chains layer chain health's in
 * `chains/migrations/`, and each family its own (`ChainFamily.migrations`). `src/migrations.ts` gathers them into the
 * one list the server, the CLI and the test template apply. Names are recorded in `kasse_migrations` and never
 * change once released; a migration moved between folders keeps its name. The naming and order rule:
 *
 * - Modules (and chain health) share one numbering, `NNNN_<what>`: a new migration takes the next number free among
 *   them all (the highest in any module's `migrations/` plus one), so it sorts after every table it may use. No two
 *   of them share a number (test/unit/table-ownership.test.ts).
 * - A migration lives in the `migrations/` of the module that owns the tables it creates or changes; one that creates
 *   or changes another owner's table names that table in its header (released ones that made several modules' tables
 *   sit with the module owning most of them). Moving a migration to its owner keeps its name: the file moves, its
 *   `db/columns.ts` import takes the new path, and one line lists it in the folder's `index.ts`.
 * - Families' first migrations took numbers among the modules' (`0004_evm`, `0014_solana`, …) and keep those names.
 *   A family's new migrations are named in its namespace, `<family>/NNNN_<what>`, numbered within the family.
 * - Pending migrations run in the order of their names: every numbered one (`0…`) sorts before every namespaced one
 *   (`<letter>…`), so a family's new migration runs after the modules' tables it may use, and its own earlier ones.
 *   Families never depend on each other's tables, and modules never depend on a family's.
 * - A database may have run a family's migration before a module's migration released later: that one simply runs
 *   next (unordered migrations are allowed), since neither depends on the other.
 */
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './index.ts';

class StaticProvider implements MigrationProvider {
  constructor(private readonly all: Record<string, Migration>) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return this.all;
  }
}

/** The migrations of several owners as one list; two of the same name are refused. */
export function composeMigrations(...lists: Array<Record<string, Migration>>): Record<string, Migration> {
  const all: Record<string, Migration> = {};
  for (const list of lists) {
    for (const [name, m] of Object.entries(list)) {
      if (all[name]) throw new Error(`two migrations are named ${name}`);
      all[name] = m;
    }
  }
  return all;
}

/** Applies the pending ones of `migrations` (every migration Kasse has: src/migrations.ts); returns their names. */
export async function migrateToLatest(db: Db, migrations: Record<string, Migration>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: new StaticProvider(migrations),
    migrationTableName: 'kasse_migrations',
    migrationLockTableName: 'kasse_migrations_lock',
    allowUnorderedMigrations: true,
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
