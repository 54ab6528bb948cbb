/**
 * The EVM watcher's cost per block against the number of open deposit addresses, and detection latency.
 *
 * A private Hardhat node; Kasse (embedded PostgreSQL) with 1,000, then 100,000, then 1,000,000 open deposit
 * addresses (attempts rows inserted in bulk). Each measured block carries 40 USDC transfers and 40 ETH transfers to
 * addresses Kasse does not watch plus one real payment, and the watcher is ticked once per block, as at the head:
 * RPC calls per block and the watcher process's CPU time per block should not change with the table size (goal:
 * ≤ 3 calls per block). A catch-up scan of 100 blocks shows the batched cost. Then the time from a block being mined
 * to the `payment.detected` webhook arriving, with the watcher and webhook workers running on their timers, at the
 * default 10-second poll and at a 1-second poll.
 */
import { sql } from 'kysely';
import { encodeFunctionData, type Address } from 'viem';
import { erc20Abi } from '../src/chains/evm/contracts.ts';
import type { DepositObservation, DepositProgress, DepositSink, TransferKey } from '../src/chains/ports.ts';
import type { Mode } from '../src/core/mode.ts';
import { startWorkers } from '../src/workers/index.ts';
import { startEvmKasse, type EvmKasse } from '../test/harness/evm-kasse.ts';
import { startHardhatNode, TestChain, type HardhatNode } from '../test/harness/hardhat.ts';
import { benchDatabase } from './_pg.ts';
import { growOpenAddresses, stats, type OpenAddresses } from './_watchers.ts';

const SIZES = (process.env.BENCH_EVM_SIZES ?? '1000,100000,1000000').split(',').map(Number);
const BLOCKS_PER_SIZE = Number(process.env.BENCH_EVM_BLOCKS ?? 10);
const NOISE = 40;
/** The open deposit addresses seeded in bulk (keys that never see money). */
const OPEN: OpenAddresses = {
  chain: 'base',
  token: 'base:usdc',
  address: sql`'0x' || substr(md5('a' || g), 1, 20) || substr(md5('b' || g), 1, 20)`,
  firstIndex: 1_000_000_000_000,
  rate: '1',
  rateSource: 'peg',
  confirmations: 3,
};

const randomAddress = (): Address =>
  `0x${[...crypto.getRandomValues(new Uint8Array(20))].map((b) => b.toString(16).padStart(2, '0')).join('')}`;

/** Queues NOISE USDC and NOISE ETH transfers to unwatched addresses plus one real payment, then mines one block. */
async function busyBlock(k: EvmKasse, sender: Address, order: number): Promise<void> {
  const chain = k.chain;
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < NOISE; i++) {
    sends.push(
      chain.rpc('eth_sendTransaction', [
        {
          from: sender,
          to: k.usdc,
          data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [randomAddress(), 1_000n] }),
        },
      ]),
    );
    sends.push(chain.rpc('eth_sendTransaction', [{ from: sender, to: randomAddress(), value: '0x1' }]));
  }
  await Promise.all(sends);
  const res = await k.m.test.post('/payments', {
    price_amount: 500,
    price_currency: 'USD',
    order_id: `bench-real-${order}`,
    chain: 'base',
    token: 'base:usdc',
  });
  await chain.rpc('eth_sendTransaction', [
    {
      from: sender,
      to: k.usdc,
      data: encodeFunctionData({
        abi: erc20Abi,
        functionName: 'transfer',
        args: [res.body.attempts[0].address, BigInt(res.body.attempts[0].pay_amount)],
      }),
    },
  ]);
  await chain.rpc('evm_mine');
}

/** A DepositSink that forwards to the payments module and adds up the time spent in each method. */
class TimedSink implements DepositSink {
  readonly ms: Record<keyof DepositSink, number> = {
    watchedAddresses: 0,
    recordDeposits: 0,
    headAdvanced: 0,
    depositsProgressed: 0,
    blocksRemoved: 0,
    depositsDropped: 0,
    depositsOpen: 0,
  };
  constructor(private readonly inner: DepositSink) {}
  private async time<T>(name: keyof DepositSink, fn: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      this.ms[name] += performance.now() - t0;
    }
  }
  watchedAddresses(mode: Mode, chain: string, addresses: string[]) {
    return this.time('watchedAddresses', () => this.inner.watchedAddresses(mode, chain, addresses));
  }
  recordDeposits(mode: Mode, deposits: DepositObservation[]) {
    return this.time('recordDeposits', () => this.inner.recordDeposits(mode, deposits));
  }
  headAdvanced(mode: Mode, chain: string, head: bigint) {
    return this.time('headAdvanced', () => this.inner.headAdvanced(mode, chain, head));
  }
  depositsProgressed(mode: Mode, chain: string, progress: DepositProgress[]) {
    return this.time('depositsProgressed', () => this.inner.depositsProgressed(mode, chain, progress));
  }
  blocksRemoved(mode: Mode, chain: string, fromBlock: bigint) {
    return this.time('blocksRemoved', () => this.inner.blocksRemoved(mode, chain, fromBlock));
  }
  depositsDropped(mode: Mode, chain: string, transfers: TransferKey[]) {
    return this.time('depositsDropped', () => this.inner.depositsDropped(mode, chain, transfers));
  }
  depositsOpen(mode: Mode, chain: string) {
    return this.time('depositsOpen', () => this.inner.depositsOpen(mode, chain));
  }
}

