/**
 * The Solana watcher's cost per slot against the number of open deposit addresses, and the time from a finalized
 * transfer to the `payment.paid` webhook.
 *
 * The Solana test node runs in a child process (its ledger work is not Kasse's CPU); Kasse (embedded PostgreSQL)
 * has 1,000, then 100,000, then 1,000,000 open deposit addresses (attempts rows inserted in bulk). Each measured
 * tick follows SLOTS_PER_TICK new slots (as a 10-second poll follows about 25 slots of 400 ms), every block carrying
 * NOISE SOL transfers to addresses Kasse does not watch, NOISE USDC transfers between unwatched token accounts, and
 * one real payment per tick; one slot in ten is skipped. RPC calls per slot and the Kasse process's CPU per slot
 * should not change with the table size (goal: at most 2 calls per slot). Then, with the workers on their timers and
 * the node producing a slot every 400 ms, the time from the block of a payment above 100 USD (paid at finalized)
 * becoming finalized to its `payment.paid` webhook arriving.
 */
import { sql } from 'kysely';
import { getTransferSolInstruction } from '@solana-program/system';
import { generateKeyPairSigner, type Instruction } from '@solana/kit';
import { startWorkers } from '../src/workers/index.ts';
import { spawnSolanaNode } from '../test/harness/solana.ts';
import { startSolanaKasse, type SolanaKasse } from '../test/harness/solana-kasse.ts';
import type { Wallet } from '../test/harness/solana-chain.ts';
import { benchDatabase } from './_pg.ts';
import { growOpenAddresses, stats, type OpenAddresses } from './_watchers.ts';

const SIZES = (process.env.BENCH_SOLANA_SIZES ?? '1000,100000,1000000').split(',').map(Number);
const TICKS = Number(process.env.BENCH_SOLANA_TICKS ?? 6);
const SLOTS_PER_TICK = Number(process.env.BENCH_SOLANA_SLOTS ?? 25);
const NOISE = Number(process.env.BENCH_SOLANA_NOISE ?? 8);
const LATENCY_SAMPLES = Number(process.env.BENCH_SOLANA_LATENCY_SAMPLES ?? 5);
/** The open deposit addresses seeded in bulk (keys that never see money). */
const OPEN: OpenAddresses = {
  chain: 'solana',
  token: 'solana:usdc',
  address: sql`'Bench' || substr(md5('a' || g), 1, 19) || substr(md5('b' || g), 1, 19)`,
  firstIndex: 1_000_000_000,
  rate: '1',
  rateSource: 'peg',
  confirmations: 1,
};

interface Noise {
  sol: Wallet[];
  usdc: Wallet[];
}

async function noiseWallets(k: SolanaKasse): Promise<Noise> {
  const sol: Wallet[] = [];
  const usdc: Wallet[] = [];
  for (let i = 0; i < NOISE; i++) {
    sol.push(await k.chain.newWallet(10n ** 13n));
    const u = await k.chain.newWallet(10n ** 10n);
    await k.chain.mintUsdc(k.funder, u.address, 10n ** 12n);
    usdc.push(u);
  }
  await k.chain.produce();
  return { sol, usdc };
}

/** One slot's traffic: NOISE SOL transfers to fresh addresses and NOISE USDC transfers among the noise wallets. */
async function busySlot(k: SolanaKasse, noise: Noise, real: Instruction[] | null, payer: Wallet | null): Promise<void> {
  const sends: Promise<unknown>[] = [];
  for (const w of noise.sol)
    sends.push(
      k.chain
        .sign(w, [
          getTransferSolInstruction({
            source: w,
            destination: (await generateKeyPairSigner()).address,
            amount: 1_000_000n,
          }),
        ])
        .then((tx) => k.chain.send(tx)),
    );
  for (let i = 0; i < noise.usdc.length; i++) {
    const from = noise.usdc[i]!;
    const to = noise.usdc[(i + 1) % noise.usdc.length]!;
    sends.push(
      k.chain
        .sign(from, [
          k.chain.usdcTransfer(from, await k.chain.ata(from.address), await k.chain.ata(to.address), 1_000n),
        ])
        .then((tx) => k.chain.send(tx)),
    );
  }
  if (real && payer) sends.push(k.chain.sign(payer, real).then((tx) => k.chain.send(tx)));
  await Promise.all(sends);
}

