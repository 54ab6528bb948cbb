/**
 * Child process for API benchmarks: Kasse's listeners with the default configuration (info access logs written
 * asynchronously as in production, here to stderr; metrics; auth; rate limiting) next to bare Fastify routes in
 * the same process, so both are measured in the same run.
 * Prints one JSON line with the URLs and a test key, then serves until killed.
 */
import Fastify from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createLogger, logDestination } from '../../src/core/log.ts';
import { newId } from '../../src/core/ids.ts';
import { Kasse } from '../../src/kasse.ts';
import { startListeners } from '../../src/server.ts';
import { startWorkers } from '../../src/workers/index.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

// Statements sent to PostgreSQL by this process (BEGIN and COMMIT included), so benchmarks can report them per request.
let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

const config = loadConfig({ ...process.env, KASSE_LIVE_PORT: '0', KASSE_TEST_PORT: '0', KASSE_CHECKOUT_PORT: '0' });
const kasse = await Kasse.open({
  config,
  databaseUrl: process.env.DATABASE_URL!,
  log: createLogger(process.env.BENCH_LOG_LEVEL ?? 'info', logDestination(2)),
});
await startListeners(kasse);
startWorkers(kasse);
const merchant = await kasse.merchants.create({ name: 'Bench' });
await kasse.merchants.update(
  merchant.merchant_id,
  {
    rateLimitPerMinute: 1_000_000_000,
    x402RateLimitPerMinute: 1_000_000_000,
  },
  OPERATOR,
);

// More merchants when a benchmark spreads its load over several (BENCH_MERCHANTS), with the same limits.
const others: string[] = [];
for (let i = 0; i < Number(process.env.BENCH_MERCHANTS ?? 0); i++) {
  const m = await kasse.merchants.create({ name: `Bench ${i + 2}` });
  await kasse.merchants.update(
    m.merchant_id,
    {
      rateLimitPerMinute: 1_000_000_000,
      x402RateLimitPerMinute: 1_000_000_000,
    },
    OPERATOR,
  );
  others.push(m.test_key);
}

// The baselines: the same framework with no Kasse middleware.
const bare = Fastify();
bare.get('/bare', async () => ({ ok: true }));
// A JSON body read and answered, nothing else: an HTTP round trip of a body's size.
bare.post('/bare-echo', async (req) => ({ ok: typeof req.body === 'object' }));
await sql`CREATE TABLE IF NOT EXISTS bench_rows (id text PRIMARY KEY, merchant_id text, mode text, status text, price_amount bigint,
  order_id text, description text, metadata jsonb, expires_at timestamptz, created_at timestamptz)`.execute(kasse.db);
bare.post('/bare-insert', async (req) => {
  const body = req.body as { price_amount: number; order_id: string; description?: string; metadata?: unknown };
  const { rows } =
    await sql`INSERT INTO bench_rows VALUES (${newId('pay')}, ${merchant.merchant_id}, 'test', 'waiting', ${body.price_amount},
    ${body.order_id}, ${body.description ?? null}, ${JSON.stringify(body.metadata ?? {})}, now() + interval '1 day', now()) RETURNING *`.execute(
      kasse.db,
    );
  const row = rows[0] as Record<string, unknown>;
  return { ...row, price_amount: Number(row.price_amount) };
});
// CPU time of this process, so benchmarks can report CPU per request (steadier than throughput on a shared machine).
bare.get('/cpu', async () => ({ ...process.cpuUsage(), statements }));
await bare.listen({ port: 0, host: '127.0.0.1' });
const { port } = bare.server.address() as { port: number };

process.stdout.write(
  `${JSON.stringify({ test: kasse.apiBase('test'), checkout: kasse.urls.checkout, bare: `http://127.0.0.1:${port}`, key: merchant.test_key, merchant: merchant.merchant_id, keys: others })}\n`,
);
process.on('SIGINT', () => process.exit(0));