async function perBlockCost(node: HardhatNode): Promise<object> {
  const k = await startEvmKasse({ rpcUrl: node.url, receiver: false });
  try {
    const chain = new TestChain(node.url);
    const [sender] = await chain.rpc<Address[]>('eth_accounts');
    await chain.rpc('eth_sendTransaction', [
      {
        from: sender,
        to: k.usdc,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'mint', args: [sender!, 10n ** 15n] }),
      },
    ]);
    await chain.setAutomine(false);
    const sink = new TimedSink(k.t.kasse.payments.deposits);
    const watcher = k.adapter.watcher(sink);
    await watcher.tick();
    const rpc = k.adapter.rpc();
    const bySize: Record<string, object> = {};
    let order = 0;
    for (const size of SIZES) {
      const insertMs = await growOpenAddresses(k.t.kasse.db, k.m.id, size, OPEN);
      const calls: number[] = [];
      const cpu: number[] = [];
      const wall: number[] = [];
      let deposits = 0;
      const sinkBefore = { ...sink.ms };
      for (let b = 0; b < BLOCKS_PER_SIZE; b++) {
        await busyBlock(k, sender!, order++);
        const callsBefore = rpc.totalCalls;
        const cpuBefore = process.cpuUsage();
        const t0 = performance.now();
        const r = await watcher.tick();
        wall.push(performance.now() - t0);
        const c = process.cpuUsage(cpuBefore);
        cpu.push((c.user + c.system) / 1000);
        calls.push(rpc.totalCalls - callsBefore);
        deposits += r.deposits;
        if (r.scanned !== 1) throw new Error(`expected one block per tick, scanned ${r.scanned}`);
      }
      bySize[String(size)] = {
        open_addresses: size,
        insert_ms: insertMs,
        blocks: BLOCKS_PER_SIZE,
        transfers_per_block: 2 * NOISE + 1,
        deposits_found: deposits,
        rpc_calls_per_block: calls.reduce((a, b) => a + b, 0) / calls.length,
        rpc_calls_max: Math.max(...calls),
        cpu_ms_per_block: stats(cpu),
        wall_ms_per_block: stats(wall),
        // Of the wall time: the one batched address lookup, and the payments module's work per block.
        sink_ms_per_block: Object.fromEntries(
          (['watchedAddresses', 'recordDeposits', 'headAdvanced'] as const).map((m) => [
            m,
            Math.round(((sink.ms[m] - sinkBefore[m]) / BLOCKS_PER_SIZE) * 10) / 10,
          ]),
        ),
      };
      process.stderr.write(`evm-watcher: ${size} open addresses: ${JSON.stringify(bySize[String(size)])}\n`);
    }
    // Catch-up: 100 blocks behind, scanned in batches of 20.
    for (let b = 0; b < 100; b++) {
      if (b % 10 === 0) await busyBlock(k, sender!, order++);
      else await chain.rpc('evm_mine');
    }
    const callsBefore = rpc.totalCalls;
    const t0 = performance.now();
    const r = await watcher.tick();
    const catchUp = {
      blocks: r.scanned,
      deposits: r.deposits,
      rpc_calls: rpc.totalCalls - callsBefore,
      rpc_calls_per_block: (rpc.totalCalls - callsBefore) / r.scanned,
      ms_per_block: Math.round(((performance.now() - t0) / r.scanned) * 10) / 10,
    };
    return { by_open_addresses: bySize, catch_up: catchUp };
  } finally {
    await k.chain.setAutomine(true);
    await k.close();
  }
}

/** Block mined → payment.detected webhook received, with the workers running on their timers. */
async function detectLatency(node: HardhatNode, pollIntervalMs: number, samples: number): Promise<object> {
  const k = await startEvmKasse({ rpcUrl: node.url, pollIntervalMs });
  const workers = startWorkers(k.t.kasse);
  try {
    const chain = new TestChain(node.url);
    const out: number[] = [];
    for (let i = 0; i < samples; i++) {
      const res = await k.m.test.post('/payments', {
        price_amount: 500,
        price_currency: 'USD',
        order_id: `lat-${pollIntervalMs}-${i}`,
        chain: 'base',
        token: 'base:usdc',
      });
      const id = res.body.id as string;
      // Send at a random phase of the poll cycle.
      await new Promise((r) => setTimeout(r, Math.random() * pollIntervalMs));
      const hash = await chain.sendToken(
        k.payer,
        k.usdc,
        res.body.attempts[0].address,
        BigInt(res.body.attempts[0].pay_amount),
      );
      await chain.receipt(hash);
      const mined = performance.now();
      for (;;) {
        const e = k.receiver!.events.find((ev) => ev.data?.id === id && ev.type === 'payment.detected');
        if (e) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      out.push(performance.now() - mined);
    }
    return { poll_interval_ms: pollIntervalMs, ...stats(out) };
  } finally {
    await workers.stop();
    await k.close();
  }
}

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  const node = await startHardhatNode();
  try {
    const cost = await perBlockCost(node);
    const latency10 = await detectLatency(node, 10_000, Number(process.env.BENCH_EVM_LATENCY_SAMPLES_10S ?? 6));
    const latency1 = await detectLatency(node, 1_000, Number(process.env.BENCH_EVM_LATENCY_SAMPLES_1S ?? 20));
    return {
      goal: 'same cost per block at every number of open addresses; at most 3 RPC calls per block per network',
      per_block: cost,
      detect_latency_ms: { default_poll: latency10, poll_1s: latency1 },
      note: 'cpu_ms_per_block is the whole Kasse process (watcher, payments module, PostgreSQL client); wall_ms_per_block adds Hardhat (same 2 cores) and PostgreSQL. sink_ms_per_block splits out the one batched address lookup (watchedAddresses) and the payments module (recordDeposits for the one real deposit, headAdvanced for the ~8 deposits not yet final).',
    };
  } finally {
    await node.stop();
    await pg.stop();
  }
}
