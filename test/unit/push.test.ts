/** The push channel against small loopback WebSocket servers: subscribe, wake once per news, back off, report its path. */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { createLogger } from '../../src/core/log.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { PushChannel, probePush } from '../../src/chains/push.ts';
import { eventually } from '../harness/expect.ts';

const log = createLogger('silent');
const servers: WebSocketServer[] = [];
after(() => {
  for (const s of servers) {
    for (const c of s.clients) c.terminate();
    s.close();
  }
});

/** A server on a free loopback port; `onConnection` decides what each connection gets. */
async function server(onConnection: (ws: WebSocket) => void): Promise<string> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(wss);
  wss.on('connection', onConnection);
  await new Promise<void>((resolve) => wss.on('listening', () => resolve()));
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
}

/** Acknowledges every subscription request with an id; `sockets` collects the connections. */
function acking(sockets: WebSocket[]) {
  return (ws: WebSocket) => {
    sockets.push(ws);
    ws.on('message', (d: Buffer) => {
      const req = JSON.parse(d.toString('utf8'));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result: `0xsub${req.id}` }));
    });
  };
}

const note = (ws: WebSocket, result: unknown) =>
  ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription: '0xsub1', result } }));

describe('push channel', () => {
  test('live once every subscription is acknowledged; wakes once per news; the gauge names the path', async () => {
    const sockets: WebSocket[] = [];
    const url = await server(acking(sockets));
    const metrics = new Metrics();
    let wakes = 0;
    const channel = new PushChannel({
      urls: [url],
      subscribe: [
        { method: 'eth_subscribe', params: ['newHeads'] },
        { method: 'eth_subscribe', params: ['logs', {}] },
      ],
      news: (r) => (r as { hash: string }).hash,
      chain: 'base',
      mode: 'test',
      log,
      metrics,
      onEvent: () => wakes++,
    }).start();
    try {
      await eventually('push', () => channel.path === 'push');
      assert.equal(wakes, 1, 'subscribing wakes once (anything missed while away is read)');
      assert.match(
        await metrics.registry.metrics(),
        /kasse_chain_watch_path\{chain="base",mode="test",path="push"\} 1/,
      );
      note(sockets[0]!, { hash: '0xa' });
      note(sockets[0]!, { hash: '0xa' }); // the same block's logs
      note(sockets[0]!, { hash: '0xb' });
      await eventually('two wakes', () => wakes === 3);
      sockets[0]!.terminate();
      await eventually('poll', () => channel.path === 'poll');
      assert.match(
        await metrics.registry.metrics(),
        /kasse_chain_watch_path\{chain="base",mode="test",path="poll"\} 1/,
      );
      await eventually('reconnected', () => channel.path === 'push' && sockets.length === 2);
    } finally {
      channel.stop();
    }
  });

  test('a refused connection backs off, doubling up to the cap', async () => {
    const at: number[] = [];
    const url = await server((ws) => {
      at.push(Date.now());
      ws.terminate();
    });
    const channel = new PushChannel({
      urls: [url],
      subscribe: [{ method: 'slotSubscribe', params: [] }],
      baseMs: 40,
      maxMs: 160,
      random: () => 1,
      chain: 'solana',
      mode: 'test',
      log,
      onEvent: () => assert.fail('never subscribed'),
    }).start();
    try {
      await eventually('six attempts', () => at.length >= 6, { timeoutMs: 5_000 });
      const gaps = at.slice(1).map((t, i) => t - at[i]!);
      // Delays 40, 80, 160, 160, 160 ms (plus connection time).
      assert.ok(gaps[0]! >= 35 && gaps[1]! >= 75 && gaps[2]! >= 150, `gaps ${gaps.join(', ')}`);
      assert.ok(gaps[4]! < 400, `capped: ${gaps.join(', ')}`);
      assert.equal(channel.path, 'poll');
      assert.ok(channel.drops >= 5);
    } finally {
      channel.stop();
    }
  });

  test('probe: push when a node acknowledges, poll with the reason when it refuses or none is configured', async () => {
    const good = await server(acking([]));
    const refusing = await server((ws) =>
      ws.on('message', (d: Buffer) =>
        ws.send(
          JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(String(d)).id, error: { code: -32601, message: 'nope' } }),
        ),
      ),
    );
    const subscribe = [{ method: 'slotSubscribe', params: [] }];
    assert.deepEqual(await probePush({ urls: [refusing, good], subscribe }), {
      path: 'push',
      url: good,
      error: null,
    });
    const refused = await probePush({ urls: [refusing], subscribe });
    assert.equal(refused.path, 'poll');
    assert.match(refused.error!, /nope/);
    assert.deepEqual(await probePush({ urls: [], subscribe }), {
      path: 'poll',
      url: null,
      error: 'no ws_urls configured',
    });
  });
});
