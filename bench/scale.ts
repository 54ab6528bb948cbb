/**
 * Scale-out on one PostgreSQL: the same mixed load against two topologies, in alternating rounds of one run.
 *
 * - `one_process`: a single Kasse process with every role (`KASSE_ROLES=api,workers`, the default).
 * - `split`: the API role in two processes (`KASSE_ROLES=api`) and the workers in a third (`KASSE_ROLES=workers`).
 *
 * The load is what a shop's traffic looks like to Kasse: `POST /payments` as an integration sends it (a fresh
 * Idempotency-Key on every request, metadata, success and cancel URLs) at 64 connections, spread evenly over the
 * API processes, while the workers deliver signed webhooks to a keep-alive receiver in another process. Creating a
 * payment sends no webhook (payments notify on state changes), so before each round the bench tops the outbox up to
 * a backlog of events (as payments being paid would), which the worker process delivers during the round.
 *
 * Per round it records payments created per second (answered 201), webhook deliveries recorded per second, and the
 * CPU of every process (Kasse processes, PostgreSQL, receiver) as cores used. Each topology is started fresh for
 * its round and stopped after it, so only one runs at a time.
 */
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/core/log.ts';
import { withTx } from '../src/db/index.ts';
import { Kasse } from '../src/kasse.ts';
import { startChild } from './_child.ts';
import { paymentBody } from './payments.ts';
import { benchDatabase } from './_pg.ts';
import { cpuSeconds, postgresCpu, postmasterOf } from './_cpu.ts';
import { OPERATOR } from '../src/modules/audit/index.ts';

const CONNECTIONS = 64;
type Topology = 'one_process' | 'split';
const TOPOLOGIES: Record<Topology, string[]> = { one_process: ['api,workers'], split: ['api', 'api', 'workers'] };

const createBody = paymentBody();

/** A Payment-like event body, about the size of a real one. */
function eventData(i: number) {
  const id = `pay_scale_${i}`;
  return {
    id,
    status: 'paid',
    price_amount: 2500,
    price_currency: 'USD',
    order_id: `order-${i}`,
    description: 'Two mugs and a teapot',
    metadata: { customer: 'c_1', cart: [1, 2, 3] },
    checkout_url: `https://checkout.example/p/${id}`,
    paid_at: '2026-03-01T12:03:00.000Z',
    created_at: '2026-03-01T12:00:00.000Z',
  };
}

let keySeq = 0;

/** POST /payments at `CONNECTIONS` connections spread evenly over the API base URLs, all at once. */
async function createPayments(
  bases: string[],
  key: string,
  seconds: number,
): Promise<{ created: number; non_2xx: number; errors: number; p99_ms: number[] }> {
  const per = CONNECTIONS / bases.length;
  const runs = await Promise.all(
    bases.map((base) =>
      autocannon({
        url: `${base}/payments`,
        method: 'POST',
        connections: per,
        duration: seconds,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req: Record<string, unknown>) => {
              const i = ++keySeq;
              return {
                ...req,
                headers: { ...(req.headers as Record<string, string>), 'idempotency-key': `scale-${i}` },
                body: createBody(i),
              };
            },
          },
        ],
      }),
    ),
  );
  return {
    created: runs.reduce((n, r) => n + r.requests.total - r.non2xx, 0),
    non_2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    p99_ms: runs.map((r) => r.latency.p99),
  };
}

async function count(kasse: Kasse, status: string): Promise<number> {
  const { rows } = await sql<{
    n: string;
  }>`SELECT count(*) AS n FROM webhook_deliveries WHERE status = ${status}`.execute(kasse.db);
  return Number(rows[0]!.n);
}

