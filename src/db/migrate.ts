/** Forward-only migrations through Kysely's migrator, applied at start by the server and by the CLI. */
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './index.ts';
import { migrations } from './migrations/index.ts';

class StaticProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return migrations;
  }
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new StaticProvider(), migrationTableName: 'kasse_migrations', migrationLockTableName: 'kasse_migrations_lock' });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
