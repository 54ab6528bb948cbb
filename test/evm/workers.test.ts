/**
 * The workers role drives the EVM watcher on its own timer (`poll_interval_ms`), through the chain registry, with the
 * webhook delivery loop: a payment on the run's shared Hardhat node is detected and paid with no manual ticks, and
 * stopping the workers stops the watcher.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Loop } from '../../src/core/loop.ts';
import { startWorkers, type Workers } from '../../src/workers/index.ts';
import { startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import { eventually } from '../harness/expect.ts';
import { sharedEvmRpc } from '../harness/hardhat.ts';

const POLL_MS = 200;

let k: EvmKasse;
let workers: Workers | null = null;

before(async () => {
  k = await startEvmKasse({
    rpcUrl: sharedEvmRpc(),
    pollIntervalMs: POLL_MS,
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
  });
});
after(async () => {
  await workers?.stop();
  await k?.close();
});

test('the workers role watches the chain on its poll interval and the payment is paid without manual ticks', async () => {
  workers = startWorkers(k.t.kasse);
  const res = await k.m.test.post('/payments', {
    price_amount: 700,
    price_currency: 'USD',
    order_id: 'workers-1',
    chain: 'base',
    token: 'base:usdc',
  });
  assert.equal(res.status, 201);
  const id = res.body.id as string;
  await k.chain.receipt(
    await k.chain.sendToken(k.payer, k.usdc, res.body.attempts[0].address, BigInt(res.body.attempts[0].pay_amount)),
  );
  await eventually('payment.detected', async () => k.eventTypes(id).includes('payment.detected'), {
    timeoutMs: 15_000,
  });
  await k.chain.mine(2);
  await eventually('paid', async () => (await k.m.test.get(`/payments/${id}`)).body.status === 'paid', {
    timeoutMs: 15_000,
  });
  await eventually('payment.paid webhook', async () => k.eventTypes(id).includes('payment.paid'), {
    timeoutMs: 15_000,
  });

  await workers.stop();
  workers = null;
  const cursor = (await k.watcher.cursor())!.number;
  await k.chain.mine(3);
  const head = await k.chain.blockNumber();
  // A loop of its own on the watcher's poll interval, started after the stop: once three of its passes have seen the
  // new blocks, the watcher's loop, had it kept running, would have polled and moved the cursor to them.
  let passes = 0;
  const control = new Loop(
    'control',
    POLL_MS,
    async () => {
      if ((await k.chain.blockNumber()) >= head) passes++;
    },
    k.t.kasse.log,
  ).start();
  await eventually('three passes on the poll interval', () => passes >= 3).finally(() => control.stop());
  assert.equal((await k.watcher.cursor())!.number, cursor, 'no watcher runs after stop');
});
