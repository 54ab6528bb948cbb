/**
 * Child process for the scale-out benchmark: one Kasse process running the roles in `KASSE_ROLES` (api, workers or
 * both) on `DATABASE_URL`, with the default configuration (async info access logs to stderr, metrics, auth, rate
 * limiting). Prints one JSON line with its test API base URL (null without the api role), then serves until killed.
 */
import { pino } from 'pino';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/core/log.ts';
import { Kasse } from '../../src/kasse.ts';
import { startListeners } from '../../src/server.ts';
import { startWorkers } from '../../src/workers/index.ts';

const config = loadConfig({ ...process.env, KASSE_LIVE_PORT: '0', KASSE_TEST_PORT: '0', KASSE_CHECKOUT_PORT: '0' });
const kasse = await Kasse.open({
  config,
  databaseUrl: process.env.DATABASE_URL!,
  log: createLogger(process.env.BENCH_LOG_LEVEL ?? 'info', pino.destination({ dest: 2, sync: false })),
});
if (config.roles.includes('api')) await startListeners(kasse);
if (config.roles.includes('workers')) startWorkers(kasse);
process.stdout.write(`${JSON.stringify({ test: config.roles.includes('api') ? kasse.apiBase('test') : null })}\n`);
process.on('SIGINT', () => process.exit(0));
