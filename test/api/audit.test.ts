/**
 * The audit log of changes made by API key: who (the key), what, which object, when, from which address — written
 * with the change itself (a payment's creation and its audit row are one statement), never for a change that did
 * not happen, and never visible to another merchant.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { OPERATOR, payerActor, systemActor } from '../../src/modules/audit/index.ts';
import { paymentStatements, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';

let t: TestKasse;
let m: TestMerchant;
let other: TestMerchant;

before(async () => {
  t = await startTestKasse();
  m = await t.merchant();
  other = await t.merchant({ name: 'Other' });
});
after(async () => t?.close());

const entries = async (merchantId: string, action?: string) =>
  (await t.kasse.audit.list(merchantId, action ? { action } : {})).data;

test('changes by key are audited with the key, the object and the address; reads and failures are not', async () => {
  const keyId = (await t.kasse.merchants.listKeys(m.id)).find((k) => k.mode === 'test')!.id;
  const p = (await m.test.post('/payments', { price_amount: 1200, price_currency: 'USD', order_id: 'A-1' })).body;
  const q = (
    await m.test.post(
      '/payments',
      { price_amount: 1300, price_currency: 'USD', order_id: 'A-2', chain: 'base', token: 'base:usdc' },
      { 'Idempotency-Key': 'k-1' },
    )
  ).body;
  // A replay creates nothing and writes nothing.
  assert.equal(
    (
      await m.test.post(
        '/payments',
        { price_amount: 1300, price_currency: 'USD', order_id: 'A-2', chain: 'base', token: 'base:usdc' },
        { 'Idempotency-Key': 'k-1' },
      )
    ).status,
    200,
  );
  await m.test.get(`/payments/${p.id}`);
  assert.equal(
    (await m.test.post('/payments', { price_amount: 0, price_currency: 'USD', order_id: 'bad' })).status,
    400,
  );
  assert.equal((await m.test.post(`/payments/${q.id}/accept`)).status, 422);
  await m.test.post(`/payments/${p.id}/cancel`);
  const l = (await m.test.post('/links', { kind: 'fixed', title: 'Mug', amount_usd_cents: 900 })).body;
  await m.test.patch(`/links/${l.id}`, { active: false });
  await m.test.post(`/test/payments/${q.id}/simulate`, { outcome: 'paid' });

  const log = (await entries(m.id)).reverse();
  assert.deepEqual(
    log.map((e) => [e.action, e.target?.id]),
    [
      ['payment.create', p.id],
      ['payment.create', q.id],
      ['payment.cancel', p.id],
      ['link.create', l.id],
      ['link.update', l.id],
      ['payment.simulate', q.id],
    ],
  );
  for (const e of log) {
    assert.deepEqual(e.actor, { type: 'key', id: keyId, label: 'test API key', ip: '127.0.0.1' });
    assert.equal(e.mode, 'test');
  }
  assert.deepEqual(log[0]!.details, { order_id: 'A-1', price_amount: 1200 });
  assert.deepEqual(log[2]!.details, { from: 'waiting', to: 'cancelled' });
  assert.deepEqual(await entries(other.id), []);
});

test('a payment and its audit row are written by one statement: both or neither', async () => {
  const before = (await entries(m.id, 'payment.create')).length;
  const actor = { type: 'key' as const, id: 'key_TEST', label: null, ip: '10.0.0.1' };
  const statements = await paymentStatements(t.kasse, async () => {
    await t.kasse.payments.create(
      { mode: 'test', merchantId: m.id },
      { price_amount: 500, price_currency: 'USD', order_id: 'one-statement' },
      undefined,
      actor,
    );
  });
  assert.equal(statements.length, 1, `statements: ${statements.join(', ')}`);
  const after = await entries(m.id, 'payment.create');
  assert.equal(after.length, before + 1);
  assert.equal(after[0]!.actor.ip, '10.0.0.1');
  // The audit row cannot outlive a change that failed: a bad insert writes neither.
  await assert.rejects(
    t.kasse.payments.create(
      { mode: 'test', merchantId: m.id },
      { price_amount: 500, price_currency: 'USD', order_id: 'x\u0000y' },
      undefined,
      actor,
    ),
  );
  assert.equal((await entries(m.id, 'payment.create')).length, before + 1);
});

test("the operator's changes are audited as the operator; Kasse's own and a payer's are not", async () => {
  const op = await t.merchant({ name: 'Operated' });
  const before = await t.kasse.merchants.get(op.id);
  await t.kasse.merchants.update(op.id, { rateLimitPerMinute: 4321 }, OPERATOR);
  await t.kasse.merchants.update(op.id, { rateLimitPerMinute: 4321 }, OPERATOR);
  const rolled = await t.kasse.merchants.rollKey({ mode: 'live', merchantId: op.id }, OPERATOR);
  await t.kasse.merchants.revokeAnyKey(rolled.key, OPERATOR);
  const tenant = { mode: 'test' as const, merchantId: op.id };
  await t.kasse.links.create(tenant, { kind: 'pos', title: 'Till' }, systemActor('probe'));
  await t.kasse.links.create(tenant, { kind: 'pos', title: 'Till 2' }, payerActor('10.0.0.2'));
  assert.equal((await t.kasse.links.list(tenant)).data.length, 2, 'both links were created');

  const log = (await entries(op.id)).reverse();
  assert.deepEqual(
    log.map((e) => [e.action, e.mode, e.target?.id ?? null, e.details]),
    [
      ['settings.update', null, null, { rate_limit_per_minute: { from: before.rateLimitPerMinute, to: 4321 } }],
      ['key.roll', 'live', rolled.key_id, null],
      ['key.revoke', 'live', rolled.key_id, null],
    ],
    'one row per change that changed something; none for the system or a payer',
  );
  for (const e of log) assert.deepEqual(e.actor, { type: 'operator', id: null, label: 'kasse CLI', ip: null });
});
