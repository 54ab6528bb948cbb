/**
 * Authenticated GET throughput and p99 at 64 connections against a bare route of the same framework, in the same
 * run (goal: at least 0.8 of the bare route). The authenticated route is GET /v1/account: bearer auth, rate limit,
 * request log and metrics, with the merchant from the key cache. Rounds alternate between the two routes and each
 * side's median round is kept.
 */
import { benchDatabase } from './_pg.ts';
import { startChild } from './_child.ts';
import { compare, load } from './_load.ts';

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const srv = await startChild<{ test: string; bare: string; key: string }>('bench/servers/api.ts', { DATABASE_URL: pg.url });
  try {
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    await load({ url: `${srv.info.bare}/bare`, seconds: 2 }); // warm-up
    await load({ url: `${srv.info.test}/account`, headers: { authorization: `Bearer ${srv.info.key}` }, seconds: 2 });
    const r = await compare({ url: `${srv.info.bare}/bare`, seconds }, { url: `${srv.info.test}/account`, headers: { authorization: `Bearer ${srv.info.key}` }, seconds }, { cpuUrl: `${srv.info.bare}/cpu` });
    return { connections: 64, seconds_per_round: seconds, rounds: r.rounds, cpu_ratio: r.cpu_ratio, bare_route: r.baseline, authenticated_get: r.subject, ratio: r.ratio, goal_ratio: 0.8 };
  } finally {
    await srv.stop();
    await pg.stop();
  }
}
