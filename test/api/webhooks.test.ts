/**
 * Webhooks end to end: events published through the service inside a transaction, delivered by the real worker to
 * a real HTTP receiver that verifies every signature, retries driven by the fake clock, order per ordering key,
 * restarts and crashed workers, the live-mode address rule, and the events API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MINUTE, HOUR, SECOND } from '../../src/core/clock.ts';
import { withTx } from '../../src/db/index.ts';
import { Kasse } from '../../src/kasse.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from '../../src/modules/webhooks/delivery.ts';
import type { EventInput } from '../../src/modules/webhooks/types.ts';
import { startWorkers } from '../../src/workers/index.ts';
import { ApiClient, startTestKasse, testSecrets, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { createTestDatabase } from '../harness/db.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

const ENV = { KASSE_WEBHOOK_TIMEOUT_MS: '1000' };
const LEASE_MS = 1000 + 60_000;

let t: TestKasse;
const receivers: WebhookReceiver[] = [];
let keySeq = 0;

before(async () => {
  t = await startTestKasse({ env: ENV });
});
after(async () => {
  await t.close();
  for (const r of receivers) await r.close();
});

async function receiver(secret?: string, clock = t.clock): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver({ secret, now: () => clock.now() });
  receivers.push(r);
  return r;
}

/** A merchant whose default webhook URL (both modes) is a fresh receiver that knows its secret. */
async function merchantWithReceiver(tk: TestKasse = t): Promise<{ m: TestMerchant; r: WebhookReceiver }> {
  const r = await receiver(undefined, tk.clock);
  const m = await tk.merchant({ webhookUrl: r.url });
  r.setSecret(m.webhookSecret);
  return { m, r };
}

function payment(id: string, status = 'paid') {
  // Field order is deliberate: the body must keep it (json, not jsonb).
  return { id, status, price_amount: 1250, price_currency: 'USD', metadata: { zeta: 1, alpha: [1, 'two', null] } };
}

async function publish(kasse: Kasse, input: Partial<EventInput> & { merchantId: string }): Promise<string> {
  const orderingKey = input.orderingKey ?? `pay_K${++keySeq}`;
  const { id } = await withTx(kasse.db, (tx) =>
    kasse.webhooks.publish(tx, {
      mode: 'test',
      type: 'payment.paid',
      data: payment(orderingKey),
      destination: null,
      ...input,
      orderingKey,
    }),
  );
  return id;
}

async function eventDetail(kasse: Kasse, merchantId: string, id: string, mode: 'test' | 'live' = 'test') {
  return kasse.webhooks.get({ mode, merchantId }, id);
}

