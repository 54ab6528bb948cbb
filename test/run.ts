/**
 * The test command (`npm test`): type-checks and compiles (`tsc -p tsconfig.test.json`: the sources and tests as
 * JavaScript in .test-build/, the other files of src/ copied beside them), lints (`biome check .`: biome.json's
 * formatting and lint rules), starts the shared local infrastructure once for the whole run (one PostgreSQL server;
 * chain nodes and the Medusa integration's install where suites need them, these as the run begins, beside the
 * type-check), then runs every `*.test.ts` file, compiled, with Node's test runner, three files at a time (docs/testing.md says why three on two cores). Each test file creates its own database on the shared server. Running compiled JavaScript spares every
 * test process tsx's loader (docs/testing.md; the processes tests start: test/harness/commands.ts).
 *
 * Files under test/unit/ are pure (no database, chain node or browser): a run of only those starts nothing, and
 * `--unit` runs them all without the type-check and lint, for a quick loop. KASSE_SKIP_TYPECHECK=1 skips both too.
 * Either way nothing is compiled: the files run from their sources through tsx.
 *
 *   npm test                           all files
 *   npm test -- test/api/foo.test.ts   some files
 *   npm run test:unit                  the pure files (test/unit/), no type-check or lint
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, relative, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
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
  const [{ default: pg }, { installedFamilies }, { createDb }, { migrateToLatest }, { kasseMigrations }] =
    await Promise.all([
      import('pg'),
      import('../src/chains/families.ts'),
      import('../src/db/index.ts'),
      import('../src/db/migrate.ts'),
      import('../src/migrations.ts'),
    ]);
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
  await migrateToLatest(db, kasseMigrations(families)).finally(() => db.destroy());
  return { name, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

const UNIT_DIR = join('test', 'unit');

/** A pure test file: under test/unit/, it needs neither PostgreSQL nor any other infrastructure. */
function isUnit(file: string): boolean {
  return !relative(UNIT_DIR, file).startsWith('..');
}

/**
 * Settings of the run's embedded cluster, which is thrown away after it: nothing is flushed to disk, so a crash of the
 * machine loses it, and checkpoints (every `CREATE DATABASE … STRATEGY FILE_COPY` makes two) cost no disk writes.
 */
const THROWAWAY = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];

/** The run's PostgreSQL server (KASSE_TEST_DATABASE_URL's, or an embedded one) with its migrated template. */
async function startDatabase(): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  let adminUrl = process.env.KASSE_TEST_DATABASE_URL;
  let stopPg = async () => {};
  let pgDir: string | null = null;
  if (!adminUrl) {
    pgDir = mkdtempSync(join(tmpdir(), 'kasse-test-pg-'));
    const { startEmbedded } = await import('../src/db/embedded.ts');
    const pg = await startEmbedded(pgDir, 'postgres', () => {}, THROWAWAY);
    adminUrl = pg.url;
    stopPg = pg.stop;
  }
  const template = await migratedTemplate(adminUrl);
  return {
    env: { KASSE_TEST_DATABASE_URL: adminUrl, KASSE_TEST_TEMPLATE: template.name },
    stop: async () => {
      await template.drop();
      await stopPg();
      if (pgDir) rmSync(pgDir, { recursive: true, force: true });
    },
  };
}

/** Where tsconfig.test.json compiles to, afresh on every run: nothing stays of a file since deleted or renamed. */
const BUILD = '.test-build';

/** A test file's compiled path (test/a.test.ts → .test-build/test/a.test.js); the runner's flags pass as they are. */
const compiled = (arg: string) => (arg.startsWith('-') ? arg : join(BUILD, relative('.', arg)).replace(/\.ts$/, '.js'));

/**
 * The files of src/ that are not TypeScript (scripts and styles the pages serve), copied beside the compiled ones. A
 * script named like a TypeScript file beside it would overwrite that file's JavaScript, so it is refused.
 */
