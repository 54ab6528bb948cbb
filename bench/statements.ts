/**
 * The statement of a month with 1,000,000 payments (BENCH_STATEMENT_PAYMENTS) against a bare `SELECT sum()` over the
 * same ledger rows (the merchant's postings of that month joined to their entries), in the same run, rounds
 * alternating between the two (goal: at most 3 times the bare sum).
 *
 * The month is loaded in bulk as the payment paths would have written it: 90 % of the payments credited in USDC,
 * 10 % in ETH (conversions, with the spread), 1 % of them reorged afterwards (reversal), each with its `payment.paid`
 * (and `payment.reorged`) event; a day of the previous month sets an opening balance. The statement's
 * reconciliation gap must come out 0, which checks the load as well as the statement.
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { english, generateMnemonic } from 'viem/accounts';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config.ts';
import { FakeClock } from '../src/core/clock.ts';
import { createLogger } from '../src/core/log.ts';
import { Kasse } from '../src/kasse.ts';
import { benchDatabase } from './_pg.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Loads `n` payments of `merchantId` spread over [start, start + days), with their postings and events. */
export async function load(
  kasse: Kasse,
  merchantId: string,
  n: number,
  start: string,
  days: number,
  offset: number,
): Promise<void> {
  const step = (days * 86_400) / n;
  const base = sql`SELECT i, ${start}::timestamptz + (i - ${offset}) * make_interval(secs => ${step}::float8) AS ts,
      100 + (i % 9900) AS price, i % 10 = 0 AS eth, i % 100 = 0 AS reorged
    FROM generate_series(${offset + 1}::bigint, ${offset + n}::bigint) i`;
  const db = kasse.db;
  await sql`
    INSERT INTO payments (id, merchant_id, mode, status, price_amount, price_currency, order_id, metadata, expires_at, paid_at, credit_seq, credited, created_at, updated_at)
    SELECT 'pay_' || lpad(i::text, 36, '0'), ${merchantId}, 'test', CASE WHEN reorged THEN 'waiting' ELSE 'paid' END, price, 'USD', 'order-' || i, '{}',
      ts + interval '1 day', CASE WHEN reorged THEN NULL ELSE ts END, 1, NOT reorged, ts, ts
    FROM (${base}) s`.execute(db);
  await sql`
    INSERT INTO events (id, merchant_id, mode, type, ordering_key, destination, data, created_at)
    SELECT 'evt_' || e.kind || lpad(i::text, 24, '0'), ${merchantId}, 'test', e.type, 'pay_' || lpad(i::text, 36, '0'), NULL, '{}', e.at
    FROM (${base}) s CROSS JOIN LATERAL (VALUES ('P', 'payment.paid', ts), ('R', 'payment.reorged', ts + interval '1 minute')) e(kind, type, at)
    WHERE e.kind = 'P' OR reorged`.execute(db);
  await sql`
    INSERT INTO ledger_transactions (id, mode, merchant_id, kind, payment_id, dedupe_key, reverses, token, created_at)
    SELECT 'led_C' || lpad(i::text, 22, '0'), 'test', ${merchantId}, CASE WHEN eth THEN 'payment_conversion' ELSE 'payment_credit' END,
      'pay_' || lpad(i::text, 36, '0'), 'payment:pay_' || lpad(i::text, 36, '0') || ':credit:1', NULL, CASE WHEN eth THEN 'base:eth' ELSE 'base:usdc' END, ts
    FROM (${base}) s`.execute(db);
  await sql`
    INSERT INTO ledger_transactions (id, mode, merchant_id, kind, payment_id, dedupe_key, reverses, token, created_at)
    SELECT 'led_R' || lpad(i::text, 22, '0'), 'test', ${merchantId}, 'payment_reorg', 'pay_' || lpad(i::text, 36, '0'),
      'payment:pay_' || lpad(i::text, 36, '0') || ':reversal:1', 'led_C' || lpad(i::text, 22, '0'), CASE WHEN eth THEN 'base:eth' ELSE 'base:usdc' END, ts + interval '1 minute'
    FROM (${base}) s WHERE reorged`.execute(db);
  // Lines of each credit (fee 1 %, spread 0.5 % on ETH, both half up), and their negation for the reorged ones.
  await sql`
    INSERT INTO ledger_entries (transaction_id, account, currency, amount)
    SELECT tx, account, currency, sign * amount FROM (
      SELECT i, eth, reorged, (price * 100 + 5000) / 10000 AS fee, CASE WHEN eth THEN (price * 50 + 5000) / 10000 ELSE 0 END AS swap, price,
        CASE WHEN eth THEN price * 5000000000000 ELSE price * 10000 END AS coins, CASE WHEN eth THEN 'base:eth' ELSE 'base:usdc' END AS token
      FROM (${base}) b
    ) s
    CROSS JOIN LATERAL (VALUES ('led_C' || lpad(i::text, 22, '0'), 1), ('led_R' || lpad(i::text, 22, '0'), -1)) t(tx, sign)
    CROSS JOIN LATERAL (VALUES
      ('test:settlement', 'USD', price::numeric),
      (${`test:merchant:${merchantId}`}, 'USD', -(price - fee - swap)::numeric),
      ('test:fees', 'USD', -fee::numeric),
      ('test:conversion', 'USD', -swap::numeric),
      (${`test:custody:${merchantId}`}, token, coins::numeric),
      ('test:payers', token, -coins::numeric)
    ) l(account, currency, amount)
    WHERE amount <> 0 AND (sign = 1 OR reorged)`.execute(db);
}

