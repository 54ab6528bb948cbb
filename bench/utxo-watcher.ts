/**
 * The UTXO watcher's cost per block against the number of open deposit addresses, and detection latency.
 *
 * A private Litecoin Core regtest node; Kasse (embedded PostgreSQL) with 1,000, then 100,000, then 1,000,000 open
 * deposit addresses on the network (attempts rows inserted in bulk). Each measured block carries a transaction with
 * 40 outputs and 10 more transactions to addresses Kasse does not watch, plus one real payment, and the watcher is
 * ticked once per block, as at the tip: RPC calls per block (the tick's mempool poll counted apart) and the Kasse
 * process's CPU time per block should not change with the table size (goal: at most 3 calls per block plus the
 * mempool poll). Then the mempool poll with 50 new transactions waiting, and the time from a payment being
 * broadcast to the `payment.detected` webhook arriving, with the workers on their timers, at the default 10-second
 * poll and at a 1-second poll.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { addressOfKeyHash } from '../src/chains/utxo/address.ts';
import { utxoParams } from '../src/chains/utxo/params.ts';
import { startWorkers } from '../src/workers/index.ts';
import { LitecoinWallet, startLitecoind, type LitecoinNode } from '../test/harness/litecoind.ts';
import { startUtxoKasse, type UtxoKasse } from '../test/harness/utxo-kasse.ts';
import { benchDatabase } from './_pg.ts';
import { growOpenAddresses, stats, type OpenAddresses } from './_watchers.ts';

const SIZES = (process.env.BENCH_UTXO_SIZES ?? '1000,100000,1000000').split(',').map(Number);
const BLOCKS_PER_SIZE = Number(process.env.BENCH_UTXO_BLOCKS ?? 10);
const NOISE_OUTPUTS = 40;
const NOISE_TXS = 10;
/** The open deposit addresses seeded in bulk (keys that never see money). */
const OPEN: OpenAddresses = {
  chain: 'litecoin',
  token: 'litecoin:ltc',
  address: sql`'rltc1q' || substr(md5('a' || g), 1, 20) || substr(md5('b' || g), 1, 18)`,
  firstIndex: 1_000_000_000_000,
  rate: '100',
  rateSource: 'coingecko',
  confirmations: 2,
};
const params = utxoParams('litecoin', 'regtest');
const randomAddress = () => addressOfKeyHash(randomBytes(20), params);

/** Sends the noise (a 40-output transaction and 10 single payments to strangers) and one real payment. */
async function busyMempool(k: UtxoKasse, order: number): Promise<void> {
  await k.payer.sendMany(Array.from({ length: NOISE_OUTPUTS }, () => [randomAddress(), 10_000n] as [string, bigint]));
  for (let i = 0; i < NOISE_TXS; i++) await k.payer.send(randomAddress(), 20_000n);
  const res = await k.m.test.post('/payments', {
    price_amount: 500,
    price_currency: 'USD',
    order_id: `bench-real-${order}`,
    chain: 'litecoin',
    token: 'litecoin:ltc',
  });
  await k.payer.send(res.body.attempts[0].address, BigInt(res.body.attempts[0].pay_amount));
}

const MEMPOOL_METHODS = new Set(['getrawmempool', 'batch:getrawtransaction']);

