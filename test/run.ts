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
import { startEmbedded } from '../src/db/embedded.ts';
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
    { stdio: 'inherit', env: { ...process.env, ...infra.env, KASSE_TEST_DATABASE_URL: adminUrl } },
  );
  const code: number = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  await infra.stop();
  const tap = existsSync(tapFile) ? readFileSync(tapFile, 'utf8') : '';
  const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap)?.[1] ?? 0);
  process.stdout.write(`${count('pass')} passed, ${count('fail') + count('cancelled')} failed, ${count('skipped')} skipped\n`);
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
