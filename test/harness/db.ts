/** A fresh database per test file on the run's shared PostgreSQL server. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function adminUrl(): string {
  const url = process.env.KASSE_TEST_DATABASE_URL;
  if (!url) throw new Error('KASSE_TEST_DATABASE_URL is not set: run tests with `npm test`');
  return url;
}

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