describe('delivery', () => {
  test('an event is POSTed once, signed, with the spec headers and exactly the Event body', async () => {
    const { m, r } = await merchantWithReceiver();
    const id = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_SIGNED' });
    assert.equal(await t.kasse.webhooks.drain(), 1);
    assert.equal(r.rejected.length, 0, JSON.stringify(r.rejected));
    assert.equal(r.events.length, 1);
    const e = r.events[0]!;
    assert.deepEqual(Object.keys(JSON.parse(e.rawBody)), ['id', 'type', 'created_at', 'data']);
    assert.equal(e.id, id);
    assert.match(e.id, /^evt_[0-9A-Z]{26}$/);
    assert.equal(e.type, 'payment.paid');
    assert.equal(e.created_at, t.clock.now().toISOString());
    assert.deepEqual(e.data, payment('pay_SIGNED'));
    assert.ok(e.rawBody.includes('"metadata":{"zeta":1,"alpha":[1,"two",null]}'), 'data keeps its field order');
    assert.equal(e.headers['content-type'], 'application/json');
    assert.equal(e.headers['service-event-id'], id);
    assert.equal(e.headers['service-event-type'], 'payment.paid');
    assert.equal(e.headers['user-agent'], 'Kasse-Webhooks/1');
    assert.match(String(e.headers['service-signature']), /^t=\d+,v1=[0-9a-f]{64}$/);
    assert.equal(e.t, Math.floor(t.clock.now().getTime() / 1000));

    const detail = await eventDetail(t.kasse, m.id, id);
    assert.equal(detail.deliveries.length, 1);
    const d = detail.deliveries[0]!;
    assert.equal(d.status, 'delivered');
    assert.equal(d.url, r.url);
    assert.equal(d.attempt_count, 1);
    assert.equal(d.next_attempt_at, null);
    assert.equal(d.delivered_at, t.clock.now().toISOString());
    assert.equal(d.attempts.length, 1);
    assert.equal(d.attempts[0]!.outcome, 'delivered');
    assert.equal(d.attempts[0]!.http_status, 200);
    assert.equal(d.attempts[0]!.response_body, 'ok');
    assert.equal(await t.kasse.webhooks.drain(), 0, 'delivered events are not sent again');
  });

  test('after a roll both secrets sign until the overlap ends on the clock, then the new one alone', async () => {
    const { m, r } = await merchantWithReceiver();
    const rolled = await t.kasse.merchants.rollWebhookSecret(m.id, OPERATOR, HOUR);
    r.setSecret(rolled.webhook_secret);
    const signatures = async () => {
      await publish(t.kasse, { merchantId: m.id });
      assert.equal(await t.kasse.webhooks.drain(), 1);
      assert.deepEqual(r.rejected, []);
      return String(r.events.at(-1)!.headers['service-signature']).match(/v1=/g)!.length;
    };
    assert.equal(await signatures(), 2);
    t.clock.advance(HOUR - SECOND);
    assert.equal(await signatures(), 2);
    t.clock.advance(SECOND);
    assert.equal(await signatures(), 1);
  });

  test('the receiver rejects a body or signature that was tampered with (the check is real)', async () => {
    const { m, r } = await merchantWithReceiver();
    r.setSecret('whsec_not-the-merchants-secret');
    await publish(t.kasse, { merchantId: m.id });
    await t.kasse.webhooks.drain();
    assert.equal(r.events.length, 0);
    assert.equal(r.rejected.length, 1);
    assert.equal(r.rejected[0]!.rejected, 'signature mismatch');
  });

  test('without a destination the event is recorded but not sent; a per-object destination overrides the default', async () => {
    const silent = await t.merchant();
    const id = await publish(t.kasse, { merchantId: silent.id });
    assert.equal(await t.kasse.webhooks.drain(), 0);
    assert.deepEqual((await eventDetail(t.kasse, silent.id, id)).deliveries, []);
    const listed = await silent.test.get('/events');
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.data.map((e: any) => e.id),
      [id],
    );

    const { m, r: fallback } = await merchantWithReceiver();
    const own = await receiver(m.webhookSecret);
    await publish(t.kasse, { merchantId: m.id, destination: own.url });
    await t.kasse.webhooks.drain();
    assert.equal(own.events.length, 1);
    assert.equal(fallback.requests.length, 0);
  });

  test('retries exactly after 1 min, 5 min, 30 min, 2 h, 6 h and 12 h, then fails; a follower waits, then goes', async () => {
    assert.deepEqual([...RETRY_DELAYS_MS], [MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 12 * HOUR]);
    assert.equal(MAX_ATTEMPTS, 7);
    const { m, r } = await merchantWithReceiver();
    r.failNext(7);
    const first = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_RETRY', type: 'payment.detected' });
    const second = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_RETRY', type: 'payment.paid' });
    const start = t.clock.now().getTime();
    await t.kasse.webhooks.drain();
    assert.equal(r.requests.length, 1);
    const sent = () => r.requests.filter((q) => JSON.parse(q.rawBody).id === first).length;
    let due = start;
    for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
      due += delay;
      t.clock.set(due - SECOND);
      await t.kasse.webhooks.drain();
      assert.equal(r.requests.length, i + 1, `nothing is sent before retry ${i + 1} is due`);
      t.clock.set(due);
      await t.kasse.webhooks.drain();
      assert.equal(sent(), i + 2, `retry ${i + 1} is sent when due`);
    }
    // The 7th attempt failed: the first event has failed for good and its follower went at once.
    assert.deepEqual(
      r.requests.map((q) => JSON.parse(q.rawBody).id),
      [...new Array(7).fill(first), second],
    );
    assert.deepEqual(
      r.events.map((e) => e.id),
      [second],
    );
    const detail = await eventDetail(t.kasse, m.id, first);
    const d = detail.deliveries[0]!;
    assert.equal(d.status, 'failed');
    assert.equal(d.attempt_count, 7);
    assert.equal(d.next_attempt_at, null);
    assert.deepEqual(
      d.attempts.map((a) => a.attempt),
      [1, 2, 3, 4, 5, 6, 7],
    );
    assert.ok(d.attempts.every((a) => a.outcome === 'http_error' && a.http_status === 500 && a.error === 'HTTP 500'));
    const expectedStarts = [
      start,
      ...RETRY_DELAYS_MS.map((_, i) => start + RETRY_DELAYS_MS.slice(0, i + 1).reduce((a, b) => a + b, 0)),
    ];
    assert.deepEqual(
      d.attempts.map((a) => a.started_at),
      expectedStarts.map((ms) => new Date(ms).toISOString()),
    );
    t.clock.advance(48 * HOUR);
    await t.kasse.webhooks.drain();
    assert.equal(r.requests.length, 8, 'a failed delivery is not retried again');
  });

  test('events of one ordering key arrive in order while the first is failing; other keys are not held up', async () => {
    const { m, r } = await merchantWithReceiver();
    r.failNext(1);
    const a1 = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_A', type: 'payment.detected' });
    const a2 = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_A', type: 'payment.confirming' });
    const a3 = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_A', type: 'payment.paid' });
    await t.kasse.webhooks.drain();
    assert.equal(r.requests.length, 1, 'only the head of pay_A was sent');
    const b1 = await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_B', type: 'payment.paid' });
    await t.kasse.webhooks.drain();
    // a1 failed, b1 went; a2 and a3 wait behind a1.
    assert.deepEqual(
      r.events.map((e) => e.id),
      [b1],
    );
    r.failNext(1);
    t.clock.advance(MINUTE);
    await t.kasse.webhooks.drain();
    assert.deepEqual(
      r.events.map((e) => e.id),
      [b1],
      'a1 failed again; its followers still wait',
    );
    t.clock.advance(5 * MINUTE - SECOND);
    await t.kasse.webhooks.drain();
    assert.equal(r.events.length, 1);
    t.clock.advance(SECOND);
    await t.kasse.webhooks.drain();
    assert.deepEqual(
      r.events.map((e) => e.id),
      [b1, a1, a2, a3],
    );
    assert.equal(r.rejected.length, 0);
  });

  test('a receiver that times out and then recovers gets the event on the next retry', async () => {
    const { m, r } = await merchantWithReceiver();
    r.hangNext(1);
    r.failNext(1, 503);
    const id = await publish(t.kasse, { merchantId: m.id });
    await t.kasse.webhooks.drain(); // waits out the 1 s timeout
    t.clock.advance(MINUTE);
    await t.kasse.webhooks.drain();
    t.clock.advance(5 * MINUTE);
    await t.kasse.webhooks.drain();
    assert.deepEqual(
      r.events.map((e) => e.id),
      [id],
    );
    const d = (await eventDetail(t.kasse, m.id, id)).deliveries[0]!;
    assert.equal(d.status, 'delivered');
    assert.deepEqual(
      d.attempts.map((a) => [a.outcome, a.http_status]),
      [
        ['timeout', null],
        ['http_error', 503],
        ['delivered', 200],
      ],
    );
    assert.match(d.attempts[0]!.error!, /no answer within 1000 ms/);
    assert.ok(d.attempts[0]!.duration_ms >= 900);
    assert.equal(d.attempts[1]!.response_body, 'failing on purpose');
  });

  test('a worker that crashed mid-delivery loses its claim when the lease runs out; the event is sent again', async () => {
    const { m, r } = await merchantWithReceiver();
    const id = await publish(t.kasse, { merchantId: m.id });
    const delivery = t.kasse.webhooks.delivery;
    // The "crashed" worker: claimed and sent, never recorded.
    const claimed = await delivery.claim(100);
    assert.deepEqual(
      claimed.map((c) => c.eventId),
      [id],
    );
    const lost = await Promise.all(claimed.map((c) => delivery.send(c)));
    assert.equal(r.events.length, 1);
    assert.equal(await t.kasse.webhooks.drain(), 0, 'the claim holds until the lease runs out');
    t.clock.advance(LEASE_MS - SECOND);
    assert.equal(await t.kasse.webhooks.drain(), 0);
    t.clock.advance(SECOND);
    assert.equal(await t.kasse.webhooks.drain(), 1);
    assert.deepEqual(
      r.events.map((e) => e.id),
      [id, id],
      'at least once: the receiver dedupes on id',
    );
    // The crashed worker's late write is ignored: its lease token no longer holds.
    await delivery.record(lost);
    const d = (await eventDetail(t.kasse, m.id, id)).deliveries[0]!;
    assert.equal(d.status, 'delivered');
    assert.equal(d.attempt_count, 1);
    assert.equal(d.attempts.length, 1);
  });
});

