/** What the chain watcher benchmarks share: bulk-seeded open deposit addresses, and summary statistics. */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../src/db/index.ts';

/** The open attempts a watcher benchmark seeds on one network of test mode. */
export interface OpenAddresses {
  chain: string;
  token: string;
  /** The deposit address of row `g` (an SQL expression over `g`, shaped like the network's addresses). */
  address: RawBuilder<unknown>;
  /** `address_index` of row 0 (kept clear of the indexes the benchmark's own payments take). */
  firstIndex: number;
  rate: string;
  rateSource: string;
  confirmations: number;
}

/**
 * Grows `merchantId`'s open attempts (deposit addresses that never see money) to `target` rows, inserting payments and attempts
 * in bulk (100,000 a statement, a payment per 1,000 attempts); returns the milliseconds it took.
 */
export async function growOpenAddresses(db: Db, merchantId: string, target: number, o: OpenAddresses): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM attempts WHERE id LIKE 'att_BENCH%'`.execute(db);
  let have = Number(rows[0]!.n);
  const started = performance.now();
  while (have < target) {
    const batch = Math.min(100_000, target - have);
    const from = have;
    await sql`
      INSERT INTO payments (id, merchant_id, mode, status, price_amount, price_currency, order_id, metadata, expires_at, created_at, updated_at)
      SELECT 'pay_BENCH' || lpad(g::text, 31, '0'), ${merchantId}, 'test', 'waiting', 1000, 'USD', 'bench-' || g, '{}', now() + interval '1 day', now(), now()
      FROM generate_series(${from}::bigint, ${from + batch - 1}::bigint, 1000) g`.execute(db);
    await sql`
      INSERT INTO attempts (id, payment_id, mode, chain, token, address, address_index, pay_amount, rate, rate_source, status,
                            confirmation_tier, confirmations_required, expires_at, created_at)
      SELECT 'att_BENCH' || lpad(g::text, 21, '0'), 'pay_BENCH' || lpad((g - g % 1000)::text, 31, '0'), 'test', ${o.chain}, ${o.token},
             ${o.address}, ${o.firstIndex}::bigint + g, 10000000, ${o.rate}, ${o.rateSource}, 'waiting',
             1, ${o.confirmations}::int, now() + interval '10 minutes', now()
      FROM generate_series(${from}::bigint, ${from + batch - 1}::bigint) g`.execute(db);
    have += batch;
  }
  await sql`ANALYZE attempts`.execute(db);
  return Math.round(performance.now() - started);
}

/** Count, mean, median, min and max of `xs`, rounded to `digits` decimals. */
export function stats(xs: number[], digits = 0) {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  const r = (n: number) => Math.round(n * 10 ** digits) / 10 ** digits;
  return { samples: s.length, mean: r(mean), p50: r(s[Math.floor(s.length / 2)]!), min: r(s[0]!), max: r(s.at(-1)!) };
}
