/**
 * The merchant dashboard with 100,000 payments in the mode: time to render Home (balances from the ledger, custody,
 * 30-day paid volume, recent payments) and the Payments list (first page; a filtered page), signed in, measured as a
 * browser would wait for them (sequential requests over loopback, gzip accepted). The baseline, measured in the same
 * run in alternating rounds, is the API answering the same reads as JSON: `GET /v1/balance` for Home and
 * `GET /v1/payments?limit=25` for the list — so the figures show what the pages add on top of the services they call.
 * Also the bytes of the dashboard's JavaScript and CSS as served (gzip).
 *
 * Data: 100,000 test-mode payments over the last 60 days (70 % paid, each with its coin choice, deposit and ledger
 * credit; the rest waiting or expired), written with set-based SQL; the app runs in this process on a throwaway
 * embedded PostgreSQL.
 */
import { loadavg } from 'node:os';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { FakeClock } from '../src/core/clock.ts';
import { createLogger } from '../src/core/log.ts';
import { Kasse } from '../src/kasse.ts';
import { startListeners } from '../src/server.ts';
import { testSecrets } from '../test/harness/app.ts';
import { servedAssetSizes } from './_assets.ts';
import { benchDatabase } from './_pg.ts';
import { OPERATOR } from '../src/modules/audit/index.ts';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PER_ROUND = Number(process.env.BENCH_REQUESTS ?? 20);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]! * 10) / 10;
};

