/**
 * @kasse/sdk against a running Kasse: every method of the client, paging with `for await`, idempotency keys, typed
 * errors; retries against a local server that answers 429, 503 and drops connections; and the generated files
 * checked against the OpenAPI document the server serves (the "types match the server" check).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { generatedFiles, operationsOf } from '../../sdk/scripts/codegen.ts';
import {
  Kasse,
  KasseAuthenticationError,
  KasseConflictError,
  KasseConnectionError,
  KasseError,
  KasseInvalidRequestError,
  KasseNotFoundError,
  KassePermissionError,
  KasseRateLimitError,
  KasseStateError,
  KasseUnavailableError,
  RESOURCES,
  type Endpoint,
} from '../../sdk/src/index.ts';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startBinanceServer, startCoinGeckoServer, type PriceServer } from '../harness/price-servers.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';
import { KASSE_HOME } from '../../src/config.ts';

let t: TestKasse;
let m: TestMerchant;
let kasse: Kasse;
let receiver: WebhookReceiver;
let prices: PriceServer[];
/** Headers of every request the client sent, in order. */
const sent: Array<{ method: string; url: string; headers: Headers }> = [];

before(async () => {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const coingecko = await startCoinGeckoServer({ now: () => clock.now() });
  const binance = await startBinanceServer();
  coingecko.setPrice('ethereum', 3000);
  binance.setPrice('ETHUSDT', 3000);
  prices = [coingecko, binance];
  t = await startTestKasse({ clock, env: { KASSE_COINGECKO_URL: coingecko.url, KASSE_BINANCE_URL: binance.url } });
  receiver = await startWebhookReceiver({ now: () => clock.now() });
  m = await t.merchant({ webhookUrl: receiver.url, rateLimit: 100_000 });
  receiver.setSecret(m.webhookSecret);
  kasse = new Kasse(m.testKey, {
    baseUrl: t.urls.test,
    fetch: (input, init) => {
      sent.push({ method: init?.method ?? 'GET', url: String(input), headers: new Headers(init?.headers) });
      return fetch(input, init);
    },
  });
});
after(async () => {
  await t.close();
  await receiver.close();
  for (const p of prices) await p.close();
});

const order = (id: string, extra: Record<string, unknown> = {}) => ({
  price_amount: 2500,
  price_currency: 'USD' as const,
  order_id: id,
  ...extra,
});

describe('the client covers the API', () => {
  test('the generated types and operation table match the OpenAPI document the server serves', async () => {
    const doc = await (await fetch(`${t.urls.test}/openapi.json`)).json();
    const files = await generatedFiles(doc);
    for (const [name, text] of Object.entries(files)) {
      const checkedIn = readFileSync(join(KASSE_HOME, 'sdk', 'src', 'generated', name), 'utf8');
      assert.ok(
        checkedIn === text,
        `sdk/src/generated/${name} is out of date: run \`npm run sdk:generate\` and commit the result`,
      );
    }
  });

  test('every operation of the API has exactly one method, and every method an operation', async () => {
    const doc = await (await fetch(`${t.urls.test}/openapi.json`)).json();
    const used: string[] = [];
    const walk = (table: object) => {
      for (const entry of Object.values(table)) {
        if ('operationId' in entry) used.push((entry as Endpoint<never>).operationId);
        else walk(entry);
      }
    };
    walk(RESOURCES);
    assert.deepEqual(
      [...used].sort(),
      Object.keys(operationsOf(doc)).sort(),
      'sdk/src/resources.ts has one line per operation',
    );
  });
});

