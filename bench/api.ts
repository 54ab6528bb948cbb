/**
 * Authenticated GET throughput and p99 at 64 connections against a bare route of the same framework, in the same
 * run (goal: at least 0.8 of the bare route). The authenticated route is GET /v1/account: bearer auth, rate limit,
 * request id, metrics and the access log rule, with the merchant from the key cache. Rounds alternate between the two
 * routes (five of each) and each side's median round is kept.
 */
import { benchDatabase } from './_pg.ts';
import { startChild } from './_child.ts';
import { compare, load } from './_load.ts';

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  const srv = await startChild<{ test: string; bare: string; key: string }>('bench/servers/api.ts', {
    DATABASE_URL: pg.url,
  });
  try {
    const seconds = Number(process.env.BENCH_SECONDS ?? 10);
    // Both routes get the same request, key included; the bare route ignores it.
    const headers = { authorization: `Bearer ${srv.info.key}` };
    const bare = { url: `${srv.info.bare}/bare`, headers, seconds };
    const account = { url: `${srv.info.test}/account`, headers, seconds };
    await load({ ...bare, seconds: 2 }); // warm-up
    await load({ ...account, seconds: 2 });
    const r = await compare(bare, account, { cpuUrl: `${srv.info.bare}/cpu`, rounds: 5 });
    return {
      connections: 64,
      seconds_per_round: seconds,
      rounds: r.rounds,
      cpu_ratio: r.cpu_ratio,
      bare_route: r.baseline,
      authenticated_get: r.subject,
      ratio: r.ratio,
      goal_ratio: 0.8,
    };
  } finally {
    await srv.stop();
    await pg.stop();
  }
}
