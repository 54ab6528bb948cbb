/**
 * Webhook delivery throughput. Goal: 5,000 signed and logged deliveries per second with the receiver on the same
 * machine, or, where two cores cannot give that, Kasse's own CPU at most 120 µs per delivery.
 *
 * Kasse side: N events are published through the outbox (one ordering key each, a ~1 kB Payment-like `data`), then
 * the real delivery loop sends them to a local keep-alive receiver in a child process. Every delivery is signed,
 * POSTed and recorded (delivery row and attempt log) before it counts; the clock stops when the last result is in
 * the database. CPU time per delivery of the three processes (Kasse, PostgreSQL, receiver) is recorded.
 *
 * Bare side (the baseline): the same number of signed POSTs of a body of the same size to the same receiver through
 * a keep-alive undici pool at the same concurrency, with no database — what this machine gives for the HTTP part
 * alone. Rounds alternate between the sides so both see the same load; the load average is recorded with them.
 */
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/core/log.ts';
import { createHmac } from 'node:crypto';
import { Pool } from 'undici';
import { withTx } from '../src/db/index.ts';
import { Kasse } from '../src/kasse.ts';
import { startWorkers } from '../src/workers/index.ts';
import { startChild } from './_child.ts';
import { benchDatabase } from './_pg.ts';
import { cpuSeconds, postgresCpu, postmasterOf } from './_cpu.ts';

function paymentLike(i: number) {
  const id = `pay_${String(i).padStart(36, '0')}`;
  return {
    id,
    status: 'paid',
    price_amount: 1999,
    price_currency: 'USD',
    order_id: `order-${i}`,
    description: 'Benchmark order',
    checkout_url: `https://checkout.example/p/${id}`,
    expires_at: '2026-03-02T12:00:00.000Z',
    paid_at: '2026-03-01T12:03:00.000Z',
    paid_attempt_id: 'att_01J0000000000000000000000',
    success_url: null,
    cancel_url: null,
    metadata: { customer: 'c_123', cart: [1, 2, 3] },
    created_at: '2026-03-01T12:00:00.000Z',
    attempts: [
      {
        id: 'att_01J0000000000000000000000',
        chain: 'base',
        token: 'base:usdc',
        symbol: 'USDC',
        address: '0x1111111111111111111111111111111111111111',
        pay_amount: '19990000',
        pay_amount_display: '19.99',
        received_amount: '19990000',
        received_amount_display: '19.99',
        rate: '1.00',
        rate_source: 'peg',
        status: 'paid',
        overpaid: false,
        wrong_asset: false,
        confirmation_tier: 1,
        confirmations_required: 3,
        expires_at: '2026-03-01T12:10:00.000Z',
        uri: null,
        deposits: [],
      },
    ],
  };
}

async function receivedCount(url: string): Promise<{ count: number; bad: number }> {
  return (await fetch(url)).json() as Promise<{ count: number; bad: number }>;
}

interface Round {
  deliveries_per_sec: number;
  seconds: number;
  cpu_us_per_delivery: { kasse: number; postgres?: number; receiver: number };
  load_average: number;
}

/** The bare side: signed POSTs of a stored body, no database. */
async function bareRound(
  url: string,
  events: number,
  concurrency: number,
  body: string,
  receiverPid: number,
): Promise<Round> {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: concurrency });
  const load = loadavg()[0]!;
  const cpu0 = { self: process.cpuUsage(), receiver: cpuSeconds(receiverPid) };
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < events) {
        const i = next++;
        const t = Math.floor(Date.now() / 1000);
        const sig = `t=${t},v1=${createHmac('sha256', 'whsec_bench').update(`${t}.`).update(body).digest('hex')}`;
        const res = await pool.request({
          path: target.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'service-signature': sig,
            'service-event-id': `evt_${i}`,
            'service-event-type': 'payment.paid',
          },
          body,
        });
        await res.body.text();
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const self = process.cpuUsage(cpu0.self);
  await pool.close();
  return {
    deliveries_per_sec: Math.round(events / seconds),
    seconds: Math.round(seconds * 100) / 100,
    cpu_us_per_delivery: {
      kasse: Math.round((self.user + self.system) / events),
      receiver: Math.round(((cpuSeconds(receiverPid) - cpu0.receiver) * 1e6) / events),
    },
    load_average: Math.round(load * 10) / 10,
  };
}