describe('every method against a running Kasse', () => {
  test('payments: create (with an automatic Idempotency-Key), retrieve, list, choose a coin, simulate, cancel, accept, refund', async () => {
    const p = await kasse.payments.create(order('sdk-1', { description: 'Two mugs', metadata: { cart: 7 } }));
    assert.match(p.id, /^pay_[0-9A-Z]{36}$/);
    assert.equal(p.status, 'waiting');
    const create = sent.findLast((r) => r.method === 'POST' && r.url.endsWith('/payments'))!;
    assert.match(
      create.headers.get('idempotency-key') ?? '',
      /^[0-9a-f-]{36}$/,
      'a creating call carries a generated Idempotency-Key',
    );
    assert.equal(create.headers.get('authorization'), `Bearer ${m.testKey}`);
    assert.deepEqual((await kasse.payments.retrieve(p.id)).metadata, { cart: 7 });
    assert.deepEqual(
      (await kasse.payments.list({ order_id: 'sdk-1' })).data.map((x) => x.id),
      [p.id],
    );

    // The same key and body answer the first payment; another body with it is a conflict.
    const a = await kasse.payments.create(order('sdk-2'), { idempotencyKey: 'order-sdk-2' });
    const b = await kasse.payments.create(order('sdk-2'), { idempotencyKey: 'order-sdk-2' });
    assert.equal(a.id, b.id);
    const conflict = await kasse.payments
      .create(order('sdk-2', { price_amount: 9900 }), { idempotencyKey: 'order-sdk-2' })
      .catch((e: unknown) => e);
    assert.ok(conflict instanceof KasseConflictError);
    assert.equal(conflict.code, 'idempotency_conflict');
    assert.equal(conflict.param, 'Idempotency-Key');
    assert.equal(conflict.status, 409);

    const withCoin = await kasse.payments.createAttempt(p.id, { chain: 'base', token: 'base:usdc' });
    assert.equal(withCoin.attempts[0]!.token, 'base:usdc');
    const paid = await kasse.testHelpers.payments.simulate(p.id, { outcome: 'paid' });
    assert.equal(paid.status, 'paid');
    const refund = await kasse.payments.refund(p.id, { destination: paid.attempts[0]!.address, note: 'returned' });
    assert.equal(refund.status, 'pending');
    assert.equal(refund.payment_id, p.id);

    const cancelled = await kasse.payments.cancel((await kasse.payments.create(order('sdk-3'))).id);
    assert.equal(cancelled.status, 'cancelled');
    const under = await kasse.testHelpers.payments.simulate((await kasse.payments.create(order('sdk-4'))).id, {
      outcome: 'underpaid',
    });
    assert.equal(under.status, 'underpaid');
    assert.equal((await kasse.payments.accept(under.id)).status, 'paid');
  });

  test('payments held for capture: create manual, capture with an Idempotency-Key (a retry captures once), void', async () => {
    const held = await kasse.payments.create(order('sdk-held', { capture_method: 'manual' }));
    assert.equal(held.capture_method, 'manual');
    assert.deepEqual(
      { ...held.authorization!, capture_before: undefined, refund_before: undefined },
      {
        amount_usd_cents: 2500,
        captured_usd_cents: 0,
        pending_usd_cents: 0,
        capture_before: undefined,
        refund_before: undefined,
        voided: false,
        captures: [],
      },
    );
    const authorized = await kasse.testHelpers.payments.simulate(held.id, { outcome: 'authorized' });
    assert.equal(authorized.status, 'authorized');

    const part = await kasse.payments.capture(
      held.id,
      { amount_usd_cents: 1000 },
      { idempotencyKey: `cap-${held.id}` },
    );
    const call = sent.findLast((r) => r.url.endsWith(`/payments/${held.id}/capture`))!;
    assert.equal(call.headers.get('idempotency-key'), `cap-${held.id}`);
    assert.equal(part.authorization!.pending_usd_cents, 1000);
    const again = await kasse.payments.capture(
      held.id,
      { amount_usd_cents: 1000 },
      { idempotencyKey: `cap-${held.id}` },
    );
    assert.deepEqual(again, part, 'the retry is answered the first answer');
    await t.kasse.capture.settleSimulated();
    const paid = await kasse.payments.retrieve(held.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.authorization!.captured_usd_cents, 1000, 'captured once');
    assert.equal(paid.authorization!.captures.length, 1);

    // No body captures what remains; the call still carries a key of its own.
    const rest = await kasse.payments.capture(held.id);
    assert.equal(rest.authorization!.pending_usd_cents, 1500);
    assert.match(
      sent.findLast((r) => r.url.endsWith(`/payments/${held.id}/capture`))!.headers.get('idempotency-key') ?? '',
      /^[0-9a-f-]{36}$/,
    );
    const nothingLeft = await kasse.payments.capture(held.id, { amount_usd_cents: 1 }).catch((e: unknown) => e);
    assert.ok(nothingLeft instanceof KasseStateError);
    assert.equal(nothingLeft.code, 'invalid_state');

    const other = await kasse.payments.create(order('sdk-held-2', { capture_method: 'manual' }));
    await kasse.testHelpers.payments.simulate(other.id, { outcome: 'authorized' });
    const voiding = await kasse.payments.void(other.id, { idempotencyKey: `void-${other.id}` });
    assert.equal(voiding.status, 'authorized', 'until the void settles');
    await t.kasse.capture.settleSimulated();
    const voided = await kasse.payments.retrieve(other.id);
    assert.equal(voided.status, 'cancelled');
    assert.equal(voided.authorization!.voided, true);
  });

  test('account, balance, currencies and estimates', async () => {
    const account = await kasse.account.retrieve();
    assert.equal(account.id, m.id);
    assert.equal(account.mode, 'test');
    const balance = await kasse.balance.retrieve();
    assert.equal(typeof balance.available_usd_cents, 'number');
    const currencies = await kasse.currencies.list();
    assert.ok(currencies.data.some((c) => c.token === 'base:usdc'));
    const tokens: string[] = [];
    for await (const c of kasse.currencies.list()) tokens.push(c.token);
    assert.deepEqual(
      tokens,
      currencies.data.map((c) => c.token),
    );
    const estimate = await kasse.currencies.estimate({ price_amount: 2500, token: 'base:eth' });
    assert.equal(estimate.rate, '3000');
    assert.equal(estimate.pay_amount, '8333333333333334');
  });

  test('account update (tax profile), tax invoices with their PDF, statements', async () => {
    const profile = {
      seller_name: 'Corner Café',
      tax_id: '27AAPFU0939F1ZV',
      address: '12 Hill Road, Mumbai 400050',
      state_code: '27',
      invoice_prefix: 'KS',
    };
    const account = await kasse.account.update({ tax_profile: profile });
    assert.equal(account.tax_profile?.tax_rate_bps, 1800);
    const paid = await kasse.testHelpers.payments.simulate(
      (await kasse.payments.create(order('invoiced', { description: 'Two mugs' }))).id,
      { outcome: 'paid' },
    );
    const invoice = await kasse.taxInvoices.create(paid.id, {
      place_of_supply: 'intra',
      fx_rate: '83.25',
      customer_name: 'Asha Traders',
    });
    assert.equal(invoice.total, '2081.25');
    assert.equal(invoice.cgst, '158.74');
    const again = await kasse.taxInvoices
      .create(paid.id, { place_of_supply: 'intra', fx_rate: '83.25' })
      .catch((e: unknown) => e);
    assert.ok(again instanceof KasseConflictError);
    assert.equal(again.code, 'already_invoiced');
    assert.deepEqual(
      (await kasse.taxInvoices.list({ payment_id: paid.id })).data.map((i) => i.id),
      [invoice.id],
    );
    assert.equal((await kasse.taxInvoices.retrieve(invoice.id)).number, invoice.number);
    const pdf = await kasse.taxInvoices.pdf(invoice.id);
    assert.ok(pdf instanceof Uint8Array);
    assert.equal(Buffer.from(pdf.subarray(0, 5)).toString('latin1'), '%PDF-');
    const statement = await kasse.statements.retrieve('2026-03');
    assert.equal(statement.month, '2026-03');
    assert.ok(statement.payments.count >= 1);
    assert.equal(statement.reconciliation_gap_usd_cents, 0);
  });

  test('links: create, list, retrieve, update', async () => {
    const link = await kasse.links.create({ kind: 'fixed', title: 'Coffee beans', amount_usd_cents: 2400 });
    assert.equal(
      sent.findLast((r) => r.method === 'POST' && r.url.endsWith('/links'))!.headers.get('idempotency-key'),
      null,
      'no Idempotency-Key where the API takes none',
    );
    assert.equal((await kasse.links.retrieve(link.id)).title, 'Coffee beans');
    assert.ok((await kasse.links.list()).data.some((l) => l.id === link.id));
    const off = await kasse.links.update(link.id, { active: false });
    assert.equal(off.active, false);
  });

  test('events: list, retrieve, redeliver, stream', async () => {
    const ctl = new AbortController();
    let connected!: () => void;
    const ready = new Promise<void>((resolve) => (connected = resolve));
    const stream = kasse.events.stream(
      { types: 'payment.cancelled' },
      { signal: ctl.signal, onConnect: () => connected() },
    );
    const iterator = stream[Symbol.asyncIterator]();
    const first = iterator.next();
    await ready;
    const p = await kasse.payments.cancel((await kasse.payments.create(order('sdk-events'))).id);
    const streamed = (await first).value!;
    assert.equal(streamed.type, 'payment.cancelled');
    assert.equal(streamed.event.data.id, p.id);
    assert.equal(stream.lastEventId, streamed.id);
    ctl.abort();
    await iterator.return?.(undefined);

    const listed = await kasse.events.list({ type: 'payment.cancelled', limit: 5 });
    const event = listed.data.find((e) => (e.data as { id: string }).id === p.id)!;
    assert.equal(event.id, streamed.id);
    const detail = await kasse.events.retrieve(event.id);
    assert.equal(detail.deliveries.length, 1);
    const again = await kasse.events.redeliver(event.id);
    assert.equal(again.status, 'pending');
    assert.equal((await kasse.events.retrieve(event.id)).deliveries.length, 2);
  });
});

