/**
 * Push over Solana's PubSub WebSocket, on a PRIVATE test node (this file finalizes by hand and cuts the node's
 * PubSub): the network lists `ws_urls`, the watcher subscribes with `slotSubscribe`, and each new slot or commitment
 * change wakes it at once (a 60 s poll could not). Cutting the WebSocket mid-payment falls back to polling within one
 * interval, reconnection restores push, and no deposit or event is missed or doubled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { WebSocket } from 'ws';
import { solanaCommands } from '../../src/chains/solana/commands.ts';
import type { SolanaWatcher } from '../../src/chains/solana/watcher.ts';
import { eventually } from '../harness/expect.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';
import { startSolanaNode, type SolanaNode } from '../harness/solana.ts';

let node: SolanaNode;
let k: SolanaKasse;
const payments: string[] = [];

before(async () => {
  node = await startSolanaNode({ listeners: 2 });
  // Far longer than any wait below: only a push can wake the watcher in time.
  k = await startSolanaKasse({ node, wsUrls: node.wsUrls, pollIntervalMs: 60_000 });
  await k.tick();
});
after(async () => {
  await k?.close();
  await node?.stop();
});

/** A watcher reconnecting fast (tests), optionally polling every `pollIntervalMs`. */
function watcher(pollIntervalMs?: number): SolanaWatcher {
  const network = pollIntervalMs ? { ...k.adapter.network, pollIntervalMs } : k.adapter.network;
  return k.adapter.watcher(k.t.kasse.payments.deposits, {
    network,
    push: { ...k.adapter.push(), baseMs: 50, maxMs: 200 },
  });
}

let seq = 0;
/** A SOL payment of `cents` sent now (in the open slot: produce one to land it). */
async function pay(cents = 1000): Promise<string> {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `push-${++seq}`,
    chain: 'solana',
    token: 'solana:sol',
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const attempt = res.body.attempts[0];
  const payer = await k.payer();
  await k.chain.sendSol(payer, attempt.address, BigInt(attempt.pay_amount));
  payments.push(res.body.id);
  return res.body.id;
}

const status = async (id: string): Promise<string> => (await k.m.test.get(`/payments/${id}`)).body.status;
/** Waits until payment `id` has one of the statuses `want` (`|`-separated). */
const reaches = (id: string, want: string, timeoutMs = 5_000) =>
  eventually(`${id} ${want}`, async () => want.split('|').includes(await status(id)), { timeoutMs });

describe('the harness PubSub speaks the wire format', () => {
  test('slotSubscribe answers a subscription id, then slotNotification {parent, root, slot} per new slot', async () => {
    const ws = new WebSocket(node.wsUrls[0]!);
    const messages: Array<Record<string, any>> = [];
    ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString('utf8'))));
    await new Promise<void>((resolve) => ws.on('open', () => resolve()));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'slotSubscribe' }));
    const ack = await eventually('ack', () => messages.find((m) => m.id === 7));
    assert.equal(typeof ack.result, 'number');
    const slot = await k.chain.produce();
    const note = await eventually('notification', () => messages.find((m) => m.method === 'slotNotification'));
    assert.deepEqual(Object.keys(note.params).sort(), ['result', 'subscription']);
    assert.equal(note.params.subscription, ack.result);
    assert.equal(note.params.result.slot, slot);
    const state = await k.chain.state();
    assert.equal(note.params.result.root, state.finalized);
    assert.ok(note.params.result.parent < slot);
    ws.terminate();
  });
});

