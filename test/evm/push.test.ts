/**
 * Push over WebSocket: Kasse's network lists `ws_urls` (a relay in front of the run's shared Hardhat node, which
 * serves WebSocket on its HTTP port), the watcher subscribes to `newHeads` and token `logs`, and each new head wakes
 * it at once. Killing the WebSocket mid-payment falls back to polling within one interval, reconnection restores
 * push, and no deposit, event or block is missed or doubled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Address } from 'viem';
import { evmPush } from '../../src/chains/evm/adapter.ts';
import { evmCommands } from '../../src/chains/evm/commands.ts';
import type { EvmWatcher } from '../../src/chains/evm/watcher.ts';
import { startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import { eventually } from '../harness/expect.ts';
import { sharedEvmRpc } from '../harness/hardhat.ts';
import { startRpcProxy, type RpcProxy } from '../harness/rpc-proxy.ts';

let k: EvmKasse;
let proxy: RpcProxy;
let firstCursor: bigint;
const paid: string[] = [];

before(async () => {
  proxy = await startRpcProxy(sharedEvmRpc());
  k = await startEvmKasse({
    rpcUrl: sharedEvmRpc(),
    kasseRpcUrls: [proxy.url],
    wsUrls: [proxy.wsUrl],
    // Far longer than any wait below: only a push can wake the watcher in time.
    pollIntervalMs: 60_000,
    tiers: [{ max_usd_cents: null, confirmations: 3 }],
    finality: 10_000,
  });
  await k.tick();
  firstCursor = (await k.watcher.cursor())!.number;
});
after(async () => {
  await k?.close();
  await proxy?.close();
});

/** A watcher reconnecting fast (tests), optionally polling every `pollIntervalMs`. */
function watcher(pollIntervalMs?: number): EvmWatcher {
  const network = pollIntervalMs ? { ...k.adapter.network, pollIntervalMs } : k.adapter.network;
  return k.adapter.watcher(k.t.kasse.payments.deposits, {
    network,
    push: { ...evmPush(k.adapter.network), baseMs: 50, maxMs: 200 },
  });
}

let orderSeq = 0;
/** A USDC payment sent in one block (automine); returns once that block is mined. */
async function pay(): Promise<{ id: string; address: Address }> {
  const res = await k.m.test.post('/payments', {
    price_amount: 500,
    price_currency: 'USD',
    order_id: `push-${++orderSeq}`,
    chain: 'base',
    token: 'base:usdc',
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const p = { id: res.body.id as string, address: res.body.attempts[0].address as Address };
  await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, BigInt(res.body.attempts[0].pay_amount)));
  paid.push(p.id);
  return p;
}

const status = async (id: string): Promise<string> => (await k.m.test.get(`/payments/${id}`)).body.status;
/** Waits until payment `id` has one of the statuses `want` (`|`-separated). */
const reaches = (id: string, want: string, timeoutMs = 5_000) =>
  eventually(`${id} ${want}`, async () => want.split('|').includes(await status(id)), { timeoutMs });
const pathGauge = async (path: 'push' | 'poll') =>
  (await k.t.kasse.metrics.registry.metrics()).includes(
    `kasse_chain_watch_path{chain="base",mode="test",path="${path}"} 1`,
  );

describe('EVM push', () => {
  test('each new head wakes the watcher: detected and paid long before the 60 s poll', async () => {
    const w = watcher().start();
    try {
      await eventually('push live', () => w.watchPath === 'push');
      assert.ok(await pathGauge('push'), '/metrics says push');
      const p = await pay();
      await reaches(p.id, 'detected|confirming');
      await k.chain.mine(2);
      await reaches(p.id, 'paid');
    } finally {
      await w.stop();
    }
  });

  test('the WebSocket dies mid-payment: polling covers within one interval, push comes back, nothing doubles', async () => {
    const w = watcher(500).start();
    try {
      await eventually('push live', () => w.watchPath === 'push');
      const p = await pay();
      await reaches(p.id, 'detected|confirming');

      proxy.refuseSockets(true);
      proxy.dropSockets();
      await eventually('poll after the drop', () => w.watchPath === 'poll');
      assert.ok(await pathGauge('poll'), '/metrics says poll');
      await k.chain.mine(2);
      await reaches(p.id, 'paid', 4_000);
      const q = await pay();
      await k.chain.mine(2);
      await reaches(q.id, 'paid', 4_000);

      const opened = proxy.socketsOpened;
      proxy.refuseSockets(false);
      await eventually('push again', () => w.watchPath === 'push');
      assert.ok(proxy.socketsOpened > opened, 'it reconnected');
      const r = await pay();
      await k.chain.mine(2);
      await reaches(r.id, 'paid');
    } finally {
      proxy.refuseSockets(false);
      await w.stop();
    }
  });

  test('kasse evm status: push while the node takes the subscriptions, poll (and why) when it does not', async () => {
    const status = evmCommands.find((c) => c.name === 'evm status')!;
    const run = async () =>
      (await status.run(k.t.kasse.familyContext, { mode: 'test', chain: 'base' }, [])) as Record<string, unknown>;
    const up = await run();
    assert.equal(up.watch_path, 'push');
    assert.equal(up.push_url, new URL(proxy.wsUrl).origin);
    proxy.refuseSockets(true);
    try {
      const down = await run();
      assert.equal(down.watch_path, 'poll');
      assert.match(String(down.push_error), /127\.0\.0\.1/);
    } finally {
      proxy.refuseSockets(false);
    }
  });

  test('nothing was missed or doubled: one deposit and one event of each kind per payment, no block gap', async () => {
    for (const id of paid) {
      const deposits = await k.t.kasse.db.selectFrom('deposits').select('id').where('payment_id', '=', id).execute();
      assert.equal(deposits.length, 1, `${id}: one deposit`);
      const events = await k.t.kasse.db
        .selectFrom('events')
        .select('type')
        .where(sql<string>`data->>'id'`, '=', id)
        .orderBy('seq')
        .execute();
      const types = events.map((e) => e.type);
      assert.deepEqual(
        types.filter((t) => t === 'payment.detected' || t === 'payment.paid'),
        ['payment.detected', 'payment.paid'],
        `${id}: ${types.join(', ')}`,
      );
    }
    const rows = await k.t.kasse.db
      .selectFrom('evm_blocks')
      .select(['number', 'hash', 'parent_hash'])
      .where('mode', '=', 'test')
      .where('chain', '=', 'base')
      .where('number', '>=', String(firstCursor) as never)
      .orderBy('number')
      .execute();
    for (let i = 1; i < rows.length; i++) {
      assert.equal(BigInt(rows[i]!.number), BigInt(rows[i - 1]!.number) + 1n, `gap after block ${rows[i - 1]!.number}`);
      assert.equal(rows[i]!.parent_hash, rows[i - 1]!.hash, `block ${rows[i]!.number} does not link`);
    }
  });
});