describe('batches', () => {
  test('in one pass, endpoints that fail do not hold back deliveries to the others', async () => {
    const ok = await merchantWithReceiver();
    const failing = await merchantWithReceiver();
    const refusing = await merchantWithReceiver();
    failing.r.failNext(1, 500);
    refusing.r.failNext(1, 404);
    const okIds: string[] = [];
    for (let i = 0; i < 5; i++) okIds.push(await publish(t.kasse, { merchantId: ok.m.id }));
    const failed = await publish(t.kasse, { merchantId: failing.m.id });
    const refused = await publish(t.kasse, { merchantId: refusing.m.id });
    assert.equal(await t.kasse.webhooks.runOnce(), 7, 'one claim holds all seven');
    assert.deepEqual(ok.r.events.map((e) => e.id).sort(), [...okIds].sort());
    for (const id of okIds) {
      const d = (await eventDetail(t.kasse, ok.m.id, id)).deliveries[0]!;
      assert.equal(d.status, 'delivered');
      assert.deepEqual(
        d.attempts.map((a) => a.outcome),
        ['delivered'],
      );
    }
    for (const [m, id, status] of [
      [failing.m, failed, 500],
      [refusing.m, refused, 404],
    ] as const) {
      const d = (await eventDetail(t.kasse, m.id, id)).deliveries[0]!;
      assert.equal(d.status, 'pending');
      assert.deepEqual(
        d.attempts.map((a) => [a.outcome, a.http_status]),
        [['http_error', status]],
      );
    }
    // Both are retried on schedule and then arrive.
    t.clock.advance(MINUTE);
    await t.kasse.webhooks.drain();
    assert.deepEqual(
      failing.r.events.map((e) => e.id),
      [failed],
    );
    assert.deepEqual(
      refusing.r.events.map((e) => e.id),
      [refused],
    );
  });

  test('a worker that crashed right after claiming sends nothing; the deliveries go once the lease runs out', async () => {
    const { m, r } = await merchantWithReceiver();
    const ids = [await publish(t.kasse, { merchantId: m.id }), await publish(t.kasse, { merchantId: m.id })];
    const claimed = await t.kasse.webhooks.delivery.claim(100);
    assert.deepEqual(claimed.map((c) => c.eventId).sort(), [...ids].sort());
    assert.equal(await t.kasse.webhooks.drain(), 0, 'claimed rows are not claimed again while the lease holds');
    t.clock.advance(LEASE_MS);
    assert.equal(await t.kasse.webhooks.drain(), 2);
    assert.deepEqual(r.events.map((e) => e.id).sort(), [...ids].sort());
    for (const id of ids) {
      const d = (await eventDetail(t.kasse, m.id, id)).deliveries[0]!;
      assert.equal(d.status, 'delivered');
      assert.equal(d.attempt_count, 1);
    }
  });

  test('a receiver that closed its keep-alive connections still gets the next event on the first attempt', async () => {
    const { m, r } = await merchantWithReceiver();
    const first = await publish(t.kasse, { merchantId: m.id });
    await t.kasse.webhooks.drain();
    r.dropConnections();
    const second = await publish(t.kasse, { merchantId: m.id });
    await t.kasse.webhooks.drain();
    assert.deepEqual(
      r.events.map((e) => e.id),
      [first, second],
    );
    const d = (await eventDetail(t.kasse, m.id, second)).deliveries[0]!;
    assert.equal(d.status, 'delivered');
    assert.deepEqual(
      d.attempts.map((a) => a.outcome),
      ['delivered'],
    );
  });
});

