/**
 * The test API's event stream (GET /test/events/stream): a merchant's test events as server-sent events, in commit
 * order, each carrying exactly its webhook's body; filters by type; resumes after Last-Event-ID without losing or
 * repeating what it replays; refuses what it must (live API, keys, unknown resume points, too many streams); and
 * lets the server shut down.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import { Agent, fetch } from 'undici';
import { createSseParser, type SseMessage } from '../../sdk/src/index.ts';
import { withTx } from '../../src/db/index.ts';
import { MAX_STREAMS_PER_MERCHANT } from '../../src/modules/webhooks/stream.ts';
import { ApiClient, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { startWebhookReceiver } from '../harness/webhook-receiver.ts';

let t: TestKasse;
before(async () => {
  t = await startTestKasse();
});
after(() => t.close());

interface OpenStream {
  status: number;
  headers: Headers;
  messages: SseMessage[];
  retry: number | null;
  /** Resolves with the next `n` messages not taken yet (rejects after 10 s with what arrived). */
  next(n: number): Promise<SseMessage[]>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

async function openStream(
  key: string,
  opts: { types?: string; lastEventId?: string; base?: string } = {},
): Promise<OpenStream> {
  const ctl = new AbortController();
  // A connection of its own, let go with the stream: a closed stream leaves no connection behind that the server's
  // close would wait for (Node reaps a connection that never sent a request only at its 60 s header timeout).
  const agent = new Agent();
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, accept: 'text/event-stream' };
  if (opts.lastEventId) headers['last-event-id'] = opts.lastEventId;
  const res = await fetch(`${opts.base ?? t.urls.test}/test/events/stream${opts.types ? `?types=${opts.types}` : ''}`, {
    headers,
    signal: ctl.signal,
    dispatcher: agent,
  });
  const messages: SseMessage[] = [];
  let taken = 0;
  let wake = () => {};
  const s: OpenStream = {
    status: res.status,
    headers: res.headers,
    messages,
    retry: null,
    ended: Promise.resolve(),
    next(n) {
      const want = (taken += n);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `expected ${want} messages, got ${messages.length}: ${messages.map((m) => m.event).join(', ')}`,
              ),
            ),
          10_000,
        );
        const check = () => {
          if (messages.length < want) return void (wake = check);
          clearTimeout(timer);
          resolve(messages.slice(want - n, want));
        };
        check();
      });
    },
    close: () => {
      ctl.abort();
      void agent.destroy();
    },
  };
  if (!res.ok) {
    s.messages.push({ id: undefined, event: 'error', data: await res.text() });
    await agent.close();
    return s;
  }
  const parser = createSseParser(
    (m) => {
      messages.push(m);
      wake();
    },
    (ms) => (s.retry = ms),
  );
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  s.ended = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        parser.push(decoder.decode(value, { stream: true }));
      }
    } catch {
      // aborted by the test
    } finally {
      void agent.destroy();
    }
  })();
  return s;
}

const newPayment = (m: TestMerchant, orderId = 'o-1') =>
  m.test.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: orderId }).then((r) => r.body);
const simulate = (m: TestMerchant, id: string, outcome: string) =>
  m.test.post(`/test/payments/${id}/simulate`, { outcome });

