/**
 * POST /payments at 64 connections, as integrations call it (a new Idempotency-Key on every request, metadata and
 * URLs), against a bare Fastify route doing one `INSERT … RETURNING` of a payment-sized row, in the same run and in
 * alternating rounds. Two Kasse sides: a payment alone (goal: at least 0.85 of the bare route), and a payment with
 * `chain` and `token`, whose deposit address is issued in the same call (goal: at least 0.6). CPU per request is
 * recorded for the server process and for PostgreSQL. Then both sides once more at one connection, where a
 * creation has no neighbours to share its statement with (db/coalesce.ts): the latency of a lone request.
 */
import { benchDatabase } from './_pg.ts';
import { startChild } from './_child.ts';
import { compareAll, load, type Target } from './_load.ts';
import { postmasterOf } from './_cpu.ts';

/** What an integration sends to create a payment (the `i`-th request), with `extra` fields such as a coin. */
export const paymentBody =
  (extra: object = {}) =>
  (i: number) =>
    JSON.stringify({
      price_amount: 2500 + (i % 1000),
      price_currency: 'USD',
      order_id: `order-${i}`,
      description: 'Two mugs and a teapot',
      success_url: 'https://shop.example/thanks',
      cancel_url: 'https://shop.example/cart',
      metadata: { customer: `c_${i % 5000}`, cart: [1, 2, 3], channel: 'web' },
      ...extra,
    });

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const srv = await startChild<{ test: string; bare: string; key: string }>('bench/servers/api.ts', {
    DATABASE_URL: pg.url,
  });
  try {
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    const headers = { authorization: `Bearer ${srv.info.key}`, 'content-type': 'application/json' };
    const run = Date.now().toString(36);
    const bare: Target = { url: `${srv.info.bare}/bare-insert`, method: 'POST', headers, body: paymentBody(), seconds };
    const create: Target = {
      url: `${srv.info.test}/payments`,
      method: 'POST',
      headers,
      body: paymentBody(),
      idempotencyKeyPrefix: `${run}-plain`,
      seconds,
    };
    const withCoin: Target = {
      ...create,
      body: paymentBody({ chain: 'base', token: 'base:usdc' }),
      idempotencyKeyPrefix: `${run}-coin`,
    };
    for (const t of [bare, create, withCoin])
      await load({
        ...t,
        seconds: 2,
        idempotencyKeyPrefix: t.idempotencyKeyPrefix && `${t.idempotencyKeyPrefix}-warm`,
      });
    const postmaster = await postmasterOf(pg.url);
    const r = await compareAll(bare, [create, withCoin], { cpuUrl: `${srv.info.bare}/cpu`, postmaster });
    const [plain, coin] = r.subjects;
    // One request at a time: what a lone creation waits for, with no neighbours to share a statement with.
    const alone = await compareAll(
      { ...bare, connections: 1 },
      [{ ...create, connections: 1, idempotencyKeyPrefix: `${run}-alone` }],
      { cpuUrl: `${srv.info.bare}/cpu`, postmaster },
    );
    return {
      connections: 64,
      seconds_per_round: seconds,
      rounds: r.rounds,
      request: 'a new Idempotency-Key per request, metadata, description, success and cancel URLs',
      bare_insert_returning: r.baseline,
      create_payment: { ...plain!.result, ratio: plain!.ratio, cpu_ratio: plain!.cpu_ratio, goal_ratio: 0.85 },
      create_payment_with_coin: { ...coin!.result, ratio: coin!.ratio, cpu_ratio: coin!.cpu_ratio, goal_ratio: 0.6 },
      one_connection: {
        bare_insert_returning: alone.baseline,
        create_payment: { ...alone.subjects[0]!.result, ratio: alone.subjects[0]!.ratio },
      },
    };
  } finally {
    await srv.stop();
    await pg.stop();
  }
}
