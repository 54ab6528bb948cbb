/**
 * Robustness of the API frame, found by probing it as an attacker or a careless client would: unknown query
 * parameters on every operation, free-form keys the serialiser must not drop, requests Node's HTTP parser refuses,
 * and validation messages that name every allowed value.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { Type } from 'typebox';
import { buildSerializer, explainValidation, validatorCompiler } from '../../src/http/validation.ts';
import { ApiClient, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

function assertErrorBody(body: any, code: string, param?: string | null) {
  assert.deepEqual(Object.keys(body), ['error']);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param']);
  assert.equal(body.error.code, code);
  assert.ok(typeof body.error.message === 'string' && body.error.message.length > 0);
  if (param !== undefined) assert.equal(body.error.param, param);
}

let t: TestKasse;
let m: TestMerchant;
let hooks: WebhookReceiver;

before(async () => {
  t = await startTestKasse();
  hooks = await startWebhookReceiver({ now: () => t.clock.now() });
  m = await t.merchant({ webhookUrl: hooks.url, rateLimit: 10_000 });
  hooks.setSecret(m.webhookSecret);
});
after(async () => {
  await t.close();
  await hooks.close();
});

const base = { price_amount: 2500, price_currency: 'USD', order_id: 'hard-1' };

/** A value of a path parameter that passes its pattern (`^pay_[0-9A-Z]{36}$` → `pay_000…`, a month → `2026-01`). */
function samplePathValue(pattern: string | undefined): string {
  if (pattern === '^\\d{4}-\\d{2}$') return '2026-01';
  const m = /^\^([a-z]+_)\[0-9A-Z\]\{(\d+)\}\$$/.exec(pattern ?? '');
  return m ? m[1]! + '0'.repeat(Number(m[2])) : 'x';
}

/** Valid bodies and queries of operations that need one, so the only fault left is the unknown parameter. */
const SAMPLES: Record<string, { body?: unknown; query?: string }> = {
  'POST /payments': { body: base },
  'POST /payments/{id}/attempts': { body: { chain: 'base', token: 'base:usdc' } },
  'POST /payments/{id}/refund': { body: { destination: '0x000000000000000000000000000000000000dEaD' } },
  'POST /test/payments/{id}/simulate': { body: { outcome: 'paid' } },
  'POST /links': { body: { kind: 'fixed', title: 'Mug', amount_usd_cents: 1200 } },
  'PATCH /links/{id}': { body: { active: false } },
  'POST /events/{id}/redeliver': {},
  'GET /estimate': { query: 'price_amount=100&token=base:usdc' },
  'GET /x402/pay_to': { query: 'network=eip155:8453' },
};

describe('unknown query parameters', () => {
  test('every operation of both APIs refuses them with 400 naming the parameter, and changes nothing', async () => {
    let strict = 0;
    for (const [mode, client] of [
      ['test', m.test],
      ['live', m.live],
    ] as const) {
      const doc = (await client.get('/openapi.json')).body;
      const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
      );
      assert.ok(operations.length >= 15, `${mode}: the document lists the operations`);
      for (const { method, path, op } of operations) {
        const sample = SAMPLES[`${method} ${path}`];
        const url = path.replace(/\{(\w+)\}/g, (_m, name: string) =>
          samplePathValue(op.parameters?.find((p: any) => p.name === name)?.schema?.pattern),
        );
        const query = sample?.query ? `${sample.query}&zz=1` : 'zz=1';
        const res = await client.request(method, `${url}?${query}`, sample?.body);
        const what = `${mode} ${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`;
        assert.equal(res.status, 400, what);
        assertErrorBody(res.body, 'invalid_request');
        // With a valid body the unknown parameter is the only fault, so it must be the one named.
        if (!op.requestBody || sample) {
          assert.equal(res.body.error.param, 'zz', what);
          assert.equal(res.body.error.message, 'zz is not a known query parameter', what);
          strict++;
        }
      }
    }
    assert.ok(strict >= 30, `${strict} operations checked strictly`);
    // Probes, metrics and the documents too.
    for (const path of ['/healthz', '/readyz', '/metrics', '/v1/openapi.json', '/v1/docs']) {
      const res = await fetch(`${t.urls.test.replace(/\/v1$/, '')}${path}?zz=1`);
      assert.equal(res.status, 400, path);
      assertErrorBody(await res.json(), 'invalid_request', 'zz');
    }
    assert.equal((await m.test.get('/payments')).body.data.length, 0, 'nothing was created');
    assert.equal((await m.test.get('/links')).body.data.length, 0, 'nothing was created');
  });

  test('known parameters still work, and an unknown one next to them is refused', async () => {
    assert.equal((await m.test.get('/payments?limit=5')).status, 200);
    const res = await m.test.get('/payments?limit=5&colour=red');
    assert.equal(res.status, 400);
    assertErrorBody(res.body, 'invalid_request', 'colour');
  });
});

