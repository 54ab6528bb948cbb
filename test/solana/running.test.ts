/**
 * Solana as the program runs it: `GET /currencies` on the test API offers solana:sol and solana:usdc (gasless)
 * served by a registered adapter; with the workers role running, the watcher and the sender work on their timers
 * (a payment is found and its token account opened without any test driving them); live Solana stays unavailable
 * until a treasury is configured; the `kasse solana` commands report status and sweep.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SolanaAdapter } from '../../src/chains/solana/adapter.ts';
import { solanaCommands } from '../../src/chains/solana/commands.ts';
import { startWorkers, type Workers } from '../../src/workers/index.ts';
import { eventually } from '../harness/expect.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';

let k: SolanaKasse;
let workers: Workers;

before(async () => {
  k = await startSolanaKasse({ pollIntervalMs: 100 });
  workers = startWorkers(k.t.kasse);
});
after(async () => {
  await workers?.stop();
  await k?.close();
});

test('GET /currencies offers solana:sol and solana:usdc (gasless) on the test API, served by the Solana adapter', async () => {
  const res = await k.m.test.get('/currencies');
  assert.equal(res.status, 200);
  const sol = res.body.data.find((c: { token: string }) => c.token === 'solana:sol');
  const usdc = res.body.data.find((c: { token: string }) => c.token === 'solana:usdc');
  assert.deepEqual(
    { ...sol, rate: sol.rate },
    {
      token: 'solana:sol',
      chain: 'solana',
      symbol: 'SOL',
      name: 'Solana',
      decimals: 9,
      min_amount: '7000000',
      min_amount_display: '0.007',
      rate: '150',
      rate_source: 'coingecko',
      paused: false,
      gasless: false,
      holdable: false,
      network_status: 'running',
      network_status_reason: null,
    },
  );
  assert.equal(usdc.gasless, true);
  assert.equal(usdc.holdable, false, 'Solana has no escrow to hold a payment in');
  assert.equal(usdc.paused, false);
  assert.equal(usdc.rate_source, 'peg');
  assert.ok(k.t.kasse.chains.adapter('test', 'solana') instanceof SolanaAdapter);
  const live = await k.m.live.get('/currencies');
  assert.ok(
    live.body.data.filter((c: { chain: string }) => c.chain === 'solana').every((c: { paused: boolean }) => c.paused),
    'live Solana waits for a treasury',
  );
});

test('with the workers running, the token account is opened and the payment found without anyone ticking', async () => {
  await k.chain.rpc('harness_autoProduce', [100]);
  try {
    const res = await k.m.test.post('/payments', {
      price_amount: 1000,
      price_currency: 'USD',
      order_id: 'running-1',
      chain: 'solana',
      token: 'solana:usdc',
    });
    const a = res.body.attempts[0];
    const ata = await k.chain.ata(a.address);
    await eventually('the token account', () => k.chain.exists(ata), { timeoutMs: 30_000 });
    const payer = await k.payer(1_000_000_000n, 50_000_000n);
    await k.chain.sendUsdc(payer, a.address, BigInt(a.pay_amount));
    await eventually(
      'payment.paid',
      async () => k.receiver!.events.some((e) => e.data?.id === res.body.id && e.type === 'payment.paid'),
      { timeoutMs: 30_000 },
    );
    assert.equal((await k.m.test.get(`/payments/${res.body.id}`)).body.status, 'paid');
  } finally {
    await k.chain.rpc('harness_autoProduce', [0]);
  }
});

test('kasse solana status and sweep --dry-run', async () => {
  const status = solanaCommands.find((c) => c.name === 'solana status')!;
  const s = (await status.run(k.t.kasse.familyContext, { mode: 'test' }, [])) as Record<string, unknown>;
  assert.equal(s.hot_wallet, k.hotWallet);
  assert.equal(s.treasury, k.treasury);
  assert.ok(BigInt(s.hot_wallet_lamports as string) > 0n);
  assert.ok(Number(s.behind_slots) >= 0);
  const sweep = solanaCommands.find((c) => c.name === 'solana sweep')!;
  const dry = (await sweep.run(k.t.kasse.familyContext, { mode: 'test', 'dry-run': true }, [])) as {
    dry_run: boolean;
    transfers: unknown[];
  };
  assert.equal(dry.dry_run, true);
  assert.deepEqual(dry.transfers, []);
  await assert.rejects(sweep.run(k.t.kasse.familyContext, { mode: 'live' }, []), /no rpc_urls|no live Solana|has no/);
});
