/**
 * Disbursement payouts on a private Hardhat node: gas per payout and wall time for batches of 1, 50 and 500 USDC
 * payouts sent through Kasse (release → the sender's batches through the Disperse contract → every payout `sent`),
 * against 500 plain ERC-20 `transfer`s from the same hot wallet in the same run. Every recipient is a fresh address
 * on both sides (its token balance goes from zero to non-zero, the costly case). Goal: a payout in a batch costs at
 * most 0.6 of a plain transfer's gas.
 *
 * Wall time runs from the release to the last payout `sent` and its `payout.sent` event (Kasse's worker passes with
 * one block mined between passes; two confirmations), and for the plain transfers from the first send to the last
 * receipt (automine). `wall_ratio_500_to_plain` sets the 500-payout batch against the mean of the two plain runs
 * (goal: at most 1.2).
 */
import { randomBytes } from 'node:crypto';
import { uptime, loadavg } from 'node:os';
import { createWalletClient, encodeFunctionData, getAddress, http, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { erc20Abi } from '../src/chains/evm/contracts.ts';
import { createUser } from '../test/harness/dashboard.ts';
import { startEvmKasse, type EvmKasse } from '../test/harness/evm-kasse.ts';
import { hardhatChain, startHardhatNode, TestChain } from '../test/harness/hardhat.ts';
import { benchDatabase } from './_pg.ts';

const SIZES = (process.env.BENCH_DSB_SIZES ?? '1,50,500').split(',').map(Number);
const PLAIN = Number(process.env.BENCH_DSB_PLAIN ?? 500);

const fresh = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);

async function gasOf(k: EvmKasse, hashes: Iterable<string>): Promise<bigint> {
  let gas = 0n;
  for (const hash of hashes) gas += (await k.chain.client.getTransactionReceipt({ hash: hash as Hex })).gasUsed;
  return gas;
}

async function batchRun(k: EvmKasse, owner: { id: string }, size: number) {
  const items = Array.from({ length: size }, (_, i) => ({ destination: fresh(), usd_cents: 100 + (i % 50) }));
  const res = await k.m.test.post('/disbursements', { title: `bench ${size}`, items });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  const d = k.t.kasse.disbursements;
  const actor = { type: 'user' as const, id: owner.id, label: 'bench', ip: null };
  await d.approve(
    { mode: 'test', merchantId: k.m.id },
    res.body.id,
    owner.id,
    await d.digest({ mode: 'test', merchantId: k.m.id }, res.body.id),
    actor,
  );
  const sender = k.adapter.sender!;
  const t0 = performance.now();
  await d.release({ mode: 'test', merchantId: k.m.id }, res.body.id, owner.id, actor);
  let passes = 0;
  for (;;) {
    k.t.clock.advance(60_000);
    await sender.runDue();
    passes++;
    const published = await payoutEvents(k, res.body.id);
    const lastSentMs = performance.now() - t0;
    const now = await d.get({ mode: 'test', merchantId: k.m.id }, res.body.id);
    if (now.progress.open === 0) {
      if (published !== size) throw new Error(`${published} payout events for ${size} payouts`);
      const ms = performance.now() - t0;
      if (now.progress.failed > 0) throw new Error(`${now.progress.failed} payouts failed`);
      const hashes = new Set(now.items.map((i) => i.payout!.tx_hash!));
      const gas = await gasOf(k, hashes);
      return {
        payouts: size,
        transactions: hashes.size,
        gas_total: Number(gas),
        gas_per_payout: Math.round(Number(gas) / size),
        wall_ms: Math.round(ms),
        release_to_last_payout_sent_ms: Math.round(lastSentMs),
        worker_passes: passes,
      };
    }
    if (passes > 100) throw new Error('payouts still open after 100 passes');
    await k.chain.mine(1);
  }
}

/** `payout.sent` and `payout.failed` events published for a disbursement so far. */
async function payoutEvents(k: EvmKasse, disbursementId: string): Promise<number> {
  const rows = await k.t.kasse.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('ordering_key', '=', disbursementId)
    .where('type', 'in', ['payout.sent', 'payout.failed'])
    .executeTakeFirstOrThrow();
  return Number(rows.n);
}

