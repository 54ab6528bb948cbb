/**
 * Payment links through the API: the PaymentLink object, validation (limits from the spec, unknown properties,
 * cross-field rules, each with its `param`), PATCH, the list (newest first, at most 500), and isolation between
 * modes and merchants.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { liveNetworksFile, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError } from '../harness/expect.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

let t: TestKasse;
let m: TestMerchant;

before(async () => {
  // Live mode with a network that can take payments, so live links create payments.
  t = await startTestKasse({ env: { KASSE_LIVE_NETWORKS_FILE: liveNetworksFile() } });
  m = await t.merchant({ rateLimit: 100_000 });
});
after(() => t.close());

const FIELDS = [
  'id',
  'slug',
  'url',
  'kind',
  'title',
  'description',
  'amount_usd_cents',
  'min_usd_cents',
  'max_usd_cents',
  'presets_usd_cents',
  'collect_email',
  'success_url',
  'max_uses',
  'uses',
  'expires_at',
  'active',
  'created_at',
];

describe('POST /links', () => {
  test('creates a link with every field present', async () => {
    const res = await m.test.post('/links', { kind: 'fixed', title: 'T-shirt', amount_usd_cents: 2500 });
    assert.equal(res.status, 201);
    const l = res.body;
    assert.deepEqual(Object.keys(l), FIELDS);
    assert.match(l.id, /^lnk_[0-9A-Z]{26}$/);
    assert.match(l.slug, /^[0-9a-z]{12}$/);
    assert.equal(l.url, `${t.urls.checkout}/l/${l.slug}`);
    assert.deepEqual(
      { ...l, id: 0, slug: 0, url: 0 },
      {
        id: 0,
        slug: 0,
        url: 0,
        kind: 'fixed',
        title: 'T-shirt',
        description: null,
        amount_usd_cents: 2500,
        min_usd_cents: null,
        max_usd_cents: null,
        presets_usd_cents: [],
        collect_email: false,
        success_url: null,
        max_uses: null,
        uses: 0,
        expires_at: null,
        active: true,
        created_at: '2026-03-01T12:00:00.000Z',
      },
    );
  });

  test('every kind with its options', async () => {
    const expires = '2026-06-01T00:00:00.000Z';
    const all = [
      {
        kind: 'fixed',
        title: 'A',
        amount_usd_cents: 100,
        collect_email: true,
        success_url: 'https://shop.example/ok',
        max_uses: 3,
        expires_at: expires,
        description: 'd',
      },
      { kind: 'open', title: 'B', min_usd_cents: 500, max_usd_cents: 500 },
      { kind: 'open', title: 'B2' },
      { kind: 'tip', title: 'C', presets_usd_cents: [100, 200, 300, 400, 500, 100000000] },
      { kind: 'pos', title: 'D', max_usd_cents: 10000, success_url: 'http://localhost:3000/done' },
    ];
    for (const body of all) {
      const res = await m.test.post('/links', body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      for (const [k, v] of Object.entries(body)) assert.deepEqual(res.body[k], v, k);
    }
  });

  test('schema limits answer 400 naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string | null]> = [
      [{ title: 'x' }, 'kind'],
      [{ kind: 'fixed', amount_usd_cents: 100 }, 'title'],
      [{ kind: 'coupon', title: 'x' }, 'kind'],
      [{ kind: 'fixed', title: '', amount_usd_cents: 100 }, 'title'],
      [{ kind: 'fixed', title: 'x'.repeat(121), amount_usd_cents: 100 }, 'title'],
      [{ kind: 'fixed', title: 'x', description: 'd'.repeat(501), amount_usd_cents: 100 }, 'description'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 99 }, 'amount_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100000001 }, 'amount_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 10.5 }, 'amount_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: '100' }, 'amount_usd_cents'],
      [{ kind: 'open', title: 'x', min_usd_cents: 50 }, 'min_usd_cents'],
      [{ kind: 'open', title: 'x', max_usd_cents: 100000001 }, 'max_usd_cents'],
      [{ kind: 'tip', title: 'x', presets_usd_cents: [100, 200, 300, 400, 500, 600, 700] }, 'presets_usd_cents'],
      [{ kind: 'tip', title: 'x', presets_usd_cents: [100, 99] }, 'presets_usd_cents.1'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, collect_email: 'yes' }, 'collect_email'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, success_url: 'not a url' }, 'success_url'],
      [
        { kind: 'fixed', title: 'x', amount_usd_cents: 100, success_url: `https://shop.example/${'a'.repeat(2048)}` },
        'success_url',
      ],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, max_uses: 0 }, 'max_uses'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, max_uses: 1000001 }, 'max_uses'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, expires_at: 'tomorrow' }, 'expires_at'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, slug: 'mine' }, 'slug'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, uses: 3 }, 'uses'],
    ];
    for (const [body, param] of cases) assertError(await m.test.post('/links', body), 400, 'invalid_request', param);
  });

  test('cross-field rules answer 400 naming the field', async () => {
    const future = '2026-04-01T00:00:00Z';
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: 'fixed', title: 'x' }, 'amount_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, min_usd_cents: 100 }, 'min_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, max_usd_cents: 100 }, 'max_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, presets_usd_cents: [100] }, 'presets_usd_cents'],
      [{ kind: 'open', title: 'x', amount_usd_cents: 100 }, 'amount_usd_cents'],
      [{ kind: 'open', title: 'x', min_usd_cents: 600, max_usd_cents: 500 }, 'max_usd_cents'],
      [{ kind: 'open', title: 'x', presets_usd_cents: [100] }, 'presets_usd_cents'],
      [{ kind: 'tip', title: 'x' }, 'presets_usd_cents'],
      [{ kind: 'tip', title: 'x', presets_usd_cents: [] }, 'presets_usd_cents'],
      [{ kind: 'tip', title: 'x', presets_usd_cents: [200, 200] }, 'presets_usd_cents'],
      [{ kind: 'tip', title: 'x', presets_usd_cents: [200, 900], max_usd_cents: 500 }, 'presets_usd_cents.1'],
      [{ kind: 'pos', title: 'x', amount_usd_cents: 100 }, 'amount_usd_cents'],
      [{ kind: 'pos', title: 'x', collect_email: true }, 'collect_email'],
      [{ kind: 'pos', title: 'x', presets_usd_cents: [100] }, 'presets_usd_cents'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, expires_at: '2026-03-01T11:59:59Z' }, 'expires_at'],
      [{ kind: 'fixed', title: 'x', amount_usd_cents: 100, success_url: 'ftp://shop.example' }, 'success_url'],
    ];
    for (const [body, param] of cases) assertError(await m.test.post('/links', body), 400, 'invalid_request', param);
    assert.equal(
      (await m.test.post('/links', { kind: 'fixed', title: 'x', amount_usd_cents: 100, expires_at: future })).status,
      201,
    );
    // The live API takes https only.
    assertError(
      await m.live.post('/links', {
        kind: 'fixed',
        title: 'x',
        amount_usd_cents: 100,
        success_url: 'http://shop.example/ok',
      }),
      400,
      'invalid_request',
      'success_url',
    );
    assert.equal(
      (
        await m.live.post('/links', {
          kind: 'fixed',
          title: 'x',
          amount_usd_cents: 100,
          success_url: 'https://shop.example/ok',
        })
      ).status,
      201,
    );
  });
});

describe('PATCH /links/{id}', () => {
  test('changes the allowed fields and clears nullable ones', async () => {
    const l = (
      await m.test.post('/links', {
        kind: 'open',
        title: 'Old',
        description: 'desc',
        success_url: 'https://a.example',
        max_uses: 5,
        expires_at: '2026-05-01T00:00:00Z',
      })
    ).body;
    let res = await m.test.patch(`/links/${l.id}`, { title: 'New', active: false });
    assert.equal(res.status, 200);
    assert.equal(res.body.title, 'New');
    assert.equal(res.body.active, false);
    assert.equal(res.body.description, 'desc');
    res = await m.test.patch(`/links/${l.id}`, {
      description: null,
      success_url: null,
      max_uses: null,
      expires_at: null,
      active: true,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      [res.body.description, res.body.success_url, res.body.max_uses, res.body.expires_at, res.body.active],
      [null, null, null, null, true],
    );
    res = await m.test.patch(`/links/${l.id}`, {
      max_uses: 10,
      expires_at: '2026-02-01T00:00:00Z',
      success_url: 'http://localhost/x',
    });
    assert.equal(res.status, 200, 'a past expiry is allowed: it ends the link now');
    assert.equal(res.body.expires_at, '2026-02-01T00:00:00.000Z');
    res = await m.test.patch(`/links/${l.id}`, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.title, 'New');
    assert.deepEqual((await m.test.get(`/links/${l.id}`)).body, res.body);
  });

  test('validation', async () => {
    const l = (await m.test.post('/links', { kind: 'pos', title: 'Till' })).body;
    const cases: Array<[Record<string, unknown>, string | null]> = [
      [{ kind: 'fixed' }, 'kind'],
      [{ amount_usd_cents: 100 }, 'amount_usd_cents'],
      [{ title: '' }, 'title'],
      [{ title: null }, 'title'],
      [{ active: 'no' }, 'active'],
      [{ description: 'd'.repeat(501) }, 'description'],
      [{ max_uses: 0 }, 'max_uses'],
      [{ expires_at: 'soon' }, 'expires_at'],
      [{ success_url: 'mailto:a@b.c' }, 'success_url'],
    ];
    for (const [body, param] of cases)
      assertError(await m.test.patch(`/links/${l.id}`, body), 400, 'invalid_request', param);
    assertError(
      await m.live.patch(`/links/${(await m.live.post('/links', { kind: 'pos', title: 'L' })).body.id}`, {
        success_url: 'http://x.example',
      }),
      400,
      'invalid_request',
      'success_url',
    );
    assertError(await m.test.patch(`/links/lnk_${'0'.repeat(26)}`, { title: 'x' }), 404, 'not_found', null);
    assertError(await m.test.patch('/links/nope', { title: 'x' }), 400, 'invalid_request', 'id');
  });
});

describe('GET /links and isolation', () => {
  test('newest first, at most 500', async () => {
    const other = await t.merchant({ rateLimit: 100_000 });
    for (let i = 0; i < 502; i++)
      await t.kasse.links.create({ mode: 'test', merchantId: other.id }, { kind: 'pos', title: `Till ${i}` }, OPERATOR);
    const res = await other.test.get('/links');
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body), ['data']);
    assert.equal(res.body.data.length, 500);
    assert.equal(res.body.data[0].title, 'Till 501');
    assert.equal(res.body.data[499].title, 'Till 2');
    const ids = res.body.data.map((l: any) => l.id);
    assert.deepEqual(ids, [...ids].sort().reverse());
    assert.deepEqual((await other.live.get('/links')).body, { data: [] });
  });

  test('another mode or merchant cannot see a link (404)', async () => {
    const l = (await m.test.post('/links', { kind: 'pos', title: 'Mine' })).body;
    assert.equal((await m.test.get(`/links/${l.id}`)).status, 200);
    assertError(await m.live.get(`/links/${l.id}`), 404, 'not_found', null);
    assertError(await m.live.patch(`/links/${l.id}`, { active: false }), 404, 'not_found', null);
    assert.ok(!(await m.live.get('/links')).body.data.some((x: any) => x.id === l.id));
    const stranger = await t.merchant();
    assertError(await stranger.test.get(`/links/${l.id}`), 404, 'not_found', null);
    assertError(await stranger.test.patch(`/links/${l.id}`, { title: 'Hijacked' }), 404, 'not_found', null);
    assert.equal((await m.test.get(`/links/${l.id}`)).body.title, 'Mine');
    assertError(await m.test.get('/links/lnk_short'), 400, 'invalid_request', 'id');
  });

  test('a live link creates live payments', async () => {
    const l = (await m.live.post('/links', { kind: 'fixed', title: 'Live mug', amount_usd_cents: 1200 })).body;
    const res = await fetch(`${t.urls.checkout}/l/${l.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(res.status, 201);
    const { payment_id } = await res.json();
    assert.equal((await m.live.get(`/payments/${payment_id}`)).body.order_id, `${l.slug}-1`);
    assert.equal((await m.test.get(`/payments/${payment_id}`)).status, 404);
    assert.equal((await m.live.get(`/links/${l.id}`)).body.uses, 1);
  });

  test('the OpenAPI document describes the link operations', async () => {
    const doc = (await m.test.get('/openapi.json')).body;
    assert.ok(doc.paths['/links'].post && doc.paths['/links'].get);
    assert.ok(doc.paths['/links/{id}'].get && doc.paths['/links/{id}'].patch);
    assert.ok(doc.paths['/links/{id}'].patch.responses['404']);
    assert.ok(doc.components.schemas.PaymentLink);
  });
});