function copyAssets(): void {
  const asset = (f: string) => {
    if (statSync(f).isDirectory()) return true;
    if (extname(f) === '.ts') return false;
    if (extname(f) === '.js' && existsSync(f.replace(/\.js$/, '.ts')))
      throw new Error(`${f} has the name of a TypeScript file's output`);
    return true;
  };
  cpSync('src', join(BUILD, 'src'), { recursive: true, filter: asset });
}

/** The ten test files that took longest (`name`: a file as it ran → its name), to see where the time goes. */
function printSlowest(timesFile: string, name: (file: string) => string): void {
  if (!existsSync(timesFile)) return;
  const rows = readFileSync(timesFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t') as [string, string])
    .sort((a, b) => Number(b[0]) - Number(a[0]));
  process.stdout.write('slowest test files:\n');
  for (const [ms, file] of rows.slice(0, 10))
    process.stdout.write(`  ${(Number(ms) / 1000).toFixed(1).padStart(6)} s  ${name(file)}\n`);
}

const NOTHING = { env: {}, stop: async () => {} };

/** Runs a command with the terminal as its output; resolves with its exit status (background work goes on meanwhile). */
function spawnAsync(command: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.once('error', () => resolve(1));
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const unitOnly = args[0] === '--unit';
  const named = unitOnly ? args.slice(1) : args;
  const files = named.length > 0 ? named : findTests(unitOnly ? UNIT_DIR : 'test').map((f) => relative('.', f));
  if (unitOnly && !files.every(isUnit)) {
    process.stderr.write(`--unit runs only files under ${UNIT_DIR}/\n`);
    return 1;
  }

  const build = !unitOnly && !process.env.KASSE_SKIP_TYPECHECK;
  const pure = files.every(isUnit);
  // Infrastructure starts before the type-check, which keeps one core busy: an install in the background (the Medusa
  // integration's) and the chain nodes' starts use the other.
  const infra = pure ? NOTHING : await startInfrastructure(files);
  const fail = async (message: string) => {
    await infra.stop();
    process.stdout.write(`${message}0 passed, 1 failed\n`);
    return 1;
  };
  if (build) {
    rmSync(BUILD, { recursive: true, force: true });
    const checks = [
      { title: 'typecheck and compile: tsc -p tsconfig.test.json', command: ['tsc', '-p', 'tsconfig.test.json'] },
      { title: 'lint: biome check .', command: ['biome', 'check', '.'] },
    ];
    for (const { title, command } of checks) {
      process.stdout.write(`${title}\n`);
      if ((await spawnAsync('npx', command)) !== 0) return fail('');
    }
    try {
      copyAssets();
    } catch (err) {
      return fail(`${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
  const run = build ? files.map(compiled) : files;
  const sourceOf = new Map(run.map((f, i) => [resolve(f), files[i]!]));

  const database = pure ? NOTHING : await startDatabase();

  const reports = mkdtempSync(join(tmpdir(), 'kasse-tap-'));
  const tapFile = join(reports, 'results.tap');
  const timesFile = join(reports, 'file-times.tsv');
  const child = spawn(
    process.execPath,
    [
      ...(build ? ['--enable-source-maps'] : ['--import', 'tsx']),
      '--test',
      '--test-concurrency=3',
      '--test-timeout=600000',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tapFile}`,
      '--test-reporter=./test/harness/file-times.mjs',
      `--test-reporter-destination=${timesFile}`,
      ...run,
    ],
    { stdio: 'inherit', env: { ...process.env, ...infra.env, ...database.env } },
  );
  const code: number = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  await infra.stop();
  if (files.length > 4) printSlowest(timesFile, (f) => sourceOf.get(f) ?? relative('.', f));
  const tap = existsSync(tapFile) ? readFileSync(tapFile, 'utf8') : '';
  const count = (name: string) => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(tap)?.[1] ?? 0);
  process.stdout.write(
    `${count('pass')} passed, ${count('fail') + count('cancelled')} failed, ${count('skipped')} skipped\n`,
  );
  await database.stop();
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
