/**
 * POST /payments throughput and p99 at 64 connections against a bare Fastify route doing one
 * `INSERT … RETURNING` of a payment-sized row, in the same run (goal: at least 0.7 of it).
 */
import { benchDatabase } from './_pg.ts';
import { startChild } from './_child.ts';
import { compare, load } from './_load.ts';

const body = (i: number) =>
  JSON.stringify({
    price_amount: 2500 + (i % 1000),
    price_currency: 'USD',
    order_id: `order-${i}`,
    description: 'Two mugs and a teapot',
    success_url: 'https://shop.example/thanks',
    metadata: { customer: 'c_123', cart: [1, 2, 3] },
  });

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const srv = await startChild<{ test: string; bare: string; key: string }>('bench/servers/api.ts', { DATABASE_URL: pg.url });
  try {
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    const headers = { authorization: `Bearer ${srv.info.key}`, 'content-type': 'application/json' };
    await load({ url: `${srv.info.bare}/bare-insert`, method: 'POST', headers, body, seconds: 2 });
    await load({ url: `${srv.info.test}/payments`, method: 'POST', headers, body, seconds: 2 });
    const r = await compare(
      { url: `${srv.info.bare}/bare-insert`, method: 'POST', headers, body, seconds },
      { url: `${srv.info.test}/payments`, method: 'POST', headers, body, seconds },
      { cpuUrl: `${srv.info.bare}/cpu` },
    );
    return { connections: 64, seconds_per_round: seconds, rounds: r.rounds, cpu_ratio: r.cpu_ratio, bare_insert_returning: r.baseline, create_payment: r.subject, ratio: r.ratio, goal_ratio: 0.7 };
  } finally {
    await srv.stop();
    await pg.stop();
  }
}
