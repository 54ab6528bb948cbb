/**
 * Authenticated GET throughput and p99 at 64 connections against a bare route of the same framework, in the same
 * run (goal: at least 0.8 of the bare route). The authenticated route is GET /v1/account: bearer auth, rate limit,
 * request log, metrics, and one primary-key read of the merchant.
 */
import { benchDatabase } from './_pg.ts';
import { startChild } from './_child.ts';
import { load } from './_load.ts';

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const srv = await startChild<{ test: string; bare: string; key: string }>('bench/servers/api.ts', { DATABASE_URL: pg.url });
  try {
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    await load({ url: `${srv.info.bare}/bare`, seconds: 2 }); // warm-up
    await load({ url: `${srv.info.test}/account`, headers: { authorization: `Bearer ${srv.info.key}` }, seconds: 2 });
    const bare = await load({ url: `${srv.info.bare}/bare`, seconds });
    const authed = await load({ url: `${srv.info.test}/account`, headers: { authorization: `Bearer ${srv.info.key}` }, seconds });
    return {
      connections: 64,
      seconds,
      bare_route: bare,
      authenticated_get: authed,
      ratio: Math.round((authed.requests_per_sec / bare.requests_per_sec) * 100) / 100,
      goal_ratio: 0.8,
    };
  } finally {
    await srv.stop();
    await pg.stop();
  }
}
