/**
 * The test command (`npm test`): type-checks, starts the shared local infrastructure once for the whole run
 * (one PostgreSQL server; chain nodes where suites need them), then runs every `*.test.ts` file with Node's test
 * runner, two files at a time. Each test file creates its own database on the shared server.
 *
 *   npm test                      all files
 *   npm test -- test/api/foo.test.ts   some files
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { installedFamilies } from '../src/chains/families.ts';
import { startEmbedded } from '../src/db/embedded.ts';
import { createDb } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { startInfrastructure } from './harness/infrastructure.ts';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

/**
 * One database migrated with every installed family, which test files copy instead of migrating their own
 * (test/harness/db.ts): a copy takes a fraction of the migrations' time.
 */
async function migratedTemplate(adminUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `kasse_template_${randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const { db } = createDb(url.toString(), 1);
  const families = await installedFamilies();
  await migrateToLatest(db, Object.assign({}, ...families.map((f) => f.migrations ?? {}))).finally(() => db.destroy());
  return { name, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const files = args.length > 0 ? args : findTests('test').map((f) => relative('.', f));

  if (!process.env.KASSE_SKIP_TYPECHECK) {
    process.stdout.write('typecheck: tsc --noEmit\n');
    const tsc = spawnSync('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], { stdio: 'inherit' });
    if (tsc.status !== 0) {
      process.stdout.write('0 passed, 1 failed\n');
      return 1;
    }
  }

  let adminUrl = process.env.KASSE_TEST_DATABASE_URL;
  let stopPg = async () => {};
  let pgDir: string | null = null;
  if (!adminUrl) {
    pgDir = mkdtempSync(join(tmpdir(), 'kasse-test-pg-'));
    const pg = await startEmbedded(pgDir, 'postgres');
    adminUrl = pg.url;
    stopPg = pg.stop;
  }
  const template = await migratedTemplate(adminUrl);
  const infra = await startInfrastructure(files);

  const tapFile = join(mkdtempSync(join(tmpdir(), 'kasse-tap-')), 'results.tap');
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      '--test-timeout=600000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tapFile}`,
      ...files,
    ],
    { stdio: 'inherit', env: { ...process.env, ...infra.env, KASSE_TEST_DATABASE_URL: adminUrl, KASSE_TEST_TEMPLATE: template.name } },
  );
  const code: number = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  await infra.stop();
  const tap = existsSync(tapFile) ? readFileSync(tapFile, 'utf8') : '';
  const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap)?.[1] ?? 0);
  process.stdout.write(`${count('pass')} passed, ${count('fail') + count('cancelled')} failed, ${count('skipped')} skipped\n`);
  await template.drop();
  await stopPg();
  if (pgDir) rmSync(pgDir, { recursive: true, force: true });
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
