/**
 * The Medusa integration's package for tests (integrations/medusa, its own npm package with its own lockfile and
 * node_modules, which hold Medusa itself): installed with `npm ci` when its lockfile changed since the last install,
 * then built.
 *
 * `npm test` starts this once per run, in the background, when a selected file is under test/medusa/: the install is
 * mostly network and disk and the run is CPU-bound, so it overlaps the files that run meanwhile. Test files wait for
 * it with `medusaPackage()`, which fails with the install's or build's output if either failed. The outcome, with how
 * long each step took, is a JSON file named by KASSE_TEST_MEDUSA_STATUS.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KASSE_HOME } from '../../src/config.ts';
import { eventually } from './expect.ts';
import { registerInfrastructure } from './infrastructure.ts';

export const MEDUSA_PACKAGE = join(KASSE_HOME, 'integrations', 'medusa');
export const MEDUSA_STATUS_ENV = 'KASSE_TEST_MEDUSA_STATUS';
/** Written into node_modules after a successful install: the hash of the manifest and lockfile it installed. */
const STAMP = join(MEDUSA_PACKAGE, 'node_modules', '.kasse-install-stamp');

interface Status {
  ok: boolean;
  /** Milliseconds each step took (`install` is 0 when node_modules was current). */
  ms: { install: number; build: number };
  error?: string;
}

function lockHash(): string {
  const h = createHash('sha256');
  for (const f of ['package.json', 'package-lock.json']) h.update(readFileSync(join(MEDUSA_PACKAGE, f)));
  return h.digest('hex');
}

function run(command: string, args: string[], log: string, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(log, { flags: 'a' });
    const child = spawn(command, args, {
      cwd: MEDUSA_PACKAGE,
      signal,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, npm_config_loglevel: 'error', MEDUSA_DISABLE_TELEMETRY: 'true' },
    });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    child.once('error', reject);
    child.once('close', (code) => {
      out.end();
      if (code === 0) resolve();
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${readFileSync(log, 'utf8').slice(-4000)}`));
    });
  });
}

/**
 * Installs (when the lockfile changed) and builds the package; the outcome goes to `statusFile`. `signal` stops it (a
 * run ending early, say on a type error): an install cut short leaves no stamp, so the next run installs again.
 */
async function prepare(statusFile: string, log: string, signal?: AbortSignal): Promise<void> {
  const status: Status = { ok: false, ms: { install: 0, build: 0 } };
  try {
    const hash = lockHash();
    if (!existsSync(STAMP) || readFileSync(STAMP, 'utf8') !== hash) {
      const start = Date.now();
      await run('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], log, signal);
      writeFileSync(STAMP, hash);
      status.ms.install = Date.now() - start;
    }
    const start = Date.now();
    await run('npm', ['run', 'build'], log, signal);
    status.ms.build = Date.now() - start;
    status.ok = true;
  } catch (err) {
    status.error = err instanceof Error ? err.message : String(err);
  }
  writeFileSync(statusFile, JSON.stringify(status));
}

registerInfrastructure(async (files) => {
  if (!files.some((f) => f.replaceAll('\\', '/').includes('/medusa/'))) return null;
  const dir = mkdtempSync(join(tmpdir(), 'kasse-medusa-package-'));
  const statusFile = join(dir, 'status.json');
  const abort = new AbortController();
  const done = prepare(statusFile, join(dir, 'install.log'), abort.signal);
  return {
    env: { [MEDUSA_STATUS_ENV]: statusFile },
    stop: async () => {
      abort.abort();
      await done;
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

/**
 * Waits until the run's install and build of the package are done (they start with the run), and answers how long
 * each took. Without the runner's status file (a file run on its own), installs and builds now.
 */
export async function medusaPackage(): Promise<Status['ms']> {
  let statusFile = process.env[MEDUSA_STATUS_ENV];
  if (!statusFile) {
    statusFile = join(mkdtempSync(join(tmpdir(), 'kasse-medusa-package-')), 'status.json');
    await prepare(statusFile, join(statusFile, '..', 'install.log'));
  }
  const file = statusFile;
  await eventually('the Medusa package to be installed and built', () => existsSync(file), {
    timeoutMs: 15 * 60_000,
    intervalMs: 250,
  });
  const status = JSON.parse(readFileSync(file, 'utf8')) as Status;
  if (!status.ok) throw new Error(`integrations/medusa could not be installed or built: ${status.error}`);
  return status.ms;
}

/** A module as the package resolves it (Medusa's, from its node_modules). */
export function requireFromMedusaPackage(id: string): any {
  return createRequire(join(MEDUSA_PACKAGE, 'package.json'))(id);
}

/** The built provider package, `require`d as Medusa loads it. */
export function loadProviderPackage(): { default: { services: any[] } } {
  return requireFromMedusaPackage(join(MEDUSA_PACKAGE, 'dist', 'index.js'));
}
