/**
 * Subscriptions: (1) the scheduler invoicing 100,000 subscriptions due at once (BENCH_SUBSCRIPTIONS) — for each a
 * payment, its invoice row, the subscription's new state, a `subscription.invoiced` event and the invoice email in
 * the outbox, in transactions of the scheduler's batch size, `SCHEDULER_LANES` of them at once — against a bare
 * INSERT of the same number of payment rows in batches of the same size, one after another, in the same run, rounds
 * alternating (goal: at least 0.5 of the bare inserts' throughput). The bare INSERT is also measured with as many
 * batches at once as the scheduler writes, so the record shows what running batches side by side gives by itself;
 * (2) the email sender's messages per second to a local SMTP receiver (BENCH_MAILS), batches over several
 * connections.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { english, generateMnemonic } from 'viem/accounts';
import { loadConfig } from '../src/config.ts';
import { FakeClock } from '../src/core/clock.ts';
import { newId } from '../src/core/ids.ts';
import { createLogger } from '../src/core/log.ts';
import { withTx } from '../src/db/index.ts';
import { Kasse } from '../src/kasse.ts';
import { SCHEDULER_BATCH, SCHEDULER_LANES } from '../src/modules/subscriptions/scheduler.ts';
import { dueSubscriptions, seedSubscriptions } from '../test/harness/subscriptions.ts';
import { startChild } from './_child.ts';
import { benchDatabase } from './_pg.ts';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** `n` monthly subscriptions of `merchantId`, all due at `at`, written in bulk. */
async function seed(kasse: Kasse, merchantId: string, n: number, at: Date): Promise<void> {
  for (let i = 0; i < n; i += 10_000) {
    const rows = dueSubscriptions(merchantId, Math.min(10_000, n - i), at, (j) => ({
      customer_email: `customer${i + j}@example.com`,
      title: 'Coffee club',
      amount_usd_cents: 1500,
    }));
    await seedSubscriptions(kasse.db, rows);
  }
}

/**
 * The baseline: `n` bare payment rows, INSERTed in batches of the scheduler's size, one transaction each, by
 * `streams` loops at once (1: one batch after another).
 */
async function bareInsert(kasse: Kasse, merchantId: string, n: number, at: Date, streams = 1): Promise<number> {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: streams }, (_, k) => bareStream(kasse, merchantId, n, at, k, streams)));
  return performance.now() - t0;
}

async function bareStream(
  kasse: Kasse,
  merchantId: string,
  n: number,
  at: Date,
  k: number,
  streams: number,
): Promise<void> {
  for (let i = k * SCHEDULER_BATCH; i < n; i += SCHEDULER_BATCH * streams) {
    const rows = Array.from({ length: Math.min(SCHEDULER_BATCH, n - i) }, (_, j) => ({
      id: newId('pay'),
      merchant_id: merchantId,
      mode: 'test' as const,
      status: 'waiting' as const,
      price_amount: 1500,
      price_currency: 'USD',
      order_id: `bare-${i + j}`,
      description: null,
      success_url: null,
      cancel_url: null,
      webhook_url: null,
      metadata: '{}',
      expires_at: new Date(at.getTime() + 86_400_000),
      created_at: at,
      updated_at: at,
    }));
    await withTx(kasse.db, (tx) => tx.insertInto('payments').values(rows).execute());
  }
}