describe('restart', () => {
  test('a restart in the middle of the retry schedule loses nothing and keeps the order', async () => {
    const db = await createTestDatabase();
    const clock = t.clock;
    let first: TestKasse | null = await startTestKasse({ databaseUrl: db.url, clock, env: ENV });
    let second: TestKasse | null = null;
    try {
      const { m, r } = await merchantWithReceiver(first);
      r.failNext(2);
      const e1 = await publish(first.kasse, { merchantId: m.id, orderingKey: 'pay_RESTART', type: 'payment.detected' });
      const e2 = await publish(first.kasse, { merchantId: m.id, orderingKey: 'pay_RESTART', type: 'payment.paid' });
      await first.kasse.webhooks.drain();
      clock.advance(MINUTE);
      await first.kasse.webhooks.drain();
      assert.equal(r.requests.length, 2);
      await first.close();
      first = null;

      second = await startTestKasse({ databaseUrl: db.url, clock, env: ENV });
      assert.equal(await second.kasse.webhooks.drain(), 0, 'the third attempt is not due yet');
      clock.advance(5 * MINUTE);
      await second.kasse.webhooks.drain();
      assert.deepEqual(
        r.events.map((e) => e.id),
        [e1, e2],
      );
      assert.equal(r.rejected.length, 0, 'the restarted process signs with the same secret');
      const d = (await eventDetail(second.kasse, m.id, e1)).deliveries[0]!;
      assert.deepEqual(
        d.attempts.map((a) => a.outcome),
        ['http_error', 'http_error', 'delivered'],
      );
    } finally {
      await first?.close();
      await second?.close();
      await db.drop();
    }
  });
});