async function topUp(kasse: Kasse, merchantId: string, backlog: number): Promise<void> {
  const missing = backlog - (await count(kasse, 'pending'));
  for (let i = 0; i < missing; i += 1000) {
    await withTx(kasse.db, async (tx) => {
      const batch = [];
      for (let j = i; j < Math.min(missing, i + 1000); j++) {
        const data = eventData(++keySeq);
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
  await sql`ANALYZE webhook_deliveries`.execute(kasse.db);
}

/** `uptime`'s line (load averages over 1, 5 and 15 minutes): the machine is shared. */
const uptime = () => execSync('uptime').toString().trim();

export async function run(): Promise<object> {
  const uptimeBefore = uptime();
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const backlog = Number(process.env.BENCH_SCALE_BACKLOG ?? 30_000);
  const pg = await benchDatabase();
  const receiver = await startChild<{ url: string }>('bench/servers/webhook-receiver.ts', {});
  const config = loadConfig({ ...process.env, KASSE_LOG_LEVEL: 'warn' });
  // The bench's own connection: migrations, the merchant, the backlog, the counts. No roles run here.
  const kasse = await Kasse.open({
    config,
    databaseUrl: pg.url,
    log: createLogger('warn', process.stderr),
    listen: false,
    poolSize: 2,
  });
  try {
    const merchant = await kasse.merchants.create({ name: 'Bench', webhookUrl: receiver.info.url });
    await kasse.merchants.update(merchant.merchant_id, { rateLimitPerMinute: 1_000_000_000 }, OPERATOR);
    const postmaster = await postmasterOf(pg.url);

    const results: Record<Topology, object[]> = { one_process: [], split: [] };
    for (let r = 0; r < rounds; r++) {
      for (const topology of ['one_process', 'split'] as Topology[]) {
        await topUp(kasse, merchant.merchant_id, backlog);
        const procs = [];
        for (const roles of TOPOLOGIES[topology]) {
          procs.push({
            roles,
            ...(await startChild<{ test: string | null }>('bench/servers/role.ts', {
              DATABASE_URL: pg.url,
              KASSE_ROLES: roles,
            })),
          });
        }
        try {
          const bases = procs.flatMap((p) => (p.info.test ? [p.info.test] : []));
          await createPayments(bases, merchant.test_key, 2); // warm-up
          const load = loadavg()[0]!;
          const deliveredBefore = await count(kasse, 'delivered');
          const cpu0 = {
            kasse: procs.map((p) => cpuSeconds(p.child.pid!)),
            postgres: postgresCpu(postmaster),
            receiver: cpuSeconds(receiver.child.pid!),
          };
          const start = performance.now();
          const created = await createPayments(bases, merchant.test_key, seconds);
          const elapsed = (performance.now() - start) / 1000;
          const delivered = (await count(kasse, 'delivered')) - deliveredBefore;
          const cores = (used: number) => Math.round((used / elapsed) * 100) / 100;
          results[topology].push({
            payments_per_sec: Math.round(created.created / elapsed),
            webhook_deliveries_per_sec: Math.round(delivered / elapsed),
            backlog_left: await count(kasse, 'pending'),
            non_2xx: created.non_2xx,
            errors: created.errors,
            p99_ms: created.p99_ms,
            cpu_cores_used: {
              kasse: procs.map((p, i) => ({ roles: p.roles, cores: cores(cpuSeconds(p.child.pid!) - cpu0.kasse[i]!) })),
              postgres: cores(postgresCpu(postmaster) - cpu0.postgres),
              receiver: cores(cpuSeconds(receiver.child.pid!) - cpu0.receiver),
            },
            load_average: Math.round(load * 10) / 10,
          });
        } finally {
          for (const p of procs) await p.stop();
        }
      }
    }
    const mean = (xs: object[], k: string) =>
      Math.round(xs.reduce((n, x) => n + (x as Record<string, number>)[k]!, 0) / xs.length);
    const summary = (t: Topology) => ({
      payments_per_sec: mean(results[t], 'payments_per_sec'),
      webhook_deliveries_per_sec: mean(results[t], 'webhook_deliveries_per_sec'),
    });
    const one = summary('one_process');
    const split = summary('split');
    return {
      connections: CONNECTIONS,
      seconds_per_round: seconds,
      rounds,
      backlog_per_round: backlog,
      one_process: { ...one, rounds: results.one_process },
      split: { ...split, rounds: results.split },
      ratio_split_to_one: {
        payments: Math.round((split.payments_per_sec / one.payments_per_sec) * 100) / 100,
        webhook_deliveries: Math.round((split.webhook_deliveries_per_sec / one.webhook_deliveries_per_sec) * 100) / 100,
      },
      uptime: { before: uptimeBefore, after: uptime() },
      notes:
        'One machine with 2 cores runs every process here: the Kasse processes, PostgreSQL, the receiver and the load generator. ' +
        'Splitting roles over processes adds no cores, so it cannot scale linearly here; what it shows is that the split works ' +
        '(payments answered by both API processes, webhooks delivered by the worker process, one queue shared through PostgreSQL) ' +
        'and what it costs. POST /payments commits wait on the WAL flush (fsync) of a disk shared with other work on the machine, ' +
        'and the worker process commits delivery results on the same server, so payments per second follow the disk more than CPU. ' +
        'The gain from the split comes from putting the processes on separate machines, with PostgreSQL on its own. ' +
        'When the load average is far above the two cores (see uptime), other work decides the figures: read them as a demonstration, not as a ratio.',
    };
  } finally {
    await kasse.close();
    await receiver.stop();
    await pg.stop();
  }
}