async function perSlotCost(): Promise<object> {
  const node = await spawnSolanaNode();
  const k = await startSolanaKasse({ node, receiver: false });
  try {
    const noise = await noiseWallets(k);
    const payer = await k.payer(10n ** 12n, 10n ** 12n);
    await k.tick();
    const rpc = k.adapter.rpc();
    const bySize: Record<string, object> = {};
    let order = 0;
    for (const size of SIZES) {
      const insertMs = await growOpenAddresses(k.t.kasse.db, k.m.id, size, OPEN);
      const calls: number[] = [];
      const cpu: number[] = [];
      const wall: number[] = [];
      let deposits = 0;
      let slots = 0;
      for (let t = 0; t < TICKS; t++) {
        const res = await k.m.test.post('/payments', {
          price_amount: 500,
          price_currency: 'USD',
          order_id: `bench-real-${order++}`,
          chain: 'solana',
          token: 'solana:usdc',
        });
        const a = res.body.attempts[0];
        const real = [
          k.chain.usdcTransfer(
            payer,
            await k.chain.ata(payer.address),
            await k.chain.ata(a.address),
            BigInt(a.pay_amount),
          ),
        ];
        await k.send(); // opens the deposit key's token account
        const before = (await k.chain.state()).tip;
        for (let s = 0; s < SLOTS_PER_TICK; s++) {
          await busySlot(k, noise, s === 1 ? real : null, s === 1 ? payer : null);
          if (s % 10 === 9) await k.chain.skip(1);
          await k.chain.produce();
        }
        const tip = (await k.chain.state()).tip;
        const callsBefore = rpc.totalCalls;
        const cpuBefore = process.cpuUsage();
        const t0 = performance.now();
        const r = await k.watcher.tick();
        wall.push(performance.now() - t0);
        const c = process.cpuUsage(cpuBefore);
        const spanned = tip - before;
        slots += spanned;
        cpu.push((c.user + c.system) / 1000 / spanned);
        calls.push((rpc.totalCalls - callsBefore) / spanned);
        deposits += r.deposits;
        if (r.behind) throw new Error('a tick did not reach the tip');
      }
      bySize[String(size)] = {
        open_addresses: size,
        insert_ms: insertMs,
        ticks: TICKS,
        slots,
        slots_per_tick: SLOTS_PER_TICK,
        transactions_per_block: 2 * NOISE,
        deposits_found: deposits,
        rpc_calls_per_slot: stats(calls, 2),
        cpu_ms_per_slot: stats(cpu, 2),
        wall_ms_per_tick: stats(wall, 2),
      };
      process.stderr.write(`solana-watcher: ${size} open addresses: ${JSON.stringify(bySize[String(size)])}\n`);
    }
    return bySize;
  } finally {
    await k.close();
    await node.stop();
  }
}

/** A payment's block becomes finalized → its payment.paid webhook arrives (workers on their timers, a slot every 400 ms). */
async function paidLatency(pollIntervalMs: number): Promise<object> {
  const node = await spawnSolanaNode();
  const k = await startSolanaKasse({ node, pollIntervalMs });
  const workers = startWorkers(k.t.kasse);
  const out: number[] = [];
  try {
    const payer = await k.payer(10n ** 12n, 10n ** 12n);
    await k.chain.rpc('harness_autoProduce', [400]);
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const res = await k.m.test.post('/payments', {
        price_amount: 20_000,
        price_currency: 'USD',
        order_id: `lat-${pollIntervalMs}-${i}`,
        chain: 'solana',
        token: 'solana:usdc',
      });
      const id = res.body.id as string;
      const a = res.body.attempts[0];
      const sig = await k.chain.sendUsdc(payer, a.address, BigInt(a.pay_amount), { createAta: true });
      let finalizedAt = 0;
      for (;;) {
        const st = (await k.chain.rpc('getSignatureStatuses', [[sig]])).value[0];
        if (!finalizedAt && st?.confirmationStatus === 'finalized') finalizedAt = performance.now();
        if (k.receiver!.events.some((e) => e.data?.id === id && e.type === 'payment.paid')) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      out.push(performance.now() - finalizedAt);
    }
    return {
      poll_interval_ms: pollIntervalMs,
      slot_ms: 400,
      finality_depth_blocks: 32,
      ms_from_finalized_to_webhook: stats(out, 2),
    };
  } finally {
    await k.chain.rpc('harness_autoProduce', [0]).catch(() => {});
    await workers.stop();
    await k.close();
    await node.stop();
  }
}

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  try {
    const perSlot = await perSlotCost();
    const latency10 = await paidLatency(10_000);
    const latency1 = await paidLatency(1_000);
    return {
      goal: 'same cost per slot at every number of open addresses; at most 2 RPC calls per slot',
      per_slot: perSlot,
      paid_latency: { default_poll: latency10, poll_1s: latency1 },
      note: 'rpc_calls_per_slot and cpu_ms_per_slot are per slot produced (skipped slots included) over ticks that each follow SLOTS_PER_TICK slots; a tick costs (blocks + 2) calls. cpu is the whole Kasse process (watcher, payments module, PostgreSQL client); the node runs in its own process.',
    };
  } finally {
    await pg.stop();
  }
}
