/**
 * Webhook delivery throughput (goal: at least 2,000 deliveries per second on 2 cores). N events are published
 * through the outbox (one ordering key each, a ~1 kB Payment-like `data`), then the real delivery loop sends them
 * to a local keep-alive receiver in a child process. Every delivery is signed, POSTed and recorded (delivery row
 * and attempt log) before it counts; the clock stops when the last result is in the database. CPU time per
 * delivery of the three processes (Kasse, PostgreSQL, receiver) and the load average are recorded with the result,
 * because on a shared machine the rate depends on what else runs.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/core/log.ts';
import { withTx } from '../src/db/index.ts';
import { Kasse } from '../src/kasse.ts';
import { startWorkers } from '../src/workers/index.ts';
import { startChild } from './_child.ts';
import { benchDatabase } from './_pg.ts';

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

/** CPU seconds (user + system) a process has used, including its reaped children (PostgreSQL backends). */
function cpuSeconds(pid: number, withChildren = false): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0);
  return ticks / 100;
}

/** CPU seconds of the whole PostgreSQL server: the postmaster, its live children and those already gone. */
async function postgresCpu(kasse: Kasse): Promise<number> {
  const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(kasse.db);
  const postmaster = Number(readFileSync(`/proc/${rows[0]!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
  const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  let total = cpuSeconds(postmaster, true);
  for (const c of children) {
    try {
      total += cpuSeconds(c);
    } catch {
      // exited meanwhile; counted in the postmaster's children time
    }
  }
  return total;
}

async function receivedCount(url: string): Promise<{ count: number; bad: number }> {
  return (await fetch(url)).json() as Promise<{ count: number; bad: number }>;
}

export async function run(): Promise<object> {
  const events = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 20_000);
  const pg = await benchDatabase();
  const receiver = await startChild<{ url: string }>('bench/servers/webhook-receiver.ts', {});
  const config = loadConfig({ ...process.env, KASSE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn' });
  const kasse = await Kasse.open({ config, databaseUrl: pg.url, log: createLogger(config.logLevel, process.stderr) });
  try {
    const merchant = await kasse.merchants.create({ name: 'Bench', webhookUrl: receiver.info.url });

    const publishStart = performance.now();
    const perTx = 100;
    for (let i = 0; i < events; i += perTx) {
      await withTx(kasse.db, async (tx) => {
        for (let j = i; j < Math.min(events, i + perTx); j++) {
          const data = paymentLike(j);
          await kasse.webhooks.publish(tx, { mode: 'test', merchantId: merchant.merchant_id, type: 'payment.paid', orderingKey: data.id, data, destination: null });
        }
      });
    }
    const publishSeconds = (performance.now() - publishStart) / 1000;

    const loadBefore = loadavg()[0]!;
    const cpuBefore = { kasse: process.cpuUsage(), postgres: await postgresCpu(kasse), receiver: cpuSeconds(receiver.child.pid!) };
    const start = performance.now();
    const workers = startWorkers(kasse);
    let pending = events;
    while (pending > 0) {
      await new Promise((r) => setTimeout(r, 100));
      const row = await sql<{ n: string }>`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`.execute(kasse.db);
      pending = Number(row.rows[0]!.n);
    }
    const seconds = (performance.now() - start) / 1000;
    const kasseCpu = process.cpuUsage(cpuBefore.kasse);
    const perDelivery = (cpuSecs: number) => Math.round((cpuSecs * 1e6) / events);
    const cpu = {
      kasse: perDelivery((kasseCpu.user + kasseCpu.system) / 1e6),
      postgres: perDelivery((await postgresCpu(kasse)) - cpuBefore.postgres),
      receiver: perDelivery(cpuSeconds(receiver.child.pid!) - cpuBefore.receiver),
    };
    await workers.stop();

    const logged = await sql<{ n: string }>`SELECT count(*) AS n FROM webhook_attempts WHERE outcome = 'delivered'`.execute(kasse.db);
    const got = await receivedCount(receiver.info.url);
    return {
      events,
      concurrency: config.webhooks.concurrency,
      publish_per_sec: Math.round(events / publishSeconds),
      deliveries_per_sec: Math.round(events / seconds),
      seconds: Math.round(seconds * 100) / 100,
      cpu_us_per_delivery: cpu,
      load_average: { before: Math.round(loadBefore * 10) / 10, after: Math.round(loadavg()[0]! * 10) / 10 },
      attempts_logged: Number(logged.rows[0]!.n),
      receiver_acknowledged: got.count,
      receiver_bad_signatures: got.bad,
      goal_per_sec: 2000,
    };
  } finally {
    await kasse.close();
    await receiver.stop();
    await pg.stop();
  }
}