/** `count` plain USDC transfers from the hot wallet to fresh addresses, sent one after another (automine). */
export async function plainRun(k: EvmKasse, count: number) {
  const account = privateKeyToAccount(k.hotWalletKey);
  const wallet = createWalletClient({ account, chain: hardhatChain, transport: http(k.chain.url) });
  const t0 = performance.now();
  const hashes: Hex[] = [];
  for (let i = 0; i < count; i++) {
    hashes.push(
      await wallet.sendTransaction({
        to: k.usdc,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: 'transfer',
          args: [fresh(), 1_000_000n + BigInt(i % 50) * 10_000n],
        }),
        account,
        chain: hardhatChain,
      }),
    );
  }
  for (const h of hashes) await k.chain.receipt(h);
  const ms = performance.now() - t0;
  const gas = await gasOf(k, hashes);
  return {
    transfers: count,
    gas_total: Number(gas),
    gas_per_transfer: Math.round(Number(gas) / count),
    wall_ms: Math.round(ms),
  };
}

export async function run(): Promise<object> {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  const node = await startHardhatNode();
  const load: number[][] = [loadavg()];
  try {
    const chain = new TestChain(node.url);
    const disperse = await chain.deployDisperse(await chain.newWallet());
    const k = await startEvmKasse({
      rpcUrl: node.url,
      receiver: false,
      tiers: [{ max_usd_cents: null, confirmations: 2 }],
      finality: 4,
      evm: { disperse, disperse_max_items: 500 },
    });
    try {
      const sender = k.adapter.sender!;
      await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, sender.address, 10n ** 13n));
      const owner = await createUser(k.t.kasse, k.m.id, 'bench@example.com', 'owner');
      // The merchant's balance: one real USDC payment of $10,000 seen by the watcher.
      const pay = await k.m.test.post('/payments', {
        price_amount: 1_000_000,
        price_currency: 'USD',
        order_id: 'bench-funds',
        chain: 'base',
        token: 'base:usdc',
      });
      await k.chain.receipt(
        await k.chain.sendToken(k.payer, k.usdc, pay.body.attempts[0].address, BigInt(pay.body.attempts[0].pay_amount)),
      );
      for (let i = 0; i < 6; i++) {
        await k.tick();
        await k.chain.mine(1);
      }
      // The one-time approval of the contract is made by the first batch; a warm-up batch keeps it out of the figures.
      await batchRun(k, owner, 2);
      const batches: object[] = [];
      const plain: object[] = [];
      // Alternate: plain transfers between the batch sizes, so both sides see the same machine load.
      plain.push(await plainRun(k, PLAIN));
      for (const size of SIZES) {
        batches.push(await batchRun(k, owner, size));
        load.push(loadavg());
      }
      plain.push(await plainRun(k, PLAIN));
      load.push(loadavg());
      const plainGas = (plain[0] as { gas_per_transfer: number }).gas_per_transfer;
      const largest = batches[batches.length - 1] as { gas_per_payout: number };
      const plainWall = plain.reduce((s, p) => s + (p as { wall_ms: number }).wall_ms, 0) / plain.length;
      const of = (n: number) =>
        batches.find((b) => (b as { payouts: number }).payouts === n) as
          | { release_to_last_payout_sent_ms: number }
          | undefined;
      const ratio = (x: number) => Math.round(x * 1000) / 1000;
      return {
        goal: "a payout in a batch costs at most 0.6 of a plain ERC-20 transfer's gas; release to the last payout.sent of 500 payouts takes at most 1.2 times 500 plain transfers",
        batches,
        plain_transfers: plain,
        release_to_last_payout_sent_ms: {
          50: of(50)?.release_to_last_payout_sent_ms ?? null,
          500: of(500)?.release_to_last_payout_sent_ms ?? null,
        },
        wall_ratio_500_to_plain: of(500) ? ratio(of(500)!.release_to_last_payout_sent_ms / plainWall) : null,
        ratio_gas_per_payout_largest_batch_to_plain: ratio(largest.gas_per_payout / plainGas),
        load_average_1m_during_run: load.map((l) => l[0]!.toFixed(1)),
        machine_uptime_s: Math.round(uptime()),
        note: "A batch of 1 is sent as a plain transfer (batches start at two payouts). Batches of 50 and 500 are one Disperse transaction each (disperse_max_items 500 here; the default is 200). Gas is from the receipts; wall time includes Kasse's database work, the confirmations and Hardhat on the same two cores.",
      };
    } finally {
      await k.close();
    }
  } finally {
    await node.stop();
    await pg.stop();
  }
}