describe('Solana push', () => {
  test('a new slot wakes the watcher (paid at confirmed), and so does finality (paid at finalized)', async () => {
    const w = watcher().start();
    try {
      await eventually('push live', () => w.watchPath === 'push');
      const small = await pay(1000);
      await k.chain.produce();
      await reaches(small, 'paid');
      const large = await pay(20_000); // above 100 USD: 32 confirmations, paid at finalized
      await k.chain.produce();
      await reaches(large, 'detected|confirming');
      await k.chain.finalize();
      await reaches(large, 'paid');
    } finally {
      await w.stop();
    }
  });

  test('on the push path a slot costs about one RPC call: its block, read at once; finality when the root moves', async () => {
    const w = watcher().start();
    const rpc = k.adapter.rpc();
    const calls = () =>
      ['getBlocksWithLimit', 'getBlock', 'batch:getBlock', 'getSlot'].reduce((n, m) => n + (rpc.counts.get(m) ?? 0), 0);
    try {
      await eventually('push live', () => w.watchPath === 'push');
      await eventually('caught up', async () => (await w.cursor())?.slot === BigInt((await k.chain.state()).tip));
      const before = calls();
      const p = await pay(1000);
      const slots = 24;
      for (let i = 0; i < slots; i++) {
        const slot = await k.chain.produce();
        await eventually(`slot ${slot} read`, async () => (await w.cursor())!.slot >= BigInt(slot));
      }
      await reaches(p, 'paid');
      const perSlot = (calls() - before) / slots;
      assert.ok(perSlot <= 1.2, `${perSlot} RPC calls per slot`);
    } finally {
      await w.stop();
    }
  });

  test('the WebSocket is cut mid-payment: polling covers within one interval, push comes back', async () => {
    const w = watcher(500).start();
    const cut = (pubsub: boolean) =>
      Promise.all([0, 1].map((i) => k.chain.rpc('harness_setListener', [i, { pubsub }])));
    try {
      await eventually('push live', () => w.watchPath === 'push');
      const p = await pay(20_000);
      await k.chain.produce();
      await reaches(p, 'detected|confirming');

      await cut(false);
      await eventually('poll after the cut', () => w.watchPath === 'poll');
      const metrics = await k.t.kasse.metrics.registry.metrics();
      assert.ok(metrics.includes('kasse_chain_watch_path{chain="solana",mode="test",path="poll"} 1'), metrics);
      await k.chain.finalize();
      await reaches(p, 'paid', 4_000);
      const q = await pay(1000);
      await k.chain.produce();
      await reaches(q, 'paid', 4_000);

      await cut(true);
      await eventually('push again', () => w.watchPath === 'push');
      const r = await pay(1000);
      await k.chain.produce();
      await reaches(r, 'paid');
    } finally {
      await cut(true);
      await w.stop();
    }
  });

  test('kasse solana status: push while the node takes slotSubscribe, poll (and why) when it does not', async () => {
    const status = solanaCommands.find((c) => c.name === 'solana status')!;
    const run = async () =>
      (await status.run(k.t.kasse.familyContext, { mode: 'test' }, [])) as Record<string, unknown>;
    assert.equal((await run()).watch_path, 'push');
    await Promise.all([0, 1].map((i) => k.chain.rpc('harness_setListener', [i, { pubsub: false }])));
    try {
      const down = await run();
      assert.equal(down.watch_path, 'poll');
      assert.match(String(down.push_error), /127\.0\.0\.1/);
    } finally {
      await Promise.all([0, 1].map((i) => k.chain.rpc('harness_setListener', [i, { pubsub: true }])));
    }
  });

  test('nothing was missed or doubled: one deposit and one event of each kind per payment', async () => {
    for (const id of payments) {
      const deposits = await k.t.kasse.db.selectFrom('deposits').select('id').where('payment_id', '=', id).execute();
      assert.equal(deposits.length, 1, `${id}: one deposit`);
      const types = (
        await k.t.kasse.db
          .selectFrom('events')
          .select('type')
          .where(sql<string>`data->>'id'`, '=', id)
          .orderBy('seq')
          .execute()
      ).map((e) => e.type);
      assert.deepEqual(
        types.filter((t) => t === 'payment.detected' || t === 'payment.paid'),
        ['payment.detected', 'payment.paid'],
        `${id}: ${types.join(', ')}`,
      );
    }
  });
});