describe('free-form keys (metadata)', () => {
  const metadata = {
    'line\nfeed': 1,
    'carriage\rreturn': 'two',
    'line\u2028separator': [3],
    'paragraph\u2029separator': { nested: true },
    plain: { 'inner\nkey': 'kept', deeper: { 'x\u2028y': null } },
  };

  test('keys with line terminators come back from every answer that carries the payment, and in webhooks', async () => {
    const created = await m.test.post(
      '/payments',
      { ...base, order_id: 'meta-1', metadata },
      { 'idempotency-key': 'meta-1' },
    );
    assert.equal(created.status, 201);
    assert.deepEqual(created.body.metadata, metadata);
    const replay = await m.test.post(
      '/payments',
      { ...base, order_id: 'meta-1', metadata },
      { 'idempotency-key': 'meta-1' },
    );
    assert.equal(replay.status, 200);
    assert.deepEqual(replay.body.metadata, metadata);
    assert.deepEqual((await m.test.get(`/payments/${created.body.id}`)).body.metadata, metadata);
    const listed = (await m.test.get('/payments?order_id=meta-1')).body.data;
    assert.deepEqual(listed[0].metadata, metadata);
    const paid = await m.test.post(`/test/payments/${created.body.id}/simulate`, { outcome: 'paid' });
    assert.deepEqual(paid.body.metadata, metadata);
    await t.kasse.webhooks.drain();
    const [event] = await hooks.next(1);
    assert.deepEqual(event!.data.metadata, metadata);
    const stored = (await m.test.get(`/events/${event!.id}`)).body;
    assert.deepEqual(stored.data.metadata, metadata);
  });

  test('the OpenAPI document describes free-form objects so that every key matches', async () => {
    const doc = JSON.stringify((await m.test.get('/openapi.json')).body);
    assert.ok(!doc.includes('"^.*$"'), 'no catch-all pattern (which no key with a line terminator matches) is left');
    const payment = (await m.test.get('/openapi.json')).body.components.schemas.Payment;
    assert.deepEqual(payment.properties.metadata, { type: 'object', additionalProperties: {} });
  });

  test('validation and serialisation treat any record schema the same way, whatever its keys', () => {
    const schema = Type.Object({ counts: Type.Record(Type.String(), Type.Integer()) });
    const validate = validatorCompiler({ schema, httpPart: 'body', method: 'POST', url: '/x' }) as any;
    assert.equal(
      validate({ counts: { 'a\nb': 'not a number' } }),
      false,
      'a value under a key with a line feed is checked',
    );
    assert.equal(validate({ counts: { 'a\nb': 2 } }), true);
    const serialize = buildSerializer({}, {})({ schema, method: 'GET', url: '/x', httpStatus: '200' });
    assert.deepEqual(JSON.parse(serialize({ counts: { 'a\nb': 2, 'c\u2029': 3 } })), {
      counts: { 'a\nb': 2, 'c\u2029': 3 },
    });
  });
});