describe('the event stream', () => {
  test('sends each test event as it is committed, with the exact body its webhook carries, in commit order', async () => {
    const r = await startWebhookReceiver({ now: () => t.clock.now() });
    const m = await t.merchant({ webhookUrl: r.url });
    r.setSecret(m.webhookSecret);
    const s = await openStream(m.testKey);
    try {
      assert.equal(s.status, 200);
      assert.match(s.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(s.headers.get('cache-control'), 'no-store');
      const p1 = await newPayment(m, 'a');
      const p2 = await newPayment(m, 'b');
      await simulate(m, p1.id, 'paid');
      await m.test.post(`/payments/${p2.id}/cancel`);
      await simulate(m, (await newPayment(m, 'c')).id, 'expired');
      const got = await s.next(3);
      assert.deepEqual(
        got.map((x) => [x.event, JSON.parse(x.data).data.order_id]),
        [
          ['payment.paid', 'a'],
          ['payment.cancelled', 'b'],
          ['payment.expired', 'c'],
        ],
      );
      for (const x of got) assert.equal(x.id, JSON.parse(x.data).id, 'the SSE id is the event id');
      assert.equal(s.retry, 2000, 'the stream tells clients how soon to reconnect');
      // Byte for byte what the webhook carried.
      await t.kasse.webhooks.drain();
      const delivered = await r.next(3);
      const byId = (list: Array<{ id: string; body: string }>) => Object.fromEntries(list.map((x) => [x.id, x.body]));
      assert.deepEqual(
        byId(got.map((x) => ({ id: x.id!, body: x.data }))),
        byId(delivered.map((d) => ({ id: d.id, body: d.rawBody }))),
      );
    } finally {
      s.close();
      await r.close();
    }
  });

  test('is the merchant’s own: other merchants’ events and live events never appear', async () => {
    const m = await t.merchant();
    const other = await t.merchant();
    const s = await openStream(m.testKey);
    try {
      await simulate(other, (await newPayment(other)).id, 'paid');
      await other.test.post(`/payments/${(await newPayment(other)).id}/cancel`);
      const live = (await m.live.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'live' }))
        .body;
      await m.live.post(`/payments/${live.id}/cancel`);
      const mine = await newPayment(m, 'mine');
      await m.test.post(`/payments/${mine.id}/cancel`);
      const [only] = await s.next(1);
      assert.equal(JSON.parse(only!.data).data.id, mine.id);
      assert.equal(s.messages.length, 1);
    } finally {
      s.close();
    }
  });

  test('types= keeps only the named event types', async () => {
    const m = await t.merchant();
    const s = await openStream(m.testKey, { types: 'payment.expired,payment.late' });
    try {
      await simulate(m, (await newPayment(m, 'paid')).id, 'paid');
      await simulate(m, (await newPayment(m, 'late')).id, 'late');
      await simulate(m, (await newPayment(m, 'expired')).id, 'expired');
      const got = await s.next(2);
      assert.deepEqual(
        got.map((x) => x.event),
        ['payment.late', 'payment.expired'],
      );
      const bad = await m.test.get('/test/events/stream?types=PAID');
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.param, 'types');
    } finally {
      s.close();
    }
  });

  test('Last-Event-ID replays what came after it, then continues live, repeating nothing', async () => {
    const m = await t.merchant();
    const first = await openStream(m.testKey);
    await m.test.post(`/payments/${(await newPayment(m, 'seen')).id}/cancel`);
    const [seen] = await first.next(1);
    first.close();
    // Missed while disconnected: three events, one of them filtered out below.
    await simulate(m, (await newPayment(m, 'missed-1')).id, 'paid');
    await simulate(m, (await newPayment(m, 'missed-2')).id, 'expired');
    await m.test.post(`/payments/${(await newPayment(m, 'missed-3')).id}/cancel`);
    const s = await openStream(m.testKey, { lastEventId: seen!.id, types: 'payment.paid,payment.cancelled' });
    try {
      const replayed = await s.next(2);
      assert.deepEqual(
        replayed.map((x) => JSON.parse(x.data).data.order_id),
        ['missed-1', 'missed-3'],
      );
      // Events committed while the stream replays and after it.
      const racing = await Promise.all(
        ['live-1', 'live-2', 'live-3'].map(async (o) => m.test.post(`/payments/${(await newPayment(m, o)).id}/cancel`)),
      );
      assert.ok(racing.every((x) => x.status === 200));
      const live = await s.next(3);
      assert.deepEqual(live.map((x) => JSON.parse(x.data).data.order_id).sort(), ['live-1', 'live-2', 'live-3']);
      const ids = s.messages.map((x) => x.id);
      assert.equal(new Set(ids).size, ids.length, 'no event is sent twice');
    } finally {
      s.close();
    }
  });

  test('a resume point that is not this merchant’s test event is refused', async () => {
    const m = await t.merchant();
    const other = await t.merchant();
    await other.test.post(`/payments/${(await newPayment(other)).id}/cancel`);
    const theirs = (await other.test.get('/events')).body.data[0].id;
    for (const id of [theirs, 'evt_00000000000000000000000000']) {
      const res = await m.test.get('/test/events/stream', { 'last-event-id': id });
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.param, 'Last-Event-ID');
    }
    assert.equal((await m.test.get('/test/events/stream', { 'last-event-id': 'not-an-id' })).status, 400);
  });

  test('exists on the test API only, needs a test key, and allows a bounded number of streams', async () => {
    const m = await t.merchant();
    assert.equal((await m.live.get('/test/events/stream')).status, 404);
    const live = await new ApiClient(t.urls.test, m.liveKey).get('/test/events/stream');
    assert.equal(live.status, 403);
    assert.equal(live.body.error.code, 'wrong_mode');
    assert.equal((await new ApiClient(t.urls.test, null).get('/test/events/stream')).status, 401);
    const open = await Promise.all(Array.from({ length: MAX_STREAMS_PER_MERCHANT }, () => openStream(m.testKey)));
    try {
      assert.ok(open.every((s) => s.status === 200));
      const refused = await m.test.get('/test/events/stream');
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'rate_limited');
      assert.ok(refused.headers.get('retry-after'));
    } finally {
      for (const s of open) s.close();
    }
    // Closed streams free their places.
    await eventually('every stream closed', () => t.kasse.eventStream.size === 0, { timeoutMs: 5_000, intervalMs: 25 });
    const again = await openStream(m.testKey);
    assert.equal(again.status, 200);
    again.close();
  });

  test('an event whose transaction rolls back is never sent', async () => {
    const m = await t.merchant();
    const s = await openStream(m.testKey);
    try {
      await assert.rejects(
        withTx(t.kasse.db, async (tx) => {
          await t.kasse.webhooks.publish(tx, {
            mode: 'test',
            merchantId: m.id,
            type: 'payment.paid',
            orderingKey: 'pay_rolled_back',
            data: { id: 'rolled back' },
            destination: null,
          });
          throw new Error('rollback');
        }),
      );
      const p = await newPayment(m);
      await m.test.post(`/payments/${p.id}/cancel`);
      const [got] = await s.next(1);
      assert.equal(JSON.parse(got!.data).data.id, p.id);
      assert.equal(s.messages.length, 1);
    } finally {
      s.close();
    }
  });

  test('when the server may have missed announcements (its LISTEN connection dropped) streams end, and resuming loses nothing', async () => {
    const m = await t.merchant();
    const s = await openStream(m.testKey);
    await m.test.post(`/payments/${(await newPayment(m, 'before')).id}/cancel`);
    const [last] = await s.next(1);
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`.execute(
      t.kasse.db,
    );
    await s.ended;
    await m.test.post(`/payments/${(await newPayment(m, 'during')).id}/cancel`);
    const resumed = await openStream(m.testKey, { lastEventId: last!.id });
    try {
      const [missed] = await resumed.next(1);
      assert.equal(JSON.parse(missed!.data).data.order_id, 'during');
    } finally {
      resumed.close();
    }
  });

  test('closing the server ends open streams instead of waiting for them', async () => {
    const own = await startTestKasse();
    const m = await own.merchant();
    const s = await openStream(m.testKey, { base: own.urls.test });
    assert.equal(s.status, 200);
    await own.close();
    await s.ended;
  });
});
