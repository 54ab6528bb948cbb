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
 * Applies the core migrations and `extra` ones (the chain families' tables), all in the order of their names, so a
 * family's `0004_…` runs between the core's `0003_…` and `0005_…` as it always has.
 */
export async function migrateToLatest(db: Db, extra: Record<string, Migration> = {}): Promise<string[]> {
  const all = { ...migrations };
  for (const [name, m] of Object.entries(extra)) {
    if (all[name]) throw new Error(`two migrations are named ${name}`);
    all[name] = m;
  }
  const migrator = new Migrator({ db, provider: new StaticProvider(all), migrationTableName: 'kasse_migrations', migrationLockTableName: 'kasse_migrations_lock' });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
