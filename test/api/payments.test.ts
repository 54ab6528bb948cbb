/**
 * Payments through the public API: creation rules and validation, idempotency, reading and listing, coin choices,
 * the coin catalogue and estimates, cancel/accept/refund, and the separation of test and live.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MINUTE } from '../../src/core/clock.ts';
import { paymentStatements, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError } from '../harness/expect.ts';
import { startBinanceServer, startCoinGeckoServer, type PriceServer } from '../harness/price-servers.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';
import { KASSE_HOME } from '../../src/config.ts';
import type { Tenant } from '../../src/core/tenant.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

let t: TestKasse;
let m: TestMerchant;
let tenant: Tenant;
let cg: PriceServer;
let bn: PriceServer;

const PAY_ID = /^pay_[0-9A-Z]{36}$/;
const base = { price_amount: 1234, price_currency: 'USD', order_id: 'order-1' };

async function count(merchantId = m.id): Promise<number> {
  const row = await t.kasse.db
    .selectFrom('payments')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('merchant_id', '=', merchantId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function eventTypes(paymentId: string): Promise<string[]> {
  const rows = await t.kasse.db
    .selectFrom('events')
    .select('type')
    .where('ordering_key', '=', paymentId)
    .orderBy('seq')
    .execute();
  return rows.map((r) => r.type);
}

before(async () => {
  const now = () => t.clock.now();
  cg = await startCoinGeckoServer({ now });
  bn = await startBinanceServer();
  cg.setPrice('ethereum', 2000);
  bn.setPrice('ETHUSDT', 2000);
  cg.setPrice('solana', '150.5');
  cg.setPrice('polygon-ecosystem-token', 0.25);
  // The test networks with polygon paused.
  const doc = JSON.parse(readFileSync(join(KASSE_HOME, 'config', 'networks.test.json'), 'utf8'));
  doc.networks.find((n: any) => n.id === 'polygon').paused = true;
  const file = join(mkdtempSync(join(tmpdir(), 'kasse-nets-')), 'networks.json');
  writeFileSync(file, JSON.stringify(doc));
  t = await startTestKasse({
    env: { KASSE_COINGECKO_URL: cg.url, KASSE_BINANCE_URL: bn.url, KASSE_NETWORKS_FILE: file },
  });
  m = await t.merchant({ rateLimit: 100_000 });
  tenant = { mode: 'test', merchantId: m.id };
});
after(async () => {
  await t.close();
  await cg.close();
  await bn.close();
});

describe('creating payments', () => {
  test('a minimal payment is waiting with every field present', async () => {
    const res = await m.test.post('/payments', {
      ...base,
      description: 'Two coffees',
      metadata: { cart: [1, 2], z: 1, a: 'x' },
    });
    assert.equal(res.status, 201);
    const p = res.body;
    assert.deepEqual(Object.keys(p), [
      'id',
      'status',
      'price_amount',
      'price_currency',
      'order_id',
      'description',
      'checkout_url',
      'expires_at',
      'paid_at',
      'paid_attempt_id',
      'success_url',
      'cancel_url',
      'metadata',
      'created_at',
      'attempts',
    ]);
    assert.match(p.id, PAY_ID);
    assert.equal(p.status, 'waiting');
    assert.equal(p.price_amount, 1234);
    assert.equal(p.price_currency, 'USD');
    assert.equal(p.description, 'Two coffees');
    assert.equal(p.checkout_url, `${t.urls.checkout}/p/${p.id}`);
    assert.equal(p.created_at, t.clock.now().toISOString());
    assert.equal(new Date(p.expires_at).getTime() - new Date(p.created_at).getTime(), 24 * 60 * MINUTE);
    assert.equal(p.paid_at, null);
    assert.equal(p.paid_attempt_id, null);
    assert.equal(p.success_url, null);
    assert.equal(p.cancel_url, null);
    assert.deepEqual(Object.keys(p.metadata), ['cart', 'z', 'a'], 'metadata keeps its key order');
    assert.deepEqual(p.attempts, []);
    const got = await m.test.get(`/payments/${p.id}`);
    assert.deepEqual(got.body, p);
  });

  test('token issues the coin choice in the same call; chain is inferred from it', async () => {
    const res = await m.test.post('/payments', { ...base, token: 'base:usdc' });
    assert.equal(res.status, 201);
    const [a] = res.body.attempts;
    assert.deepEqual(Object.keys(a), [
      'id',
      'chain',
      'token',
      'symbol',
      'address',
      'pay_amount',
      'pay_amount_display',
      'received_amount',
      'received_amount_display',
      'rate',
      'rate_source',
      'status',
      'overpaid',
      'wrong_asset',
      'confirmation_tier',
      'confirmations_required',
      'expires_at',
      'uri',
      'deposits',
    ]);
    assert.match(a.id, /^att_[0-9A-Z]{26}$/);
    assert.equal(a.chain, 'base');
    assert.equal(a.token, 'base:usdc');
    assert.equal(a.symbol, 'USDC');
    assert.match(a.address, /^0x[0-9a-fA-F]{40}$/);
    assert.equal(a.pay_amount, '12340000');
    assert.equal(a.pay_amount_display, '12.34');
    assert.equal(a.received_amount, '0');
    assert.equal(a.received_amount_display, '0');
    assert.equal(a.rate, '1');
    assert.equal(a.rate_source, 'peg');
    assert.equal(a.status, 'waiting');
    assert.equal(a.overpaid, false);
    assert.equal(a.wrong_asset, false);
    assert.equal(a.confirmation_tier, 1);
    assert.equal(a.confirmations_required, 5);
    assert.equal(new Date(a.expires_at).getTime() - t.clock.now().getTime(), 10 * MINUTE);
    assert.equal(
      a.uri,
      `ethereum:0x036CbD53842c5426634e7929541eC2318f3dCF7e@84532/transfer?address=${a.address}&uint256=12340000`,
    );
    assert.deepEqual(a.deposits, []);
  });

  test('chain and token together; amounts of priced coins round up; tiers follow the price', async () => {
    const res = await m.test.post('/payments', {
      ...base,
      price_amount: 1_000_01,
      chain: 'ethereum',
      token: 'ethereum:eth',
    });
    assert.equal(res.status, 201);
    const a = res.body.attempts[0];
    assert.equal(a.rate, '2000');
    assert.equal(a.rate_source, 'coingecko');
    // 1000.01 USD / 2000 = 0.500005 ETH exactly
    assert.equal(a.pay_amount, '500005000000000000');
    assert.equal(a.pay_amount_display, '0.500005');
    assert.equal(a.confirmation_tier, 3);
    assert.equal(a.confirmations_required, 12);
    const sol = await m.test.post('/payments', { ...base, price_amount: 1000, token: 'solana:sol' });
    assert.equal(sol.status, 201);
    // 10 / 150.5 = 0.066445182… SOL, rounded up to 9 decimals
    assert.equal(sol.body.attempts[0].pay_amount, '66445183');
    assert.match(sol.body.attempts[0].address, /^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    assert.match(
      sol.body.attempts[0].uri,
      /^solana:[1-9A-HJ-NP-Za-km-z]+\?amount=0\.066445183&reference=[1-9A-HJ-NP-Za-km-z]{32,44}&label=[^&]+(&message=[^&]+)?$/,
    );
  });

  test('coin selection errors answer 400 with the field and create nothing', async () => {
    const before = await count();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ chain: 'base' }, 'token'],
      [{ chain: 'base', token: 'ethereum:usdc' }, 'token'],
      [{ token: 'base:doge' }, 'token'],
      [{ token: 'nonsense' }, 'token'],
      [{ chain: 'dogechain', token: 'base:usdc' }, 'chain'],
    ];
    for (const [extra, param] of cases)
      assertError(await m.test.post('/payments', { ...base, ...extra }), 400, 'invalid_request', param);
    assert.equal(await count(), before);
  });

  test('every validation failure answers 400 with the offending field and creates nothing', async () => {
    const before = await count();
    const cases: Array<[unknown, string | null]> = [
      [{ ...base, price_amount: 0 }, 'price_amount'],
      [{ ...base, price_amount: 100_000_001 }, 'price_amount'],
      [{ ...base, price_amount: 12.5 }, 'price_amount'],
      [{ ...base, price_amount: '1234' }, 'price_amount'],
      [{ price_currency: 'USD', order_id: 'x' }, 'price_amount'],
      [{ ...base, price_currency: 'EUR' }, 'price_currency'],
      [{ price_amount: 100, order_id: 'x' }, 'price_currency'],
      [{ ...base, order_id: '' }, 'order_id'],
      [{ ...base, order_id: 'x'.repeat(129) }, 'order_id'],
      [{ price_amount: 100, price_currency: 'USD' }, 'order_id'],
      [{ ...base, description: 'd'.repeat(501) }, 'description'],
      [{ ...base, success_url: 'not a url' }, 'success_url'],
      [{ ...base, cancel_url: `https://example.com/${'a'.repeat(2030)}` }, 'cancel_url'],
      [{ ...base, webhook_url: 'ftp://example.com/hook' }, 'webhook_url'],
      [{ ...base, metadata: 'x' }, 'metadata'],
      [{ ...base, metadata: { note: 'é'.repeat(2100) } }, 'metadata'],
      [{ ...base, amount: 5 }, 'amount'],
      [[base], null],
    ];
    for (const [body, param] of cases) assertError(await m.test.post('/payments', body), 400, 'invalid_request', param);
    assert.equal(await count(), before);
  });

  test('limits are inclusive: 1 and 100000000 cents, 128-character order ids, 500-character descriptions, 4096-byte metadata', async () => {
    const filler = 'x'.repeat(4096 - JSON.stringify({ k: '' }).length);
    for (const body of [
      { ...base, price_amount: 1 },
      { ...base, price_amount: 100_000_000 },
      { ...base, order_id: 'o'.repeat(128), description: 'd'.repeat(500) },
      { ...base, metadata: { k: filler } },
      { ...base, success_url: `https://example.com/${'a'.repeat(2048 - 20)}` },
    ]) {
      const res = await m.test.post('/payments', body);
      assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 300));
    }
  });

  test('URLs must be https:// on the live API; http:// is also accepted on the test API', async () => {
    for (const field of ['success_url', 'cancel_url', 'webhook_url']) {
      const before = await count();
      assertError(
        await m.live.post('/payments', { ...base, [field]: 'http://shop.example/done' }),
        400,
        'invalid_request',
        field,
      );
      assert.equal(await count(), before);
      assert.equal((await m.test.post('/payments', { ...base, [field]: 'http://shop.example/done' })).status, 201);
      assert.equal((await m.live.post('/payments', { ...base, [field]: 'https://shop.example/done' })).status, 201);
    }
    const res = await m.test.post('/payments', {
      ...base,
      success_url: 'http://localhost:3000/ok',
      cancel_url: 'https://shop.example/back',
    });
    assert.equal(res.body.success_url, 'http://localhost:3000/ok');
    assert.equal(res.body.cancel_url, 'https://shop.example/back');
  });
});

describe('idempotency', () => {
  test('same key and body replays the payment with 200; another body is 409', async () => {
    const key = { 'idempotency-key': 'order-77-attempt' };
    const body = { ...base, order_id: 'order-77', token: 'base:usdc' };
    const first = await m.test.post('/payments', body, key);
    assert.equal(first.status, 201);
    const again = await m.test.post('/payments', body, key);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assertError(
      await m.test.post('/payments', { ...body, price_amount: 999 }, key),
      409,
      'idempotency_conflict',
      'Idempotency-Key',
    );
    const list = await m.test.get('/payments?order_id=order-77');
    assert.equal(list.body.data.length, 1);
    // Keys are per mode: the same key on the live API is a different request.
    assert.equal((await m.live.post('/payments', { ...base, order_id: 'order-77' }, key)).status, 201);
  });

  test('a key over 255 characters is refused; 255 is fine; without a key each call creates a payment', async () => {
    assertError(
      await m.test.post('/payments', base, { 'idempotency-key': 'k'.repeat(256) }),
      400,
      'invalid_request',
      'Idempotency-Key',
    );
    assert.equal((await m.test.post('/payments', base, { 'idempotency-key': 'k'.repeat(255) })).status, 201);
    const a = await m.test.post('/payments', { ...base, order_id: 'same' });
    const b = await m.test.post('/payments', { ...base, order_id: 'same' });
    assert.notEqual(a.body.id, b.body.id);
  });

  test('the answer to a creation is the payment as stored, field for field, with and without a coin', async () => {
    const metadata = { z: 1, a: { nested: [1, 'two', null] }, 'line\nbreak': true, '': 'empty key' };
    for (const extra of [{}, { token: 'base:usdc' }, { chain: 'ethereum', token: 'ethereum:eth' }]) {
      const created = await m.test.post(
        '/payments',
        {
          ...base,
          order_id: 'as-stored',
          description: 'Tea <b>',
          metadata,
          success_url: 'https://shop.example/ok',
          ...extra,
        },
        { 'idempotency-key': `as-stored-${JSON.stringify(extra)}` },
      );
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const read = await m.test.get(`/payments/${created.body.id}`);
      assert.deepEqual(read.body, created.body);
      assert.deepEqual(Object.keys(read.body.metadata), Object.keys(metadata), 'metadata keeps its key order');
      assert.equal(read.body.attempts.length, 'token' in extra ? 1 : 0);
    }
  });

  test('a retry of a created payment with a coin replays even when that coin cannot be priced now', async () => {
    const key = { 'idempotency-key': 'priced-then-stale' };
    const body = { ...base, order_id: 'stale-price', chain: 'ethereum', token: 'ethereum:eth' };
    const first = await m.test.post('/payments', body, key);
    assert.equal(first.status, 201);
    cg.removePrice('ethereum');
    bn.removePrice('ETHUSDT');
    t.clock.advance(10 * MINUTE); // the cached rate is now older than the 5-minute maximum age
    try {
      const again = await m.test.post('/payments', body, key);
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.deepEqual(again.body, first.body);
      assertError(
        await m.test.post('/payments', { ...body, order_id: 'stale-new' }, { 'idempotency-key': 'stale-new' }),
        503,
        'price_unavailable',
      );
    } finally {
      cg.setPrice('ethereum', 2000);
      bn.setPrice('ETHUSDT', 2000);
    }
  });

  test('a creation with a key and a coin is one statement; its replay one more read', async () => {
    const body = { ...base, order_id: 'one-trip', chain: 'base', token: 'base:usdc', metadata: { cart: 7 } };
    // The process holds a block of address indexes after its first coin choice.
    await t.kasse.payments.create(tenant, { ...body, order_id: 'warm' } as never, 'one-trip-warm', OPERATOR);
    let first: Awaited<ReturnType<typeof t.kasse.payments.create>> | undefined;
    const creation = await paymentStatements(t.kasse, async () => {
      first = await t.kasse.payments.create(tenant, body as never, 'one-trip', OPERATOR, 'Shop');
    });
    assert.equal(first!.status, 201);
    assert.deepEqual(creation, ['1 row(s)'], 'one statement wrote the payment, its coin choice and its key');
    const replay = await paymentStatements(t.kasse, async () => {
      const again = await t.kasse.payments.create(tenant, body as never, 'one-trip', OPERATOR, 'Shop');
      assert.equal(again.status, 200);
      assert.deepEqual(again.payment, first!.payment);
    });
    // The replay's write is refused by the key's unique index (no result to note), then the stored answer is read.
    assert.deepEqual(replay, ['1 row(s)'], 'the replay reads the stored answer once');
  });

  test('creations arriving together share statements; each answer is its payment as stored, and its key replays it', async () => {
    const metadata = { z: 'last"first', a: [1, { b: null }], 'comma,key': '{}' };
    const bodies = Array.from({ length: 30 }, (_, i) => ({
      ...base,
      order_id: `together-${i}`,
      metadata,
      ...(i % 3 === 0 ? { token: 'base:usdc' } : {}),
    }));
    const actor = { type: 'key' as const, id: null, label: 'test key', ip: '127.0.0.1' };
    let created: Array<{ status: number; body: any }> = [];
    const statements = await paymentStatements(t.kasse, async () => {
      const results = await Promise.all(
        bodies.map((b, i) => t.kasse.payments.create(tenant, b as never, `together-${i}`, actor, 'Shop')),
      );
      created = results.map((r) => ({ status: r.status, body: JSON.parse(JSON.stringify(r.payment)) }));
    });
    assert.deepEqual(
      created.map((r) => r.status),
      bodies.map(() => 201),
    );
    assert.ok(statements.length < 30, `${statements.length} statements for 30 creations`);
    for (const [i, c] of created.entries()) {
      const read = await m.test.get(`/payments/${c.body.id}`);
      assert.deepEqual(read.body, c.body);
      assert.deepEqual(Object.keys(read.body.metadata), Object.keys(metadata));
      assert.equal(read.body.attempts.length, i % 3 === 0 ? 1 : 0);
      const again = await m.test.post('/payments', bodies[i], { 'idempotency-key': `together-${i}` });
      assert.equal(again.status, 200);
      assert.equal(
        JSON.stringify(again.body),
        JSON.stringify(c.body),
        'the replay is the first answer, key order included',
      );
    }
    const audited = await t.kasse.db
      .selectFrom('audit_log')
      .select('target_id')
      .where('action', '=', 'payment.create')
      .where(
        'target_id',
        'in',
        created.map((c) => c.body.id),
      )
      .execute();
    assert.equal(audited.length, 30, 'each creation has its audit row');
  });

  test('a used key among creations arriving together fails only its own: replayed or refused, the others created', async () => {
    const create = (order: string, key: string) =>
      t.kasse.payments.create(tenant, { ...base, order_id: order } as never, key, OPERATOR, 'Shop');
    const first = await create('crowd-used', 'crowd-used');
    assert.equal(first.status, 201);
    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 12 }, (_, i) => create(`crowd-${i}`, `crowd-${i}`)),
      create('crowd-used', 'crowd-used'),
      create('crowd-other', 'crowd-used'),
      create('crowd-twice', 'crowd-twice'),
      create('crowd-twice', 'crowd-twice'),
    ]);
    const fresh = outcomes.slice(0, 12);
    const [replay, conflict, twiceA, twiceB] = outcomes.slice(12);
    assert.deepEqual(
      fresh.map((o) => (o.status === 'fulfilled' ? o.value.status : o.reason)),
      fresh.map(() => 201),
    );
    assert.equal(replay!.status === 'fulfilled' && replay!.value.status, 200);
    assert.deepEqual(replay!.status === 'fulfilled' && replay!.value.payment, first.payment);
    assert.equal(
      conflict!.status === 'rejected' && (conflict!.reason as { code?: string }).code,
      'idempotency_conflict',
    );
    // Two requests with one new key in the same batch: one creates, the other replays it.
    const twice = [twiceA!, twiceB!].map((o) => (o.status === 'fulfilled' ? o.value : null));
    assert.deepEqual(twice.map((x) => x?.status).sort(), [200, 201]);
    assert.equal(twice[0]!.payment.id, twice[1]!.payment.id);
    for (let i = 0; i < 12; i++) assert.equal((await m.test.get(`/payments?order_id=crowd-${i}`)).body.data.length, 1);
    for (const [order, n] of [
      ['crowd-used', 1],
      ['crowd-other', 0],
      ['crowd-twice', 1],
    ] as const) {
      assert.equal((await m.test.get(`/payments?order_id=${order}`)).body.data.length, n, order);
    }
  });

  test('concurrent requests with one key create exactly one payment', async () => {
    const body = { ...base, order_id: 'concurrent-1', token: 'base:usdc' };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => m.test.post('/payments', body, { 'idempotency-key': 'race-1' })),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 200, 200, 200, 201]);
    assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
    const list = await m.test.get('/payments?order_id=concurrent-1');
    assert.equal(list.body.data.length, 1);
    const attempts = await t.kasse.db
      .selectFrom('attempts')
      .select('id')
      .where('payment_id', '=', results[0]!.body.id)
      .execute();
    assert.equal(attempts.length, 1);
  });
});

describe('reading and listing', () => {
  test('unknown, malformed, other-mode and other-merchant ids', async () => {
    const p = (await m.test.post('/payments', base)).body;
    assertError(await m.test.get(`/payments/pay_${'0'.repeat(36)}`), 404, 'not_found');
    assertError(await m.test.get('/payments/pay_123'), 400, 'invalid_request', 'id');
    assertError(await m.live.get(`/payments/${p.id}`), 404, 'not_found');
    const other = await t.merchant({ name: 'Other shop', rateLimit: 100_000 });
    assertError(await other.test.get(`/payments/${p.id}`), 404, 'not_found');
    assertError(await other.test.post(`/payments/${p.id}/cancel`), 404, 'not_found');
    const live = (await m.live.post('/payments', base)).body;
    assertError(await m.test.get(`/payments/${live.id}`), 404, 'not_found');
    assert.equal((await m.live.get(`/payments/${live.id}`)).status, 200);
  });

  test('newest first with an opaque cursor, default 20 and at most 100 per page', async () => {
    const shop = await t.merchant({ name: 'Lister', rateLimit: 100_000 });
    const ids: string[] = [];
    for (let i = 0; i < 23; i++)
      ids.push((await shop.test.post('/payments', { ...base, order_id: `o-${i % 3}` })).body.id);
    const newest = [...ids].reverse();
    const first = await shop.test.get('/payments');
    assert.equal(first.status, 200);
    assert.deepEqual(Object.keys(first.body), ['data', 'next_cursor']);
    assert.deepEqual(
      first.body.data.map((p: any) => p.id),
      newest.slice(0, 20),
    );
    const second = await shop.test.get(`/payments?cursor=${first.body.next_cursor}`);
    assert.deepEqual(
      second.body.data.map((p: any) => p.id),
      newest.slice(20),
    );
    assert.equal(second.body.next_cursor, null);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await shop.test.get(`/payments?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.data.map((p: any) => p.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, newest);
    assert.equal((await shop.test.get('/payments?limit=100')).body.data.length, 23);
    assertError(await shop.test.get('/payments?limit=101'), 400, 'invalid_request', 'limit');
    assertError(await shop.test.get('/payments?limit=0'), 400, 'invalid_request', 'limit');
    assertError(await shop.test.get('/payments?cursor=bogus'), 400, 'invalid_request', 'cursor');
    assertError(await shop.test.get('/payments?status=lost'), 400, 'invalid_request', 'status');
    assert.equal((await shop.live.get('/payments')).body.data.length, 0);
  });

  test('filters by order_id and status', async () => {
    const shop = await t.merchant({ name: 'Filter', rateLimit: 100_000 });
    const a = (await shop.test.post('/payments', { ...base, order_id: 'A' })).body;
    await shop.test.post('/payments', { ...base, order_id: 'B' });
    const c = (await shop.test.post('/payments', { ...base, order_id: 'A' })).body;
    await shop.test.post(`/payments/${a.id}/cancel`);
    assert.deepEqual(
      (await shop.test.get('/payments?order_id=A')).body.data.map((p: any) => p.id),
      [c.id, a.id],
    );
    assert.deepEqual(
      (await shop.test.get('/payments?status=cancelled')).body.data.map((p: any) => p.id),
      [a.id],
    );
    assert.deepEqual(
      (await shop.test.get('/payments?order_id=A&status=waiting')).body.data.map((p: any) => p.id),
      [c.id],
    );
    assert.deepEqual((await shop.test.get('/payments?order_id=none')).body.data, []);
  });
});

describe('coin choices', () => {
  test('up to 3 per payment; the 4th is 409 too_many_attempts', async () => {
    const p = (await m.test.post('/payments', base)).body;
    for (const [i, token] of ['base:usdc', 'ethereum:eth', 'solana:usdc'].entries()) {
      const res = await m.test.post(`/payments/${p.id}/attempts`, { chain: token.split(':')[0], token });
      assert.equal(res.status, 201);
      assert.equal(res.body.attempts.length, i + 1);
      assert.equal(res.body.attempts[i].token, token);
    }
    const addresses = new Set((await m.test.get(`/payments/${p.id}`)).body.attempts.map((a: any) => a.address));
    assert.equal(addresses.size, 3);
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:eth' }),
      409,
      'too_many_attempts',
    );
  });

  test('request errors: both fields required, unknown coin, mismatched chain, unknown payment', async () => {
    const p = (await m.test.post('/payments', base)).body;
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { token: 'base:usdc' }),
      400,
      'invalid_request',
      'chain',
    );
    assertError(await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base' }), 400, 'invalid_request', 'token');
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:usdc', x: 1 }),
      400,
      'invalid_request',
      'x',
    );
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:doge' }),
      400,
      'invalid_request',
      'token',
    );
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'ethereum:usdc' }),
      400,
      'invalid_request',
      'token',
    );
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'mars', token: 'mars:usdc' }),
      400,
      'invalid_request',
      'chain',
    );
    assertError(
      await m.test.post(`/payments/pay_${'1'.repeat(36)}/attempts`, { chain: 'base', token: 'base:usdc' }),
      404,
      'not_found',
    );
    assert.equal((await m.test.get(`/payments/${p.id}`)).body.attempts.length, 0);
  });

  test('a final payment takes no new coin choice (422 invalid_state)', async () => {
    const p = (await m.test.post('/payments', base)).body;
    await m.test.post(`/payments/${p.id}/cancel`);
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:usdc' }),
      422,
      'invalid_state',
    );
  });

  test('a paused network answers 503 chain_paused, on creation and on coin choice', async () => {
    const before = await count();
    assertError(await m.test.post('/payments', { ...base, token: 'polygon:usdc' }), 503, 'chain_paused');
    assert.equal(await count(), before);
    const p = (await m.test.post('/payments', base)).body;
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'polygon', token: 'polygon:pol' }),
      503,
      'chain_paused',
    );
    // Live networks without a chain adapter are not available either: nobody could receive the money.
    assertError(await m.live.post('/payments', { ...base, token: 'base:usdc' }), 503, 'chain_paused');
  });

  test('below the coin minimum answers 422 amount_too_small', async () => {
    const before = await count();
    assertError(
      await m.test.post('/payments', { ...base, price_amount: 99, token: 'base:usdc' }),
      422,
      'amount_too_small',
    );
    assert.equal(await count(), before);
    assert.equal((await m.test.post('/payments', { ...base, price_amount: 100, token: 'base:usdc' })).status, 201);
    const p = (await m.test.post('/payments', { ...base, price_amount: 50 })).body;
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'ethereum', token: 'ethereum:eth' }),
      422,
      'amount_too_small',
    );
  });

  test('no fresh price from either provider answers 503 price_unavailable; stablecoins need none', async () => {
    t.clock.advance(10 * MINUTE); // every cached rate is now older than the 5-minute maximum age
    cg.failNext(2, 500);
    bn.failNext(2, 503);
    const before = await count();
    assertError(await m.test.post('/payments', { ...base, token: 'ethereum:eth' }), 503, 'price_unavailable');
    assert.equal(await count(), before);
    assertError(await m.test.get('/estimate?price_amount=1000&token=ethereum:eth'), 503, 'price_unavailable');
    assert.equal((await m.test.post('/payments', { ...base, token: 'ethereum:usdt' })).status, 201);
    // Failover: CoinGecko down, Binance answers.
    cg.failNext(1, 429);
    const res = await m.test.post('/payments', { ...base, token: 'arbitrum:eth' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.attempts[0].rate_source, 'binance');
  });
});

describe('currencies and estimates', () => {
  test('GET /currencies lists every coin of the mode with its rate and paused flag', async () => {
    const res = await m.test.get('/currencies');
    assert.equal(res.status, 200);
    const byToken = new Map(res.body.data.map((c: any) => [c.token, c]));
    const usdc: any = byToken.get('base:usdc');
    assert.deepEqual(usdc, {
      token: 'base:usdc',
      chain: 'base',
      symbol: 'USDC',
      name: 'USD Coin',
      decimals: 6,
      min_amount: '1000000',
      min_amount_display: '1',
      rate: '1',
      rate_source: 'peg',
      paused: false,
      gasless: true,
      holdable: true,
      network_status: 'simulated',
      network_status_reason:
        'no forwarder factory configured (deploy one with `kasse evm deploy-factory` and set "evm.forwarder_factory" in the networks file)',
    });
    assert.equal((byToken.get('polygon:usdc') as any).paused, true);
    assert.equal((byToken.get('polygon:usdc') as any).network_status, 'paused');
    assert.equal((byToken.get('ethereum:eth') as any).rate, '2000');
    for (const token of [
      'ethereum:eth',
      'ethereum:usdc',
      'ethereum:usdt',
      'base:eth',
      'polygon:pol',
      'arbitrum:usdt',
      'solana:sol',
      'solana:usdc',
    ]) {
      assert.ok(byToken.has(token), token);
    }
    const live = await m.live.get('/currencies');
    assert.ok(
      live.body.data.every((c: any) => c.paused),
      'no live adapter is registered in this test',
    );
  });

  test('GET /estimate previews the amount with the same errors as a coin choice', async () => {
    const res = await m.test.get('/estimate?price_amount=1234&price_currency=USD&token=base:usdc');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      token: 'base:usdc',
      price_amount: 1234,
      price_currency: 'USD',
      pay_amount: '12340000',
      pay_amount_display: '12.34',
      rate: '1',
      rate_source: 'peg',
      expires_at: new Date(t.clock.now().getTime() + 10 * MINUTE).toISOString(),
    });
    assert.equal((await m.test.get('/estimate?price_amount=1234&token=base:usdc')).status, 200);
    assertError(await m.test.get('/estimate?price_amount=1234&token=base:doge'), 400, 'invalid_request', 'token');
    assertError(await m.test.get('/estimate?token=base:usdc'), 400, 'invalid_request', 'price_amount');
    assertError(
      await m.test.get('/estimate?price_amount=1234&price_currency=EUR&token=base:usdc'),
      400,
      'invalid_request',
      'price_currency',
    );
    assertError(await m.test.get('/estimate?price_amount=1234&token=polygon:usdc'), 503, 'chain_paused');
    assertError(await m.test.get('/estimate?price_amount=50&token=base:usdc'), 422, 'amount_too_small');
  });
});

describe('cancel, accept and refund', () => {
  test('cancel: only waiting payments before money; sends payment.cancelled', async () => {
    const p = (await m.test.post('/payments', { ...base, token: 'base:usdc' })).body;
    const res = await m.test.post(`/payments/${p.id}/cancel`);
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'cancelled');
    assert.equal(res.body.attempts[0].status, 'expired');
    assert.deepEqual(await eventTypes(p.id), ['payment.cancelled']);
    assertError(await m.test.post(`/payments/${p.id}/cancel`), 422, 'invalid_state');
    const paid = (await m.test.post('/payments', base)).body;
    await m.test.post(`/test/payments/${paid.id}/simulate`, { outcome: 'paid' });
    assertError(await m.test.post(`/payments/${paid.id}/cancel`), 422, 'invalid_state');
    const wrong = (await m.test.post('/payments', base)).body;
    await m.test.post(`/test/payments/${wrong.id}/simulate`, { outcome: 'wrong_asset' });
    assertError(await m.test.post(`/payments/${wrong.id}/cancel`), 422, 'invalid_state');
  });

  test('accept: underpaid or late only', async () => {
    const p = (await m.test.post('/payments', base)).body;
    assertError(await m.test.post(`/payments/${p.id}/accept`), 422, 'invalid_state');
    await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'underpaid' });
    const res = await m.test.post(`/payments/${p.id}/accept`);
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'paid');
    assert.equal(res.body.paid_attempt_id, res.body.attempts[0].id);
    assert.deepEqual(await eventTypes(p.id), ['payment.underpaid', 'payment.paid']);
    assertError(await m.test.post(`/payments/${p.id}/accept`), 422, 'invalid_state');
  });

  test('refund: 202 pending, sent on the next worker pass, payment refunded and the credit reversed', async () => {
    const shop = await t.merchant({ name: 'Refunds', rateLimit: 100_000 });
    const p = (await shop.test.post('/payments', { ...base, price_amount: 5000 })).body;
    assertError(
      await shop.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' }),
      422,
      'invalid_state',
    );
    await shop.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    assert.equal((await shop.test.get('/balance')).body.available_usd_cents, 4950);
    assertError(
      await shop.test.post(`/payments/${p.id}/refund`, { destination: 'not-an-address' }),
      400,
      'invalid_request',
      'destination',
    );
    assertError(
      await shop.test.post(`/payments/${p.id}/refund`, {
        destination: '0x000000000000000000000000000000000000dead',
        x: 1,
      }),
      400,
      'invalid_request',
      'x',
    );
    assertError(await shop.test.post(`/payments/${p.id}/refund`, {}), 400, 'invalid_request', 'destination');
    const res = await shop.test.post(`/payments/${p.id}/refund`, {
      destination: '0x000000000000000000000000000000000000dEaD',
      note: 'out of stock',
    });
    assert.equal(res.status, 202);
    assert.deepEqual(Object.keys(res.body), [
      'id',
      'payment_id',
      'status',
      'destination',
      'token',
      'amount',
      'amount_display',
      'tx_hash',
      'note',
      'error',
      'created_at',
    ]);
    assert.match(res.body.id, /^rfd_[0-9A-Z]{26}$/);
    assert.equal(res.body.payment_id, p.id);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.body.token, 'base:usdc');
    assert.equal(res.body.amount, '50000000');
    assert.equal(res.body.amount_display, '50');
    assert.equal(res.body.tx_hash, null);
    assert.equal(res.body.note, 'out of stock');
    assertError(
      await shop.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' }),
      422,
      'invalid_state',
    );
    assert.equal((await shop.test.get(`/payments/${p.id}`)).body.status, 'paid');

    assert.equal(await t.kasse.refunds.settleSimulated(), 1);
    const after = (await shop.test.get(`/payments/${p.id}`)).body;
    assert.equal(after.status, 'refunded');
    assert.equal(after.attempts[0].status, 'refunded');
    assert.deepEqual(await eventTypes(p.id), ['payment.paid', 'payment.refunded']);
    const refund = await t.kasse.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    assert.equal(refund.status, 'sent');
    assert.match(refund.tx_hash!, /^0xsim[0-9a-f]{61}$/);
    const balance = (await shop.test.get('/balance')).body;
    assert.equal(balance.available_usd_cents, 0);
    assert.deepEqual(balance.custody, []);
    assertError(
      await shop.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' }),
      422,
      'invalid_state',
    );
    assert.equal(await t.kasse.refunds.settleSimulated(), 0);
  });

  test('GET /balance reports credits less fees and coins in custody, per mode', async () => {
    const shop = await t.merchant({ name: 'Balance', rateLimit: 100_000 });
    const empty = await shop.test.get('/balance');
    assert.deepEqual(empty.body, { available_usd_cents: 0, pending_usd_cents: 0, custody: [] });
    const p = (await shop.test.post('/payments', { ...base, price_amount: 1234 })).body;
    await shop.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    const res = await shop.test.get('/balance');
    assert.deepEqual(res.body, {
      available_usd_cents: 1222, // 1234 less the 1 % fee (12 cents, half up)
      pending_usd_cents: 0,
      custody: [{ token: 'base:usdc', chain: 'base', symbol: 'USDC', amount: '12340000', amount_display: '12.34' }],
    });
    assert.equal((await shop.live.get('/balance')).body.available_usd_cents, 0);
  });
});

describe('test and live stay apart', () => {
  test('the simulator does not exist on the live API', async () => {
    const p = (await m.live.post('/payments', base)).body;
    assertError(await m.live.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' }), 404, 'not_found');
    const testPay = (await m.test.post('/payments', base)).body;
    assertError(await m.live.post(`/test/payments/${testPay.id}/simulate`, { outcome: 'paid' }), 404, 'not_found');
    assertError(await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' }), 404, 'not_found');
  });

  test('the OpenAPI document describes every payments operation with its components', async () => {
    const doc = (await m.test.get('/openapi.json')).body;
    for (const path of [
      '/payments',
      '/payments/{id}',
      '/payments/{id}/attempts',
      '/payments/{id}/cancel',
      '/payments/{id}/accept',
      '/payments/{id}/refund',
      '/currencies',
      '/estimate',
      '/balance',
      '/test/payments/{id}/simulate',
    ]) {
      assert.ok(doc.paths[path], path);
      for (const op of Object.values(doc.paths[path]) as any[])
        assert.ok(op.summary && op.description, `${path} documented`);
    }
    for (const name of ['Payment', 'Attempt', 'Deposit', 'Refund', 'Currency', 'Estimate', 'Balance'])
      assert.ok(doc.components.schemas[name], name);
    const live = (await m.live.get('/openapi.json')).body;
    assert.equal(live.paths['/test/payments/{id}/simulate'], undefined);
    assert.ok(live.paths['/payments']);
  });
});

test('every month of every merchant’s statement reconciles with its payments and refunds', async () => {
  assert.ok((await assertEveryMerchantReconciles(t.kasse)) > 0);
});