async function seed(kasse: Kasse, merchantId: string, now: Date): Promise<void> {
  const db = kasse.db;
  const day = 86_400_000;
  await sql`
    INSERT INTO payments (id, merchant_id, mode, status, price_amount, price_currency, order_id, description, metadata, expires_at, paid_at, paid_attempt_id, paid_amount, credit_seq, credited, created_at, updated_at)
    SELECT 'pay_B' || lpad(g::text, 35, '0'), ${merchantId}, 'test',
      CASE WHEN g % 10 < 7 THEN 'paid' WHEN g % 10 < 9 THEN 'expired' ELSE 'waiting' END,
      100 + (g * 37) % 50000, 'USD', 'order-' || g, 'Bench order ' || g, '{}',
      ts + interval '1 day', CASE WHEN g % 10 < 7 THEN ts + interval '5 minutes' END,
      CASE WHEN g % 10 < 7 THEN 'att_B' || lpad(g::text, 25, '0') END,
      CASE WHEN g % 10 < 7 THEN ((100 + (g * 37) % 50000) * 10000)::numeric END,
      CASE WHEN g % 10 < 7 THEN 1 ELSE 0 END, g % 10 < 7, ts, ts
    FROM generate_series(1, ${PAYMENTS}) g, LATERAL (SELECT ${new Date(now.getTime() - 60 * day)}::timestamptz + (g::double precision / ${PAYMENTS}) * interval '60 days' AS ts) t
  `.execute(db);
  await sql`
    INSERT INTO attempts (id, payment_id, mode, chain, token, address, address_index, pay_amount, rate, rate_source, status, confirmation_tier, confirmations_required, expires_at, created_at)
    SELECT paid_attempt_id, id, 'test', 'base', 'base:usdc', '0x' || lpad(to_hex(row_number() OVER ()), 40, '0'), 1000000 + row_number() OVER (), paid_amount, '1', 'peg', 'paid', 0, 5, created_at + interval '10 minutes', created_at
    FROM payments WHERE merchant_id = ${merchantId} AND paid_attempt_id IS NOT NULL
  `.execute(db);
  await sql`
    INSERT INTO deposits (id, attempt_id, payment_id, mode, chain, token, tx_hash, log_index, amount, from_address, block_number, block_hash, status, confirmations, confirmations_required, value_cents, at_least_min, seen_at, created_at)
    SELECT 'dep_' || substr(a.id, 5), a.id, a.payment_id, 'test', 'base', 'base:usdc', '0x' || md5(a.id) || md5(a.payment_id), 0, a.pay_amount, '0x' || lpad('1', 40, '0'), 1, '0x00', 'final', 5, 5, p.price_amount, true, p.paid_at, p.paid_at
    FROM attempts a JOIN payments p ON p.id = a.payment_id WHERE p.merchant_id = ${merchantId}
  `.execute(db);
  await sql`
    INSERT INTO ledger_transactions (id, mode, merchant_id, kind, payment_id, dedupe_key, created_at)
    SELECT 'led_' || substr(id, 15), 'test', merchant_id, 'payment_credit', id, 'payment:' || id || ':credit:1', paid_at
    FROM payments WHERE merchant_id = ${merchantId} AND credited
  `.execute(db);
  await sql`
    INSERT INTO ledger_entries (transaction_id, account, currency, amount)
    SELECT 'led_' || substr(p.id, 15), e.account, e.currency, e.amount
    FROM payments p, LATERAL (VALUES
      ('test:settlement', 'USD', p.price_amount::numeric),
      ('test:merchant:' || p.merchant_id, 'USD', -(p.price_amount - (p.price_amount + 50) / 100)::numeric),
      ('test:fees', 'USD', -((p.price_amount + 50) / 100)::numeric),
      ('test:custody:' || p.merchant_id, 'base:usdc', p.paid_amount),
      ('test:payers', 'base:usdc', -p.paid_amount)
    ) AS e(account, currency, amount)
    WHERE p.merchant_id = ${merchantId} AND p.credited AND e.amount <> 0
  `.execute(db);
  await sql`ANALYZE`.execute(db);
}

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const config = loadConfig({
    KASSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'kasse-bench-data-')),
    KASSE_LIVE_PORT: '0',
    KASSE_TEST_PORT: '0',
    KASSE_CHECKOUT_PORT: '0',
    KASSE_LOG_LEVEL: 'silent',
    KASSE_COINGECKO_URL: 'http://127.0.0.1:9',
    KASSE_BINANCE_URL: 'http://127.0.0.1:9',
  });
  const clock = new FakeClock(new Date());
  const kasse = await Kasse.open({
    config,
    databaseUrl: pg.url,
    secrets: testSecrets(),
    log: createLogger('silent'),
    clock,
  });
  const listeners = await startListeners(kasse);
  try {
    const m = await kasse.merchants.create({ name: 'Bench Shop', webhookUrl: null });
    await kasse.merchants.update(m.merchant_id, { rateLimitPerMinute: 1_000_000 }, OPERATOR);
    const started = Date.now();
    await seed(kasse, m.merchant_id, clock.now());
    const seedSeconds = Math.round((Date.now() - started) / 100) / 10;
    // A signed-in member (no second factor needed) with a session cookie.
    const created = await kasse.users.team.create({
      merchantId: m.merchant_id,
      email: 'bench@example.com',
      role: 'member',
      actor: { type: 'operator', id: null, ip: null },
      invite: false,
    });
    const token = created.setup_url.split('/').pop()!;
    const { session } = await kasse.users.links.redeemToken(token, 'setup', 'bench-member-passphrase-1', {
      ip: null,
      userAgent: null,
    });
    const cookie = `kasse_session=${session.token}`;
    const checkout = kasse.urls.checkout;
    const api = kasse.apiBase('test');

    const targets = {
      home: { url: `${checkout}/dashboard/test`, headers: { cookie } },
      balance_api: { url: `${api}/balance`, headers: { authorization: `Bearer ${m.test_key}` } },
      payments: { url: `${checkout}/dashboard/test/payments`, headers: { cookie } },
      payments_api: { url: `${api}/payments?limit=25`, headers: { authorization: `Bearer ${m.test_key}` } },
      payments_filtered: {
        url: `${checkout}/dashboard/test/payments?status=paid&token=base%3Ausdc&from=${new Date(clock.millis() - 7 * 86_400_000).toISOString().slice(0, 10)}`,
        headers: { cookie },
      },
    } as const;
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
    const wire: Record<string, number> = {};
    const once = async (name: keyof typeof targets) => {
      const t = targets[name];
      const at = performance.now();
      const res = await fetch(t.url, { headers: { ...t.headers, 'accept-encoding': 'gzip' } });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status !== 200) throw new Error(`${name}: ${res.status} ${body.toString().slice(0, 200)}`);
      const ms = performance.now() - at;
      wire[name] = Number(res.headers.get('content-length') ?? gzipSync(body).length);
      return ms;
    };
    // Warm-up (JIT, pool, plan cache), then rounds alternating page and baseline.
    for (const name of Object.keys(targets) as Array<keyof typeof targets>)
      for (let i = 0; i < 3; i++) await once(name);
    const load: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      load.push(loadavg()[0]!);
      for (const name of Object.keys(targets) as Array<keyof typeof targets>) {
        for (let i = 0; i < PER_ROUND; i++) times[name]!.push(await once(name));
      }
    }
    const stats = Object.fromEntries(
      Object.entries(times).map(([k, xs]) => [
        k,
        { median_ms: pct(xs, 50), p95_ms: pct(xs, 95), requests: xs.length, response_bytes: wire[k] },
      ]),
    );
    const sizes = await servedAssetSizes(kasse);
    return {
      payments_in_mode: PAYMENTS,
      paid: Math.floor(PAYMENTS * 0.7),
      seed_seconds: seedSeconds,
      rounds: ROUNDS,
      requests_per_round: PER_ROUND,
      load_average_1m: load.map((x) => Math.round(x * 10) / 10),
      render: stats,
      ratio: {
        home_vs_balance_api: Math.round((stats.home!.median_ms / stats.balance_api!.median_ms) * 100) / 100,
        payments_vs_list_api: Math.round((stats.payments!.median_ms / stats.payments_api!.median_ms) * 100) / 100,
      },
      assets_gzip_bytes: { 'dashboard.js': sizes['dashboard.js']!.gzip, 'dashboard.css': sizes['dashboard.css']!.gzip },
      assets_raw_bytes: {
        'dashboard.js': sizes['dashboard.js']!.bytes,
        'dashboard.css': sizes['dashboard.css']!.bytes,
      },
    };
  } finally {
    await listeners.close();
    await kasse.close();
    await pg.stop();
  }
}