describe('validation messages', () => {
  test('a field with several allowed values lists them all', async () => {
    const status = await m.test.get('/payments?status=done');
    assertErrorBody(status.body, 'invalid_request', 'status');
    assert.equal(
      status.body.error.message,
      'status must be one of waiting, detected, confirming, authorized, paid, underpaid, expired, late, refunded, cancelled',
    );
    const p = (await m.test.post('/payments', { ...base, order_id: 'msg-1' })).body;
    const outcome = await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'refunded' });
    assertErrorBody(outcome.body, 'invalid_request', 'outcome');
    assert.equal(
      outcome.body.error.message,
      'outcome must be one of paid, underpaid, expired, late, wrong_asset, authorized',
    );
    const kind = await m.test.post('/links', { kind: 'subscription', title: 'x' });
    assertErrorBody(kind.body, 'invalid_request', 'kind');
    assert.equal(kind.body.error.message, 'kind must be one of fixed, open, tip, pos');
    const nullable = await m.test.patch(`/links/lnk_${'0'.repeat(26)}`, { description: 5 });
    assertErrorBody(nullable.body, 'invalid_request', 'description');
    assert.equal(nullable.body.error.message, 'description must be of type string or null');
  });

  test('every union of values in a request of the OpenAPI document is explained with all its values', async () => {
    const doc = (await m.test.get('/openapi.json')).body;
    const fields: Array<{ where: string; name: string; schema: any }> = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters ?? [])
          fields.push({ where: `${method} ${path} ${p.in}`, name: p.name, schema: p.schema });
        const body = op.requestBody?.content?.['application/json']?.schema;
        for (const [name, schema] of Object.entries(body?.properties ?? {}))
          fields.push({ where: `${method} ${path} body`, name, schema });
      }
    }
    // A union of values is written `anyOf` of `const` (or of one-value `enum`, as the document shows a const).
    const valuesOf = (b: any): unknown[] | null => ('const' in b ? [b.const] : Array.isArray(b.enum) ? b.enum : null);
    const unions = fields.filter(
      (f) => Array.isArray(f.schema?.anyOf) && f.schema.anyOf.every((b: any) => valuesOf(b) !== null),
    );
    assert.ok(unions.length >= 3, unions.map((u) => u.where).join(', '));
    for (const u of unions) {
      const values = u.schema.anyOf.flatMap((b: any) => valuesOf(b)!.map(String));
      const validate = validatorCompiler({
        schema: { type: 'object', properties: { [u.name]: u.schema } },
        httpPart: 'body',
        method: 'POST',
        url: '/x',
      }) as any;
      assert.equal(validate({ [u.name]: 'no-such-value' }), false);
      const { param, message } = explainValidation(validate.errors, 'body');
      assert.equal(param, u.name, u.where);
      for (const v of values)
        assert.ok(
          message.includes(v),
          `${u.where} ${u.name}: "${message}" names ${v} (${JSON.stringify(validate.errors)})`,
        );
    }
  });
});