export async function run(): Promise<object> {
  const n = Number(process.env.BENCH_STATEMENT_PAYMENTS ?? 1_000_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  // The machine is shared: its load (1-minute average) at the start and the end says how busy it was.
  const loadBefore = loadavg()[0]!;
  const pg = await benchDatabase();
  const config = loadConfig({
    KASSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'kasse-bench-data-')),
    KASSE_LOG_LEVEL: 'silent',
  });
  const clock = new FakeClock('2026-04-15T00:00:00Z');
  const kasse = await Kasse.open({
    config,
    databaseUrl: pg.url,
    clock,
    log: createLogger('silent'),
    secrets: { secretKey: randomBytes(32), masterSeed: generateMnemonic(english), hotWalletKey: null },
    listen: false,
    poolSize: 4,
  });
  try {
    const merchantId = (await kasse.merchants.create({ name: 'Bench shop' })).merchant_id;
    const started = performance.now();
    // Rows are balanced by construction; the per-row balance trigger is for single postings, not a bulk load.
    await sql`ALTER TABLE ledger_entries DISABLE TRIGGER ledger_entries_balanced`.execute(kasse.db);
    await load(kasse, merchantId, Math.ceil(n / 30), '2026-02-27T00:00:00Z', 1, 0); // the previous month's last day
    await load(kasse, merchantId, n, '2026-03-01T00:00:00Z', 30, n);
    await sql`ALTER TABLE ledger_entries ENABLE TRIGGER ledger_entries_balanced`.execute(kasse.db);
    await sql`VACUUM ANALYZE`.execute(kasse.db);
    const loadSeconds = (performance.now() - started) / 1000;
    const rows = await sql<{ transactions: string; entries: string }>`
      SELECT count(DISTINCT t.id) AS transactions, count(*) AS entries FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
      WHERE t.merchant_id = ${merchantId} AND t.mode = 'test' AND t.created_at >= '2026-03-01' AND t.created_at < '2026-04-01'`.execute(
      kasse.db,
    );

    const bare = async () => {
      const t0 = performance.now();
      await sql`SELECT sum(e.amount) FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
        WHERE t.merchant_id = ${merchantId} AND t.mode = 'test' AND t.created_at >= '2026-03-01' AND t.created_at < '2026-04-01'`.execute(
        kasse.db,
      );
      return performance.now() - t0;
    };
    let statement: Awaited<ReturnType<typeof kasse.statements.get>> | null = null;
    const full = async () => {
      const t0 = performance.now();
      statement = await kasse.statements.get({ mode: 'test', merchantId: merchantId }, '2026-03');
      return performance.now() - t0;
    };
    await bare();
    await full();
    const bareMs: number[] = [];
    const statementMs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        bareMs.push(await bare());
        statementMs.push(await full());
      } else {
        statementMs.push(await full());
        bareMs.push(await bare());
      }
    }
    const s = statement!;
    if (s.reconciliation_gap_usd_cents !== 0)
      throw new Error(`reconciliation gap ${s.reconciliation_gap_usd_cents} on the bench data`);
    const ratio = Math.round((median(statementMs) / median(bareMs)) * 100) / 100;
    return {
      payments: n,
      month_rows: { transactions: Number(rows.rows[0]!.transactions), entries: Number(rows.rows[0]!.entries) },
      load_seconds: Math.round(loadSeconds),
      rounds,
      bare_sum_ms: { median: Math.round(median(bareMs)), all: bareMs.map(Math.round) },
      statement_ms: { median: Math.round(median(statementMs)), all: statementMs.map(Math.round) },
      ratio,
      goal_ratio: 3,
      load_average: { start: loadBefore, end: loadavg()[0]! },
      statement: {
        payments: s.payments,
        credits: s.credits,
        conversions: s.conversions,
        reversals: s.reversals,
        opening: s.opening_balance_usd_cents,
        closing: s.closing_balance_usd_cents,
        gap: s.reconciliation_gap_usd_cents,
      },
    };
  } finally {
    await kasse.close();
    await pg.stop();
  }
}