export async function run(): Promise<object> {
  const n = Number(process.env.BENCH_SUBSCRIPTIONS ?? 100_000);
  const mails = Number(process.env.BENCH_MAILS ?? 2_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const loadBefore = loadavg()[0]!;
  const pg = await benchDatabase();
  const receiver = await startChild<{ url: string; countUrl: string }>('bench/servers/smtp-receiver.ts', {});
  const config = loadConfig({
    KASSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'kasse-bench-data-')),
    KASSE_LOG_LEVEL: 'silent',
    KASSE_SMTP_URL: receiver.info.url,
    KASSE_MAIL_FROM: 'Bench <bench@example.com>',
  });
  const clock = new FakeClock('2026-04-01T00:00:00Z');
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
    const bareMs: number[] = [];
    const bareSideBySideMs: number[] = [];
    const schedulerMs: number[] = [];
    let invoiced = 0;
    for (let r = 0; r < rounds; r++) {
      const merchantId = (await kasse.merchants.create({ name: `Bench shop ${r}` })).merchant_id;
      const at = clock.now();
      await seed(kasse, merchantId, n, at);
      await sql`VACUUM ANALYZE`.execute(kasse.db);
      const scheduler = async () => {
        const t0 = performance.now();
        const result = await kasse.subscriptions.runDue();
        schedulerMs.push(performance.now() - t0);
        if (result.invoiced !== n) throw new Error(`invoiced ${result.invoiced} of ${n}`);
        invoiced += result.invoiced;
      };
      const bare = async () => {
        bareMs.push(await bareInsert(kasse, merchantId, n, at));
        bareSideBySideMs.push(await bareInsert(kasse, merchantId, n, at, SCHEDULER_LANES));
      };
      if (r % 2 === 0) {
        await bare();
        await scheduler();
      } else {
        await scheduler();
        await bare();
      }
      clock.advance(60_000);
    }
    const bareRate = n / (median(bareMs) / 1000);
    const bareSideBySideRate = n / (median(bareSideBySideMs) / 1000);
    const schedulerRate = n / (median(schedulerMs) / 1000);
    const outbox = await sql<{
      n: string;
    }>`SELECT count(*) AS n FROM email_outbox WHERE kind = 'subscription.invoice'`.execute(kasse.db);
    if (Number(outbox.rows[0]!.n) !== invoiced)
      throw new Error(`expected ${invoiced} invoice mails, found ${outbox.rows[0]!.n}`);

    // The email sender: `mails` invoice emails from the outbox to the local receiver, one worker pass.
    await sql`DELETE FROM email_outbox`.execute(kasse.db);
    const merchantId = (await kasse.merchants.create({ name: 'Mail shop' })).merchant_id;
    await seed(kasse, merchantId, mails, clock.now());
    await kasse.subscriptions.runDue();
    const receivedBefore = ((await (await fetch(receiver.info.countUrl)).json()) as { count: number }).count;
    const t0 = performance.now();
    const sent = await kasse.email.runOnce();
    const mailSeconds = (performance.now() - t0) / 1000;
    const received = ((await (await fetch(receiver.info.countUrl)).json()) as { count: number }).count - receivedBefore;
    if (received !== mails || sent !== mails) throw new Error(`sent ${sent}, received ${received} of ${mails}`);
    return {
      subscriptions: n,
      batch: SCHEDULER_BATCH,
      lanes: SCHEDULER_LANES,
      rounds,
      bare_insert_ms: { median: Math.round(median(bareMs)), all: bareMs.map(Math.round) },
      scheduler_ms: { median: Math.round(median(schedulerMs)), all: schedulerMs.map(Math.round) },
      bare_rows_per_second: Math.round(bareRate),
      scheduler_invoices_per_second: Math.round(schedulerRate),
      ratio: Math.round((schedulerRate / bareRate) * 100) / 100,
      bare_side_by_side_ms: { median: Math.round(median(bareSideBySideMs)), all: bareSideBySideMs.map(Math.round) },
      bare_side_by_side_rows_per_second: Math.round(bareSideBySideRate),
      ratio_to_side_by_side: Math.round((schedulerRate / bareSideBySideRate) * 100) / 100,
      goal_ratio: 0.5,
      email: {
        messages: mails,
        seconds: Math.round(mailSeconds * 100) / 100,
        per_second: Math.round(mails / mailSeconds),
      },
      load_average: { start: loadBefore, end: loadavg()[0]! },
    };
  } finally {
    await kasse.close();
    await receiver.stop();
    await pg.stop();
  }
}