describe('pages', () => {
  test('for await walks every page by cursor; awaiting gives the first page; toArray stops at its limit', async () => {
    const created: string[] = [];
    for (let i = 0; i < 23; i++) created.push((await kasse.payments.create(order('paged'))).id);
    const newestFirst = [...created].reverse();
    const first = await kasse.payments.list({ order_id: 'paged', limit: 10 });
    assert.equal(first.data.length, 10);
    assert.ok(first.next_cursor);
    const before = sent.length;
    const all: string[] = [];
    for await (const p of kasse.payments.list({ order_id: 'paged', limit: 10 })) all.push(p.id);
    assert.deepEqual(all, newestFirst);
    assert.equal(sent.length - before, 3, 'three pages of 10, 10 and 3');
    const cursors = sent.slice(before).map((r) => new URL(r.url).searchParams);
    assert.deepEqual(
      cursors.map((q) => [q.get('order_id'), q.get('limit'), q.has('cursor')]),
      [
        ['paged', '10', false],
        ['paged', '10', true],
        ['paged', '10', true],
      ],
    );
    const sizes: number[] = [];
    for await (const page of kasse.payments.list({ order_id: 'paged', limit: 10 }).pages())
      sizes.push(page.data.length);
    assert.deepEqual(sizes, [10, 10, 3]);
    assert.deepEqual(
      await kasse.payments.list({ order_id: 'paged', limit: 5 }).toArray({ limit: 12 }),
      (await kasse.payments.list({ order_id: 'paged', limit: 12 })).data,
    );
  });
});