describe('live mode address rule', () => {
  test('live deliveries to loopback, private, link-local and IPv6 loopback addresses are refused and retried', async () => {
    const { m, r } = await merchantWithReceiver();
    const port = new URL(r.url).port;
    const cases: Array<[string, RegExp]> = [
      [`http://127.0.0.1:${port}/webhooks`, /127\.0\.0\.1 is a loopback address/],
      ['http://10.20.30.40/hook', /10\.20\.30\.40 is a private address/],
      ['http://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is a link-local address/],
      [`http://[::1]:${port}/webhooks`, /::1 is a loopback address/],
      [`http://[::ffff:127.0.0.1]:${port}/webhooks`, /loopback address/],
      [`http://localhost:${port}/webhooks`, /localhost resolves to .* a loopback address/],
    ];
    const ids: string[] = [];
    for (const [url] of cases) ids.push(await publish(t.kasse, { merchantId: m.id, mode: 'live', destination: url }));
    // The merchant's own live default URL is refused too when it points at a loopback address.
    const ownDefault = `https://127.0.0.1:${port}/webhooks`;
    await t.kasse.merchants.update(m.id, { webhookUrlLive: ownDefault }, OPERATOR);
    ids.push(await publish(t.kasse, { merchantId: m.id, mode: 'live' }));
    cases.push([ownDefault, /127\.0\.0\.1 is a loopback address/]);
    await t.kasse.webhooks.drain();
    t.clock.advance(MINUTE);
    await t.kasse.webhooks.drain();
    assert.equal(r.requests.length, 0, 'no request reached the address');
    for (const [i, id] of ids.entries()) {
      const d = (await eventDetail(t.kasse, m.id, id, 'live')).deliveries[0]!;
      assert.equal(d.status, 'pending', cases[i]![0]);
      assert.equal(d.attempts.length, 2, `${cases[i]![0]} is retried like a failure`);
      for (const a of d.attempts) {
        assert.equal(a.outcome, 'refused');
        assert.equal(a.http_status, null);
        assert.match(a.error!, cases[i]![1]);
      }
    }
    // The same address is fine in test mode.
    await publish(t.kasse, { merchantId: m.id, mode: 'test' });
    await t.kasse.webhooks.drain();
    assert.equal(r.events.length, 1);
  });
});

describe('events API', () => {
  let m: TestMerchant;
  let r: WebhookReceiver;
  const ids: string[] = [];
  let liveId: string;

  before(async () => {
    ({ m, r } = await merchantWithReceiver());
    const types = ['payment.detected', 'payment.confirming', 'payment.paid', 'payment.overpaid', 'payment.refunded'];
    for (const type of types) ids.push(await publish(t.kasse, { merchantId: m.id, orderingKey: 'pay_API', type }));
    liveId = await publish(t.kasse, {
      merchantId: m.id,
      mode: 'live',
      orderingKey: 'pay_API_LIVE',
      destination: 'http://10.0.0.1/',
    });
    await t.kasse.webhooks.drain();
  });

  test('GET /events lists newest first with an opaque cursor and a type filter, Event fields exactly', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { status: number; body: any } = await m.test.get(
        `/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body), ['data', 'next_cursor']);
      assert.ok(res.body.data.length <= 2);
      for (const e of res.body.data) assert.deepEqual(Object.keys(e), ['id', 'type', 'created_at', 'data']);
      seen.push(...res.body.data.map((e: any) => e.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...ids].reverse(), 'test mode only, newest first');

    const all = await m.test.get('/events');
    assert.equal(all.body.data.length, 5, 'default limit 20');
    assert.equal(all.body.next_cursor, null);
    assert.deepEqual(all.body.data[0].data, payment('pay_API'));

    const paid = await m.test.get('/events?type=payment.paid');
    assert.deepEqual(
      paid.body.data.map((e: any) => e.id),
      [ids[2]],
    );
    const live = await m.live.get('/events');
    assert.deepEqual(
      live.body.data.map((e: any) => e.id),
      [liveId],
    );
  });

  test('bad list parameters answer 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=bogus', 'cursor'],
      ['type=PAID', 'type'],
      ['colour=red', 'colour'],
    ]) {
      const res = await m.test.get(`/events?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.param, param, query);
    }
  });

  test('GET /events/{id} is the Event plus its deliveries and attempts; the other mode and other merchants get 404', async () => {
    const res = await m.test.get(`/events/${ids[0]}`);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body), ['id', 'type', 'created_at', 'data', 'deliveries']);
    assert.equal(res.body.type, 'payment.detected');
    assert.equal(res.body.deliveries.length, 1);
    const d = res.body.deliveries[0];
    assert.deepEqual(Object.keys(d), [
      'id',
      'url',
      'status',
      'attempt_count',
      'next_attempt_at',
      'delivered_at',
      'created_at',
      'attempts',
    ]);
    assert.match(d.id, /^dlv_[0-9A-Z]{26}$/);
    assert.equal(d.status, 'delivered');
    assert.deepEqual(Object.keys(d.attempts[0]), [
      'attempt',
      'started_at',
      'duration_ms',
      'outcome',
      'http_status',
      'error',
      'response_body',
    ]);

    const live = await m.live.get(`/events/${liveId}`);
    assert.equal(live.status, 200);
    assert.equal(live.body.deliveries[0].attempts[0].outcome, 'refused');

    for (const res404 of [
      await m.live.get(`/events/${ids[0]}`),
      await m.test.get(`/events/${liveId}`),
      await (await t.merchant()).test.get(`/events/${ids[0]}`),
    ]) {
      assert.equal(res404.status, 404);
      assert.equal(res404.body.error.code, 'not_found');
    }
    const malformed = await m.test.get('/events/evt_nope');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.param, 'id');
  });

  test('POST /events/{id}/redeliver queues a new delivery (202) that sends the same event again', async () => {
    const before = r.events.length;
    const res = await m.test.post(`/events/${ids[2]}/redeliver`);
    assert.equal(res.status, 202);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.body.attempt_count, 0);
    assert.equal(res.body.url, r.url);
    assert.deepEqual(res.body.attempts, []);
    await t.kasse.webhooks.drain();
    assert.equal(r.events.length, before + 1);
    assert.equal(r.events.at(-1)!.id, ids[2]);
    const detail = await m.test.get(`/events/${ids[2]}`);
    assert.deepEqual(
      detail.body.deliveries.map((d: any) => [d.id === res.body.id, d.status]),
      [
        [false, 'delivered'],
        [true, 'delivered'],
      ],
    );
    assert.equal((await m.test.post(`/events/${ids[2]}/redeliver`, {})).status, 202);
    await t.kasse.webhooks.drain();

    const extra = await m.test.post(`/events/${ids[2]}/redeliver`, { force: true });
    assert.equal(extra.status, 400);
    assert.equal(extra.body.error.param, 'force');
    assert.equal((await m.live.post(`/events/${ids[2]}/redeliver`)).status, 404);

    const silent = await t.merchant();
    const quiet = await publish(t.kasse, { merchantId: silent.id });
    const none = await silent.test.post(`/events/${quiet}/redeliver`);
    assert.equal(none.status, 422);
    assert.equal(none.body.error.code, 'invalid_state');
  });

  test('the OpenAPI document describes the three operations', async () => {
    const doc = await new ApiClient(t.urls.test, null).get('/openapi.json');
    assert.ok(doc.body.paths['/events'].get.summary);
    assert.ok(doc.body.paths['/events/{id}'].get.summary);
    assert.ok(doc.body.paths['/events/{id}/redeliver'].post.responses['202']);
  });
});

describe('workers', () => {
  test('the delivery loop is woken by a commit in this process and by NOTIFY from another process', async () => {
    const { m, r } = await merchantWithReceiver();
    const workers = startWorkers(t.kasse);
    const other = await Kasse.open({
      config: t.config,
      databaseUrl: t.databaseUrl,
      clock: t.clock,
      secrets: testSecrets(),
      log: t.kasse.log,
      listen: false,
      poolSize: 2,
    });
    try {
      const local = await publish(t.kasse, { merchantId: m.id });
      assert.equal((await r.next(1))[0]!.id, local);
      const remote = await publish(other, { merchantId: m.id });
      assert.equal((await r.next(1))[0]!.id, remote);
      assert.equal(r.rejected.length, 0);
    } finally {
      await workers.stop();
      await other.close();
    }
  });
});
