/**
 * The base every API route stands on: keys and modes, the Error body on every failure, rate limits across
 * processes, the OpenAPI document, probes and metrics.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { SECOND } from '../../src/core/clock.ts';
import { Kasse } from '../../src/kasse.ts';
import { ApiClient, startTestKasse, testSecrets, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';
import { recordedLog } from '../harness/log.ts';

function assertErrorBody(body: any, code: string, param: string | null = null) {
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param']);
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(body.error.param, param);
}

let t: TestKasse;
let m: TestMerchant;
const { log, lines: logLines } = recordedLog();

before(async () => {
  t = await startTestKasse({ log });
  m = await t.merchant();
});
after(() => t.close());

describe('authentication and modes', () => {
  test('a valid key of the listener mode is accepted and reports its account', async () => {
    const res = await m.test.get('/account');
    assert.equal(res.status, 200);
    assert.equal(res.body.id, m.id);
    assert.equal(res.body.mode, 'test');
    const live = await m.live.get('/account');
    assert.equal(live.status, 200);
    assert.equal(live.body.mode, 'live');
  });

  test('missing, malformed, unknown keys answer 401 unauthorized', async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer ' },
      { authorization: 'Bearer not-a-key' },
      { authorization: `Bearer kasse_test_${'A'.repeat(32)}` },
      { authorization: `Bearer ${m.testKey}x` },
    ];
    for (const headers of cases) {
      const res = await new ApiClient(t.urls.test, null).get('/account', headers);
      assert.equal(res.status, 401, JSON.stringify(headers));
      assertErrorBody(res.body, 'unauthorized');
    }
  });

  test('the Bearer scheme is case-insensitive', async () => {
    const res = await new ApiClient(t.urls.test, null).get('/account', { authorization: `bearer  ${m.testKey}` });
    assert.equal(res.status, 200);
  });

  test('an http webhook URL given at creation serves test mode only; live needs https', async () => {
    const plain = await t.merchant({ name: 'Plain', webhookUrl: 'http://127.0.0.1:9/hook' });
    assert.equal((await plain.test.get('/account')).body.webhook_url, 'http://127.0.0.1:9/hook');
    assert.equal((await plain.live.get('/account')).body.webhook_url, null);
    const secure = await t.merchant({ name: 'Secure', webhookUrl: 'https://shop.example/hook' });
    assert.equal((await secure.live.get('/account')).body.webhook_url, 'https://shop.example/hook');
  });

  test('a key of the other mode answers 403 wrong_mode on both APIs', async () => {
    const liveOnTest = await new ApiClient(t.urls.test, m.liveKey).get('/account');
    assert.equal(liveOnTest.status, 403);
    assertErrorBody(liveOnTest.body, 'wrong_mode');
    const testOnLive = await new ApiClient(t.urls.live, m.testKey).get('/account');
    assert.equal(testOnLive.status, 403);
    assertErrorBody(testOnLive.body, 'wrong_mode');
  });

  test('a revoked key answers 401 at once; a rolled key replaces the old one; both at the clock’s time', async () => {
    const other = await t.merchant({ name: 'Roller' });
    assert.equal((await other.test.get('/account')).status, 200); // cached now
    const rolledAt = t.clock.advance(SECOND);
    const rolled = await t.kasse.merchants.rollKey({ mode: 'test', merchantId: other.id }, OPERATOR);
    assert.equal((await other.test.get('/account')).status, 401);
    const fresh = new ApiClient(t.urls.test, rolled.key);
    assert.equal((await fresh.get('/account')).status, 200);
    const revokedAt = t.clock.advance(SECOND);
    await t.kasse.merchants.revokeKey({ mode: 'test', merchantId: other.id }, rolled.key_id, OPERATOR);
    const res = await fresh.get('/account');
    assert.equal(res.status, 401);
    assertErrorBody(res.body, 'unauthorized');
    // the live key was untouched
    assert.equal((await other.live.get('/account')).status, 200);
    const keys = (await t.kasse.merchants.listKeys(other.id)).filter((k) => k.mode === 'test');
    assert.deepEqual(
      keys.map((k) => [k.created_at.toISOString(), k.revoked_at?.toISOString()]),
      [
        [new Date(rolledAt.getTime() - SECOND).toISOString(), rolledAt.toISOString()],
        [rolledAt.toISOString(), revokedAt.toISOString()],
      ],
    );
  });

  test('a key’s answer is cached for a minute of the clock', async () => {
    const other = await t.merchant({ name: 'Cached' });
    assert.equal((await other.test.get('/account')).status, 200);
    // Revoked behind Kasse's back (no NOTIFY): the cached answer stands until its minute on the clock is over.
    await t.kasse.db
      .updateTable('api_keys')
      .set({ revoked_at: t.clock.now() })
      .where('merchant_id', '=', other.id)
      .execute();
    t.clock.advance(59 * SECOND);
    assert.equal((await other.test.get('/account')).status, 200);
    t.clock.advance(2 * SECOND);
    assert.equal((await other.test.get('/account')).status, 401);
  });

  test('a key revoked by another process stops working here through NOTIFY', async () => {
    const other = await t.merchant({ name: 'Elsewhere' });
    assert.equal((await other.test.get('/account')).status, 200);
    const second = await Kasse.open({
      config: t.config,
      databaseUrl: t.databaseUrl,
      clock: t.clock,
      secrets: testSecrets(),
      listen: false,
      poolSize: 2,
    });
    try {
      await second.merchants.revokeAnyKey(other.testKey, OPERATOR);
    } finally {
      await second.close();
    }
    const status = await eventually(
      'the revoked key to stop working',
      async () => {
        const s = (await other.test.get('/account')).status;
        return s !== 200 && s;
      },
      { intervalMs: 0 },
    );
    assert.equal(status, 401);
  });
});

describe('the Error body on every failure', () => {
  test('unknown route and unknown method answer 404 not_found', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['DELETE', '/account'],
    ]) {
      const res = await m.test.request(method!, path!);
      assert.equal(res.status, 404);
      assertErrorBody(res.body, 'not_found');
    }
    const outside = await fetch(t.urls.test.replace('/v1', '/v2/payments'));
    assert.equal(outside.status, 404);
    assertErrorBody(await outside.json(), 'not_found');
  });

  test('a malformed URL and bad JSON, content type and size answer 400 invalid_request', async () => {
    const badUrl = await m.test.get('/payments/%E0%A4%A');
    assert.equal(badUrl.status, 400);
    assertErrorBody(badUrl.body, 'invalid_request');
    const badJson = await m.test.post('/payments', '{"price_amount": 1,', { 'content-type': 'application/json' });
    assert.equal(badJson.status, 400);
    assertErrorBody(badJson.body, 'invalid_request');
    const text = await m.test.post('/payments', 'price_amount=1', { 'content-type': 'text/plain' });
    assert.equal(text.status, 400);
    assertErrorBody(text.body, 'invalid_request');
    assert.match(text.body.error.message, /application\/json/);
    const big = await m.test.post('/payments', JSON.stringify({ metadata: { x: 'y'.repeat(70_000) } }));
    assert.equal(big.status, 400);
    assertErrorBody(big.body, 'invalid_request');
    assert.match(big.body.error.message, /too large/);
    const before = await m.test.get('/payments');
    assert.equal(before.body.data.length, 0, 'nothing was created');
  });

  test('unknown and invalid properties name the field in param; NUL characters and leap seconds are refused, not 500', async () => {
    const base = { price_amount: 100, price_currency: 'USD', order_id: 'a' };
    const unknown = await m.test.post('/payments', { ...base, colour: 'red' });
    assert.equal(unknown.status, 400);
    assertErrorBody(unknown.body, 'invalid_request', 'colour');
    const nested = await m.test.post('/payments', { ...base, price_amount: '100' });
    assertErrorBody(nested.body, 'invalid_request', 'price_amount');
    const nul = await m.test.post('/payments', { ...base, order_id: 'a\u0000b' });
    assert.equal(nul.status, 400);
    assertErrorBody(nul.body, 'invalid_request');
    const leap = await m.test.post('/links', { kind: 'pos', title: 'Till', expires_at: '2030-06-30T23:59:60Z' });
    assert.equal(leap.status, 400);
    assertErrorBody(leap.body, 'invalid_request', 'expires_at');
    const longKey = await m.test.post('/payments', base, { 'idempotency-key': 'k'.repeat(256) });
    assertErrorBody(longKey.body, 'invalid_request', 'Idempotency-Key');
    assert.equal((await m.test.get('/payments')).body.data.length, 0, 'nothing was created');
  });

  test('an unexpected failure is an opaque 500 whose request id is logged and returned', async () => {
    // A key not yet cached must be looked up, and the lookup fails.
    const probe = await t.merchant({ name: 'Probe' });
    await sql`ALTER TABLE merchants RENAME TO merchants_gone`.execute(t.kasse.db);
    try {
      const res = await probe.test.get('/account');
      assert.equal(res.status, 500);
      assertErrorBody(res.body, 'internal_error');
      const reqId = res.headers.get('request-id');
      assert.match(reqId ?? '', /^req_[0-9A-Z]{26}$/);
      assert.ok(res.body.error.message.includes(reqId!));
      assert.ok(!/merchants_gone|relation|sql/i.test(res.body.error.message), 'no internals leak');
      const logged = logLines.find((l) => l.reqId === reqId && l.level === 50);
      assert.ok(logged, 'the failure is logged with the request id');
      assert.match(JSON.stringify(logged.err), /merchants/);
    } finally {
      await sql`ALTER TABLE merchants_gone RENAME TO merchants`.execute(t.kasse.db);
    }
  });

  test('every response carries a Request-Id header', async () => {
    const ok = await m.test.get('/account');
    const bad = await new ApiClient(t.urls.test, null).get('/account');
    const unknown = await m.test.get('/no-such-route');
    const open = await fetch(`${t.urls.test}/openapi.json`);
    const ids = [ok, bad, unknown, open].map((r) => r.headers.get('request-id') ?? '');
    for (const id of ids) assert.match(id, /^req_[0-9A-Z]{26}$/);
    assert.equal(new Set(ids).size, ids.length);
  });
});

describe('rate limits', () => {
  test('the 61st request in a minute answers 429 with Retry-After and RateLimit headers; the next window allows again', async () => {
    const r = await t.merchant({ name: 'Busy' });
    t.clock.set('2026-03-01T13:00:05Z');
    for (let i = 0; i < 60; i++) {
      const res = await r.test.get('/account');
      assert.equal(res.status, 200, `request ${i + 1}`);
      assert.equal(res.headers.get('ratelimit-limit'), '60');
      assert.equal(res.headers.get('ratelimit-remaining'), String(59 - i));
    }
    const limited = await r.test.get('/account');
    assert.equal(limited.status, 429);
    assertErrorBody(limited.body, 'rate_limited');
    assert.equal(limited.headers.get('retry-after'), '55');
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');
    assert.equal(limited.headers.get('ratelimit-reset'), '55');
    // the limit is per key: the live key of the same merchant is unaffected
    assert.equal((await r.live.get('/account')).status, 200);
    t.clock.advance(55_000);
    assert.equal((await r.test.get('/account')).status, 200);
  });

  test('an operator-set limit holds across several processes sharing the database', async () => {
    const r = await t.merchant({ name: 'Shared', rateLimit: 25 });
    t.clock.set('2026-03-01T14:00:00Z');
    const second = await startTestKasse({ databaseUrl: t.databaseUrl, clock: t.clock });
    try {
      const a = new ApiClient(t.urls.test, r.testKey);
      const b = new ApiClient(second.urls.test, r.testKey);
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).get('/account')));
      const ok = results.filter((x) => x.status === 200).length;
      const limited = results.filter((x) => x.status === 429).length;
      assert.ok(ok <= 25, `at most the limit passes (${ok})`);
      assert.ok(ok >= 20, `nearly the whole allowance is usable (${ok})`);
      assert.equal(ok + limited, 60);
    } finally {
      await second.close();
    }
  });
});

describe('OpenAPI and operations', () => {
  test('both APIs serve a valid OpenAPI 3.1 document with version "1" and no key', async () => {
    for (const base of [t.urls.test, t.urls.live]) {
      const res = await fetch(`${base}/openapi.json`);
      assert.equal(res.status, 200);
      const doc = await res.json();
      assert.equal(doc.openapi, '3.1.0');
      assert.equal(doc.info.version, '1');
      assert.equal(doc.servers[0].url, base);
      assert.ok(doc.paths['/account'], 'paths are relative to the server URL');
      assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/v1/')));
      const viaDoc = await fetch(`${doc.servers[0].url}${'/account'}`, {
        headers: { authorization: `Bearer ${base === t.urls.test ? m.testKey : m.liveKey}` },
      });
      assert.equal(viaDoc.status, 200);
      assert.ok(doc.components.schemas.Error);
      await SwaggerParser.validate(structuredClone(doc));
      for (const [path, ops] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(ops)) {
          assert.ok(op.summary, `${method} ${path} has a summary`);
          // A public operation (no key: `security: []`) cannot answer 401.
          const codes = op.security?.length === 0 ? ['400', '429'] : ['400', '401', '429'];
          for (const s of codes) assert.ok(op.responses[s], `${method} ${path} documents ${s}`);
          if (op.security?.length === 0) assert.equal(op.responses['401'], undefined, `${method} ${path} needs no key`);
        }
      }
    }
  });

  test('health, readiness and Prometheus metrics', async () => {
    const base = t.urls.test.replace('/v1', '');
    assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
    assert.deepEqual(await (await fetch(`${base}/readyz`)).json(), { status: 'ready' });
    const scrape = async () => {
      const text = await (await fetch(`${base}/metrics`)).text();
      const value = (name: string, labels: string) =>
        Number(new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
      const labels = 'listener="test",route="/v1/account",status="200"';
      const buckets = [
        ...text.matchAll(
          new RegExp(`^kasse_http_request_duration_seconds_bucket\\{${labels},le="([^"]+)"\\} (\\d+)$`, 'gm'),
        ),
      ];
      return {
        requests: value('kasse_http_requests_total', labels),
        count: value('kasse_http_request_duration_seconds_count', labels),
        sum: value('kasse_http_request_duration_seconds_sum', labels),
        buckets: buckets.map((b) => [b[1], Number(b[2])] as const),
      };
    };
    const unmatched = async () =>
      Number(
        /^kasse_http_requests_total\{listener="test",route="unmatched",status="404"\} (\S+)$/m.exec(
          await (await fetch(`${base}/metrics`)).text(),
        )?.[1] ?? 0,
      );
    const before = await scrape();
    const unmatchedBefore = await unmatched();
    for (let i = 0; i < 3; i++) assert.equal((await m.test.get('/account')).status, 200);
    assert.equal((await m.test.get('/no-such-route')).status, 404);
    const after = await scrape();
    assert.equal(after.requests - before.requests, 3);
    assert.equal((await unmatched()) - unmatchedBefore, 1, 'an unknown route is counted once, under "unmatched"');
    assert.equal(after.count, after.requests);
    assert.ok(after.sum > before.sum);
    // Buckets are cumulative and end in +Inf, which equals the count.
    assert.equal(after.buckets.at(-1)?.[0], '+Inf');
    assert.equal(after.buckets.at(-1)?.[1], after.count);
    assert.deepEqual(
      after.buckets.map((b) => b[1]),
      [...after.buckets.map((b) => b[1])].sort((x, y) => x - y),
    );
    assert.equal((await fetch(`${t.urls.checkout}/healthz`)).status, 200);
  });

  test('the access log keeps every change and failure at info and successful reads at debug', async () => {
    const ok = await m.test.get('/account');
    const refused = await new ApiClient(t.urls.test, null).get('/account');
    const created = await m.test.post('/links', { kind: 'fixed', title: 'Mug', amount_usd_cents: 900 });
    assert.deepEqual([ok.status, refused.status, created.status], [200, 401, 201]);
    const logged = (res: { headers: Headers }) =>
      logLines.filter((l) => l.msg === 'request' && l.reqId === res.headers.get('request-id'));
    // The line is written once the response has finished, which can be after the client has read it.
    await eventually('both lines', () => logged(created).length > 0 && logged(refused).length > 0, { intervalMs: 0 });
    assert.deepEqual(logged(ok), []);
    assert.deepEqual(
      [...logged(refused), ...logged(created)].map((l) => [l.level, l.method, l.route, l.status]),
      [
        [30, 'GET', '/v1/account', 401],
        [30, 'POST', '/v1/links', 201],
      ],
    );
  });
});