describe('typed errors', () => {
  test('each error status has its class, with code, param, status and request id', async () => {
    const invalid = await kasse.payments
      .create({ price_amount: 0, price_currency: 'USD', order_id: 'x' })
      .catch((e: unknown) => e);
    assert.ok(invalid instanceof KasseInvalidRequestError);
    assert.equal(invalid.code, 'invalid_request');
    assert.equal(invalid.param, 'price_amount');
    assert.match(invalid.requestId ?? '', /^req_[0-9A-Z]{26}$/);

    const unknownKey = await new Kasse('kasse_test_nope', { baseUrl: t.urls.test }).account
      .retrieve()
      .catch((e: unknown) => e);
    assert.ok(unknownKey instanceof KasseAuthenticationError);
    assert.equal(unknownKey.status, 401);

    const wrongMode = await new Kasse(m.liveKey, { baseUrl: t.urls.test }).account.retrieve().catch((e: unknown) => e);
    assert.ok(wrongMode instanceof KassePermissionError);
    assert.equal(wrongMode.code, 'wrong_mode');

    const missing = await kasse.payments.retrieve('pay_000000000000000000000000000000000000').catch((e: unknown) => e);
    assert.ok(missing instanceof KasseNotFoundError);
    assert.equal(missing.code, 'not_found');

    const p = await kasse.payments.create(order('errors'));
    for (const token of ['base:usdc', 'base:eth', 'ethereum:usdc'])
      await kasse.payments.createAttempt(p.id, { chain: token.split(':')[0]!, token });
    const fourth = await kasse.payments
      .createAttempt(p.id, { chain: 'arbitrum', token: 'arbitrum:usdc' })
      .catch((e: unknown) => e);
    assert.ok(fourth instanceof KasseConflictError);
    assert.equal(fourth.code, 'too_many_attempts');

    const paid = await kasse.testHelpers.payments.simulate((await kasse.payments.create(order('errors-2'))).id, {
      outcome: 'paid',
    });
    const state = await kasse.payments.cancel(paid.id).catch((e: unknown) => e);
    assert.ok(state instanceof KasseStateError);
    assert.equal(state.code, 'invalid_state');
    assert.ok(state instanceof KasseError && state instanceof Error);
    assert.match(state.message, /paid/);

    // A real 429 from Kasse, with retries turned off.
    const limited = await t.merchant({ rateLimit: 1 });
    const strict = new Kasse(limited.testKey, { baseUrl: t.urls.test, maxRetries: 0 });
    await strict.account.retrieve();
    const refused = await strict.account.retrieve().catch((e: unknown) => e);
    assert.ok(refused instanceof KasseRateLimitError);
    assert.equal(refused.code, 'rate_limited');
    assert.ok((refused.retryAfter ?? 0) > 0);

    const nowhere = await new Kasse(m.testKey, { baseUrl: 'http://127.0.0.1:9/v1', maxRetries: 0 }).account
      .retrieve()
      .catch((e: unknown) => e);
    assert.ok(nowhere instanceof KasseConnectionError);
    assert.equal(nowhere.status, null);
  });

  test('bad arguments are caught before any request', async () => {
    const count = sent.length;
    await assert.rejects(() => kasse.payments.retrieve('' as string), TypeError);
    assert.throws(() => new Kasse('', { baseUrl: t.urls.test }), TypeError);
    assert.throws(() => new Kasse('kasse_test_x', undefined as never), /baseUrl/);
    assert.equal(sent.length, count);
  });
});