/** Sends raw bytes to a listener and returns what came back before the server closed the connection. */
function rawRequest(
  baseUrl: string,
  bytes: string,
): Promise<{ status: number; headers: Record<string, string>; body: any; raw: string }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (raw += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, ...rest] = raw.split('\r\n\r\n');
      const lines = head!.split('\r\n');
      const headers = Object.fromEntries(
        lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      let body: any = rest.join('\r\n\r\n');
      try {
        body = JSON.parse(body);
      } catch {
        // left as text for the assertion message
      }
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers, body, raw });
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to ${JSON.stringify(bytes.slice(0, 80))}`)));
  });
}

describe('requests the HTTP parser refuses', () => {
  let key = '';
  const auth = () => `Authorization: Bearer ${key}\r\n`;
  const cases: Array<[string, () => string, RegExp]> = [
    [
      'a control byte in a header',
      () => `GET /v1/account HTTP/1.1\r\nHost: x\r\n${auth()}X-Note: a\u0001b\r\n\r\n`,
      /character HTTP does not allow/,
    ],
    [
      'a malformed chunked body',
      () =>
        `POST /v1/payments HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      /chunked/,
    ],
    [
      'a Content-Length that is not a number',
      () => `POST /v1/payments HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: abc\r\n\r\n`,
      /Content-Length/,
    ],
    [
      'two different Content-Lengths',
      () => `POST /v1/payments HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc`,
      /Content-Length/,
    ],
    [
      'Content-Length with Transfer-Encoding',
      () =>
        `POST /v1/payments HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      /Transfer-Encoding/,
    ],
    ['a URL too large', () => `GET /v1/account?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, /too large/],
    [
      'headers too large',
      () => `GET /v1/account HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      /too large/,
    ],
    ['no HTTP method', () => `{"a":1}\r\n\r\n`, /HTTP method/],
    ['an HTTP version that does not exist', () => `GET /v1/account HTTP/9.9\r\nHost: x\r\n\r\n`, /version/],
    ['HTTP/1.1 without Host', () => `GET /v1/account HTTP/1.1\r\n${auth()}Connection: close\r\n\r\n`, /Host/],
  ];

  for (const [name, bytes, says] of cases) {
    test(`${name}: 400 invalid_request with the Error body and a request id, on every listener`, async () => {
      for (const [listener, k] of [
        [t.urls.test, m.testKey],
        [t.urls.live, m.liveKey],
        [t.urls.checkout, ''],
      ]) {
        key = k!;
        const res = await rawRequest(listener!, bytes());
        assert.equal(res.status, 400, `${listener}: ${res.raw.slice(0, 300)}`);
        assertErrorBody(res.body, 'invalid_request');
        assert.match(res.body.error.message, says);
        assert.match(res.headers['request-id'] ?? '', /^req_[0-9A-Z]{26}$/);
        assert.match(res.headers['content-type'] ?? '', /^application\/json/);
      }
    });
  }

  test('a Content-Length shorter than the body: the leftover bytes are refused with the Error body and nothing is created', async () => {
    key = m.testKey;
    const body = JSON.stringify({ ...base, order_id: 'short' });
    const res = await rawRequest(
      t.urls.test,
      `POST /v1/payments HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 5\r\n\r\n${body}`,
    );
    const answers = res.raw.split(/(?=HTTP\/1\.1 )/);
    assert.ok(answers.length >= 1, res.raw);
    for (const a of answers) {
      assert.match(a, /^HTTP\/1\.1 400 /);
      assertErrorBody(JSON.parse(a.slice(a.indexOf('\r\n\r\n') + 4)), 'invalid_request');
    }
    assert.match(res.raw, /Content-Length/);
    assert.equal((await m.test.get('/payments?order_id=short')).body.data.length, 0);
  });

  test('a body over the limit stays 400 invalid_request and says what the limit is', async () => {
    const big = await m.test.post('/payments', JSON.stringify({ ...base, metadata: { x: 'y'.repeat(70_000) } }));
    assert.equal(big.status, 400);
    assertErrorBody(big.body, 'invalid_request');
    assert.equal(big.body.error.message, `Request body is too large (at most ${t.config.bodyLimitBytes} bytes)`);
  });

  test('the listener keeps serving after refusing', async () => {
    assert.equal((await new ApiClient(t.urls.test, m.testKey).get('/account')).status, 200);
  });
});

describe('text that is not valid Unicode', () => {
  /** Rows of everything a request could create or change, to show a refused request changed nothing. */
  const snapshot = async () => {
    const counts = await sql<{ n: string }>`
      SELECT (SELECT count(*) FROM payments) || ',' || (SELECT count(*) FROM links) || ',' || (SELECT count(*) FROM subscriptions) || ',' ||
             (SELECT count(*) FROM disbursements) || ',' || (SELECT count(*) FROM idempotency_keys) || ',' || (SELECT count(*) FROM audit_log) AS n`.execute(
      t.kasse.db,
    );
    const profile = await sql<{
      p: string;
    }>`SELECT coalesce(tax_profile_test::text, '') || coalesce(tax_profile_live::text, '') AS p FROM merchants WHERE id = ${m.id}`.execute(
      t.kasse.db,
    );
    return `${counts.rows[0]!.n} ${profile.rows[0]!.p}`;
  };
  const dest = (i: number) => `0x${i.toString(16).padStart(40, '0')}`;
  // A lone surrogate in a value or a key; JSON.stringify writes it as the escape `\ud800`, as a client's JSON would.
  const cases: Array<[string, string, unknown, string | null]> = [
    ['POST', '/payments', { ...base, description: '\ud800x' }, 'description'],
    ['POST', '/payments', { ...base, order_id: 'a\udc00' }, 'order_id'],
    ['POST', '/payments', { ...base, metadata: { note: 'x\ud83d' } }, 'metadata.note'],
    ['POST', '/payments', { ...base, metadata: { deep: [1, { y: '\udfff' }] } }, 'metadata.deep.1.y'],
    ['POST', '/payments', { ...base, metadata: { 'key\ud800': 1 } }, 'metadata'],
    ['POST', '/payments', { ...base, '\ud800': 1 }, null],
    [
      'POST',
      '/subscriptions',
      { title: 'Coffee\ud800', amount_usd_cents: 1500, interval: 'month', customer_email: 'c@example.com' },
      'title',
    ],
    [
      'POST',
      '/disbursements',
      {
        title: 'March',
        items: [0, 1, 2, 3].map((i) => ({ destination: i === 3 ? 'x\udbff' : dest(i + 1), usd_cents: 100 })),
      },
      'items.3.destination',
    ],
    ['POST', '/links', { kind: 'fixed', title: 'Mug\ud800', amount_usd_cents: 1200 }, 'title'],
    ['PATCH', '/account', { tax_profile: { seller_name: '\ud800' } }, 'tax_profile.seller_name'],
  ];

  test('in any string of a creation or change, on both APIs, with or without a key: 400 naming the field, nothing stored', async () => {
    const before = await snapshot();
    for (const client of [m.test, m.live]) {
      for (const [method, path, body, param] of cases) {
        for (const headers of [{}, { 'Idempotency-Key': `bad-text-${param}` }] as Record<string, string>[]) {
          const res = await client.request(method, path, body, headers);
          const what = `${client.baseUrl} ${method} ${path} ${JSON.stringify(headers)} → ${res.status} ${JSON.stringify(res.body)}`;
          assert.equal(res.status, 400, what);
          assertErrorBody(res.body, 'invalid_request', param);
          assert.match(res.body.error.message, /not valid Unicode text/, what);
        }
      }
    }
    assert.equal(await snapshot(), before, 'nothing was stored');
  });

  test('every operation that takes a body refuses it the same way, before anything else reads the body', async () => {
    for (const client of [m.test, m.live]) {
      const doc = (await client.get('/openapi.json')).body;
      const withBody = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
        Object.entries(ops)
          .filter(([, op]) => op.requestBody)
          .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
      );
      assert.ok(withBody.length >= 8, 'the document lists the operations with a body');
      for (const { method, path, op } of withBody) {
        const url = path.replace(/\{(\w+)\}/g, (_m, name: string) =>
          samplePathValue(op.parameters?.find((p: any) => p.name === name)?.schema?.pattern),
        );
        const res = await client.request(method, url, { note: 'ok', 'x\udc00': 'y' });
        const what = `${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`;
        assert.equal(res.status, 400, what);
        assertErrorBody(res.body, 'invalid_request', null);
        assert.equal(
          res.body.error.message,
          'A property name in the request body is not valid Unicode text (it holds an unpaired UTF-16 surrogate)',
          what,
        );
      }
    }
  });

  test('well-formed text passes: surrogate pairs, as escapes or as UTF-8, and U+FFFD itself', async () => {
    const raw = `{"price_amount":2500,"price_currency":"USD","order_id":"pair-\\ud83d\\ude00","description":"\\uD83D\\uDE00 ☕ 😀 \ufffd","metadata":{"\\ud83d\\ude00":"\\u00e9"}}`;
    const res = await m.test.post('/payments', raw);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.order_id, 'pair-😀');
    assert.equal(res.body.description, '😀 ☕ 😀 \ufffd');
    assert.deepEqual(res.body.metadata, { '😀': 'é' });
  });

  test('URLs cannot carry one: an undecodable path segment is 400, an undecodable query value stays as sent', async () => {
    const path = await m.test.get('/payments/pay_%ED%A0%80');
    assert.equal(path.status, 400, JSON.stringify(path.body));
    assertErrorBody(path.body, 'invalid_request');
    const query = await m.test.get('/payments?order_id=%ED%A0%80');
    assert.equal(query.status, 200, JSON.stringify(query.body));
    assert.deepEqual(query.body.data, []);
  });
});