async function perBlockCost(node: LitecoinNode): Promise<object> {
  const k = await startUtxoKasse({ rpcUrl: node.url, receiver: false });
  try {
    const watcher = k.adapter.watcher(k.t.kasse.payments.deposits);
    await watcher.tick();
    const rpc = k.adapter.rpc();
    const count = (pred: (m: string) => boolean) =>
      [...rpc.counts].filter(([m]) => pred(m)).reduce((n, [, v]) => n + v, 0);
    const bySize: Record<string, object> = {};
    let order = 0;
    let mempoolPoll: object | null = null;
    for (const size of SIZES) {
      const insertMs = await growOpenAddresses(k.t.kasse.db, k.m.id, size, OPEN);
      const blockCalls: number[] = [];
      const pollCalls: number[] = [];
      const cpu: number[] = [];
      const wall: number[] = [];
      let deposits = 0;
      for (let b = 0; b < BLOCKS_PER_SIZE; b++) {
        await busyMempool(k, order++);
        if (b === 0) {
          // The mempool poll with 52 new transactions waiting (one batched fetch).
          const before = count(MEMPOOL_METHODS.has.bind(MEMPOOL_METHODS));
          const c0 = process.cpuUsage();
          const t0 = performance.now();
          const r = await watcher.tick();
          const c = process.cpuUsage(c0);
          if (size === SIZES[0])
            mempoolPoll = {
              new_transactions: NOISE_TXS + 2,
              rpc_calls: count(MEMPOOL_METHODS.has.bind(MEMPOOL_METHODS)) - before,
              deposits_found: r.mempoolDeposits,
              cpu_ms: Math.round((c.user + c.system) / 100) / 10,
              wall_ms: Math.round(performance.now() - t0),
            };
        }
        await k.payer.mine(1);
        const blockBefore = count((m) => !MEMPOOL_METHODS.has(m));
        const pollBefore = count((m) => MEMPOOL_METHODS.has(m));
        const cpuBefore = process.cpuUsage();
        const t0 = performance.now();
        const r = await watcher.tick();
        wall.push(performance.now() - t0);
        const c = process.cpuUsage(cpuBefore);
        cpu.push((c.user + c.system) / 1000);
        blockCalls.push(count((m) => !MEMPOOL_METHODS.has(m)) - blockBefore);
        pollCalls.push(count((m) => MEMPOOL_METHODS.has(m)) - pollBefore);
        deposits += r.deposits;
        if (r.scanned !== 1) throw new Error(`expected one block per tick, scanned ${r.scanned}`);
      }
      bySize[String(size)] = {
        open_addresses: size,
        insert_ms: insertMs,
        blocks: BLOCKS_PER_SIZE,
        outputs_per_block: NOISE_OUTPUTS + NOISE_TXS * 2 + 2,
        deposits_found: deposits,
        rpc_calls_per_block: blockCalls.reduce((a, b) => a + b, 0) / blockCalls.length,
        rpc_calls_max: Math.max(...blockCalls),
        mempool_poll_calls_per_tick: pollCalls.reduce((a, b) => a + b, 0) / pollCalls.length,
        cpu_ms_per_block: stats(cpu, 1),
        wall_ms_per_block: stats(wall, 1),
      };
      process.stderr.write(`utxo-watcher: ${size} open addresses: ${JSON.stringify(bySize[String(size)])}\n`);
    }
    return { by_open_addresses: bySize, mempool_poll: mempoolPoll };
  } finally {
    await k.close();
  }
}

/** Payment broadcast → payment.detected webhook received, with the workers running on their timers. */
async function detectLatency(
  node: LitecoinNode,
  payer: LitecoinWallet,
  pollIntervalMs: number,
  samples: number,
): Promise<object> {
  const k = await startUtxoKasse({ rpcUrl: node.url, pollIntervalMs, payer });
  const workers = startWorkers(k.t.kasse);
  try {
    const out: number[] = [];
    for (let i = 0; i < samples; i++) {
      const res = await k.m.test.post('/payments', {
        price_amount: 500,
        price_currency: 'USD',
        order_id: `lat-${pollIntervalMs}-${i}`,
        chain: 'litecoin',
        token: 'litecoin:ltc',
      });
      const id = res.body.id as string;
      await new Promise((r) => setTimeout(r, Math.random() * pollIntervalMs));
      const sent = performance.now();
      await k.payer.send(res.body.attempts[0].address, BigInt(res.body.attempts[0].pay_amount));
      for (;;) {
        if (k.receiver!.events.some((ev) => ev.data?.id === id && ev.type === 'payment.detected')) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      out.push(performance.now() - sent);
    }
    await k.payer.mine(1);
    return { poll_interval_ms: pollIntervalMs, ...stats(out, 1) };
  } finally {
    await workers.stop();
    await k.close();
  }
}

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  const node = await startLitecoind();
  try {
    const cost = await perBlockCost(node);
    const payer = await LitecoinWallet.create(node.url);
    const latency10 = await detectLatency(node, payer, 10_000, Number(process.env.BENCH_UTXO_LATENCY_SAMPLES_10S ?? 6));
    const latency1 = await detectLatency(node, payer, 1_000, Number(process.env.BENCH_UTXO_LATENCY_SAMPLES_1S ?? 20));
    return {
      goal: 'same cost per block at every number of open addresses; at most 3 RPC calls per block plus the mempool poll',
      per_block: cost,
      detect_latency_ms: { default_poll: latency10, poll_1s: latency1 },
      note: 'rpc_calls_per_block counts getbestblockhash, getblockheader of the cursor and getblock of the new block; the mempool poll (getrawmempool, and one batched getrawtransaction when new transactions wait) is counted apart. cpu_ms_per_block is the whole Kasse process (watcher, payments module, PostgreSQL client); wall_ms_per_block adds litecoind and PostgreSQL on the same 2 cores.',
    };
  } finally {
    await node.stop();
    await pg.stop();
  }
}