/** The Kasse side: publish N events, then let the workers deliver them; the clock runs from start to last record. */
async function kasseRound(
  kasse: Kasse,
  merchantId: string,
  events: number,
  round: number,
  receiverPid: number,
  postmaster: number,
): Promise<Round & { publish_per_sec: number }> {
  const publishStart = performance.now();
  const perTx = 1000;
  for (let i = 0; i < events; i += perTx) {
    await withTx(kasse.db, async (tx) => {
      const batch = [];
      for (let j = i; j < Math.min(events, i + perTx); j++) {
        const data = paymentLike(round * events + j);
        batch.push({
          mode: 'test' as const,
          merchantId,
          type: 'payment.paid',
          orderingKey: data.id,
          data,
          destination: null,
        });
      }
      await kasse.webhooks.publishMany(tx, batch);
    });
  }
  const publishSeconds = (performance.now() - publishStart) / 1000;
  await sql`ANALYZE webhook_deliveries`.execute(kasse.db);

  const load = loadavg()[0]!;
  const cpuBefore = { kasse: process.cpuUsage(), postgres: postgresCpu(postmaster), receiver: cpuSeconds(receiverPid) };
  const start = performance.now();
  const workers = startWorkers(kasse);
  let pending = events;
  while (pending > 0) {
    await new Promise((r) => setTimeout(r, 50));
    const row = await sql<{ n: string }>`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`.execute(
      kasse.db,
    );
    pending = Number(row.rows[0]!.n);
  }
  const seconds = (performance.now() - start) / 1000;
  const kasseCpu = process.cpuUsage(cpuBefore.kasse);
  const perDelivery = (cpuSecs: number) => Math.round((cpuSecs * 1e6) / events);
  const cpu = {
    kasse: perDelivery((kasseCpu.user + kasseCpu.system) / 1e6),
    postgres: perDelivery(postgresCpu(postmaster) - cpuBefore.postgres),
    receiver: perDelivery(cpuSeconds(receiverPid) - cpuBefore.receiver),
  };
  await workers.stop();
  return {
    deliveries_per_sec: Math.round(events / seconds),
    seconds: Math.round(seconds * 100) / 100,
    cpu_us_per_delivery: cpu,
    load_average: Math.round(load * 10) / 10,
    publish_per_sec: Math.round(events / publishSeconds),
  };
}

const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);

/** `uptime`'s line (load averages over 1, 5 and 15 minutes): the machine is shared. */
const uptime = () => execSync('uptime').toString().trim();

export async function run(): Promise<object> {
  const uptimeBefore = uptime();
  const events = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 20_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const pg = await benchDatabase();
  const receiver = await startChild<{ url: string }>('bench/servers/webhook-receiver.ts', {});
  const config = loadConfig({ ...process.env, KASSE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
  const kasse = await Kasse.open({ config, databaseUrl: pg.url, log: createLogger(config.logLevel, process.stderr) });
  const pid = receiver.child.pid!;
  const postmaster = await postmasterOf(pg.url);
  try {
    const merchant = await kasse.merchants.create({ name: 'Bench', webhookUrl: receiver.info.url });
    const sample = paymentLike(0);
    const body = `{"id":"evt_01J00000000000000000000000","type":"payment.paid","created_at":"2026-03-01T12:03:00.000Z","data":${JSON.stringify(sample)}}`;
    const bare: Round[] = [];
    const measured: Array<Round & { publish_per_sec: number }> = [];
    for (let r = 0; r < rounds; r++) {
      bare.push(await bareRound(receiver.info.url, events, config.webhooks.concurrency, body, pid));
      measured.push(await kasseRound(kasse, merchant.merchant_id, events, r, pid, postmaster));
    }
    const logged = await sql<{
      n: string;
    }>`SELECT count(*) AS n FROM webhook_attempts WHERE outcome = 'delivered'`.execute(kasse.db);
    const got = await receivedCount(receiver.info.url);
    const summary = (xs: Round[]) => ({
      deliveries_per_sec: mean(xs.map((x) => x.deliveries_per_sec)),
      cpu_us_per_delivery: Object.fromEntries(
        Object.keys(xs[0]!.cpu_us_per_delivery).map((k) => [
          k,
          mean(xs.map((x) => (x.cpu_us_per_delivery as Record<string, number>)[k]!)),
        ]),
      ),
    });
    return {
      events_per_round: events,
      rounds,
      concurrency: config.webhooks.concurrency,
      body_bytes: Buffer.byteLength(body),
      kasse: { ...summary(measured), rounds: measured },
      bare: { ...summary(bare), rounds: bare },
      ratio_to_bare:
        Math.round(
          (mean(measured.map((x) => x.deliveries_per_sec)) / mean(bare.map((x) => x.deliveries_per_sec))) * 100,
        ) / 100,
      uptime: { before: uptimeBefore, after: uptime() },
      attempts_logged: Number(logged.rows[0]!.n),
      receiver_acknowledged: got.count - rounds * events,
      receiver_bad_signatures: got.bad,
      goal: { deliveries_per_sec: 5000, or_kasse_cpu_us_per_delivery: 120 },
    };
  } finally {
    await kasse.close();
    await receiver.stop();
    await pg.stop();
  }
}
