/**
 * A fresh database per test file on the run's shared PostgreSQL server.
 *
 * `npm test` migrates one template database once per run (every installed family's tables included) and names it
 * in KASSE_TEST_TEMPLATE; a database asked for `migrated` is a copy of it, which PostgreSQL makes in a fraction of
 * the time the migrations take. Kasse still runs its migrator on start, which finds nothing left to do (or only a
 * test family's own migrations).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function adminUrl(): string {
  const url = process.env.KASSE_TEST_DATABASE_URL;
  if (!url) throw new Error('KASSE_TEST_DATABASE_URL is not set: run tests with `npm test`');
  return url;
}

async function asAdmin(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/**
 * Creates an empty database, or with `migrated` a copy of the run's migrated template (an empty one where the run
 * made none). Only a database that will be opened with every installed family may be `migrated`.
 */
export async function createTestDatabase(
  opts: { migrated?: boolean } = {},
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const template = opts.migrated ? process.env.KASSE_TEST_TEMPLATE : undefined;
  await asAdmin(
    template ? `CREATE DATABASE ${name} TEMPLATE ${template} STRATEGY FILE_COPY` : `CREATE DATABASE ${name}`,
  );
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => asAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}