// ---------------------------------------------------------------------------------------------------------------

type Reply = { status: number; headers?: Record<string, string>; body?: unknown } | 'drop';

interface ScriptedServer {
  url: string;
  requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders; at: number }>;
  script(...replies: Reply[]): void;
  close(): Promise<void>;
}

/** An API stand-in that answers each request with the next scripted reply ('drop' closes the connection). */
async function scriptedServer(): Promise<ScriptedServer> {
  const replies: Reply[] = [];
  const requests: ScriptedServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push({ method: req.method!, path: req.url!, headers: req.headers, at: performance.now() });
      const r = replies.shift() ?? { status: 500 };
      if (r === 'drop') return req.socket.destroy();
      res.writeHead(r.status, {
        'content-type': 'application/json',
        'request-id': `req_${requests.length}`,
        ...r.headers,
      });
      res.end(
        JSON.stringify(
          r.body ??
            (r.status >= 400
              ? {
                  error: {
                    code: r.status === 429 ? 'rate_limited' : 'service_unavailable',
                    message: 'scripted',
                    param: null,
                  },
                }
              : {}),
        ),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    script: (...r) => replies.push(...r),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('retries', () => {
  let api: ScriptedServer;
  let client: Kasse;
  before(async () => {
    api = await scriptedServer();
    client = new Kasse('kasse_test_scripted', { baseUrl: api.url, maxRetries: 2 });
  });
  after(() => api.close());

  const since = (n: number) => api.requests.slice(n);

  test('a read is retried after 503 and after a dropped connection, with backoff', async () => {
    const n = api.requests.length;
    api.script({ status: 503 }, 'drop', { status: 200, body: { id: 'mer_1' } });
    const account = await client.account.retrieve();
    assert.equal(account.id, 'mer_1');
    const got = since(n);
    assert.equal(got.length, 3);
    assert.ok(got[1]!.at - got[0]!.at >= 300, 'waited before the first retry');
  });

  test('a rate-limited request waits as long as Retry-After says, whatever the method', async () => {
    const n = api.requests.length;
    api.script({ status: 429, headers: { 'retry-after': '1' } }, { status: 201, body: { id: 'lnk_1' } });
    const link = await client.links.create({ kind: 'open', title: 'Tips' });
    assert.equal(link.id, 'lnk_1');
    const got = since(n);
    assert.equal(got.length, 2, 'a 429 is safe to send again: the API refused it before doing anything');
    assert.ok(got[1]!.at - got[0]!.at >= 1000, `waited ${Math.round(got[1]!.at - got[0]!.at)} ms for Retry-After: 1`);
  });

  test('a create with an Idempotency-Key is retried with the same key', async () => {
    const n = api.requests.length;
    api.script({ status: 503 }, 'drop', { status: 201, body: { id: 'pay_1' } });
    await client.payments.create(order('retry'));
    const got = since(n);
    assert.equal(got.length, 3);
    const keys = got.map((r) => r.headers['idempotency-key']);
    assert.ok(keys[0]);
    assert.deepEqual(keys, [keys[0], keys[0], keys[0]]);
  });

  test('a call that is not idempotent is not retried after 503 or a dropped connection', async () => {
    const n = api.requests.length;
    api.script({ status: 503 });
    const unavailable = await client.links.create({ kind: 'open', title: 'Tips' }).catch((e: unknown) => e);
    assert.ok(unavailable instanceof KasseUnavailableError);
    assert.equal(unavailable.requestId, `req_${n + 1}`);
    api.script('drop');
    const dropped = await client.payments.cancel('pay_x').catch((e: unknown) => e);
    assert.ok(dropped instanceof KasseConnectionError);
    assert.equal(since(n).length, 2);
  });

  test('when the retries run out the last error is thrown', async () => {
    const n = api.requests.length;
    api.script({ status: 503 }, { status: 503 }, { status: 503 });
    const err = await client.balance.retrieve().catch((e: unknown) => e);
    assert.ok(err instanceof KasseUnavailableError);
    assert.equal(since(n).length, 3);
    api.script({ status: 429, headers: { 'retry-after': '0' } });
    const limited = await client.balance.retrieve({ maxRetries: 0 }).catch((e: unknown) => e);
    assert.ok(limited instanceof KasseRateLimitError);
    assert.equal(limited.retryAfter, 0);
  });
});
