/**
 * The merchant's brand colour and underpayment tolerance on the API: PATCH /account sets them (a colour text cannot
 * be read on is refused with the nearest one that passes named, and changes nothing), GET /account echoes them, the
 * audit log records each change; and the simulator pays a short payment at the tolerance's bound, not one unit past.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { brandContrast, nearestPassing } from '../../src/modules/merchants/branding.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { ok, refused } from '../harness/expect.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

let t: TestKasse;
let m: TestMerchant;
let r: WebhookReceiver;

before(async () => {
  t = await startTestKasse();
  r = await startWebhookReceiver({ now: () => t.clock.now() });
  m = await t.merchant({ webhookUrl: r.url, rateLimit: 100_000 });
  r.setSecret(m.webhookSecret);
});
after(async () => {
  await t.close();
  await r.close();
});

const audit = async (action: string) => (await t.kasse.audit.list(m.id, { action })).data;

describe('brand colour on PATCH /account', () => {
  test('by default there is no brand and no tolerance', async () => {
    const a = await ok(m.test.get('/account'));
    assert.deepEqual(a.branding, { color: null, logo_url: null });
    assert.equal(a.underpayment_tolerance_bps, 0);
  });

  test('a dark enough colour is stored in lower case, echoed by both modes, and audited', async () => {
    const a = await ok(m.test.patch('/account', { branding: { color: '#0B5D3B' } }));
    assert.deepEqual(a.branding, { color: '#0b5d3b', logo_url: null });
    assert.equal((await ok(m.live.get('/account'))).branding.color, '#0b5d3b');
    const [entry] = await audit('settings.branding');
    assert.deepEqual(entry!.details, { color: { from: null, to: '#0b5d3b' } });
  });

  test('a colour white text cannot be read on is refused with the nearest that passes, and nothing changes', async () => {
    const res = await m.test.patch('/account', { branding: { color: '#FFD700' }, underpayment_tolerance_bps: 50 });
    await refused(res, 400, 'invalid_request', 'branding.color');
    const suggested = /nearest colour that passes is (#[0-9a-f]{6})/.exec(res.body.error.message)?.[1];
    assert.ok(suggested, res.body.error.message);
    assert.equal(suggested, nearestPassing('#ffd700'));
    assert.ok(brandContrast(suggested) >= 4.5);
    const a = await ok(m.test.get('/account'));
    assert.equal(a.branding.color, '#0b5d3b', 'the colour is unchanged');
    assert.equal(a.underpayment_tolerance_bps, 0, 'nor the tolerance sent with it');
    // Nor is the colour kept when another field of the request is refused.
    await refused(
      m.test.patch('/account', { branding: { color: '#000000' }, tax_profile: { seller_name: 'Corner Café' } }),
      400,
      'invalid_request',
      'tax_profile.tax_id',
    );
    assert.equal((await ok(m.test.get('/account'))).branding.color, '#0b5d3b');
    // The suggestion is accepted as it is.
    assert.equal((await ok(m.test.patch('/account', { branding: { color: suggested } }))).branding.color, suggested);
  });

  test('malformed colours and tolerances are refused by the schema', async () => {
    await refused(m.test.patch('/account', { branding: { color: 'red' } }), 400, 'invalid_request', 'branding.color');
    await refused(
      m.test.patch('/account', { branding: { colour: '#000000' } }),
      400,
      'invalid_request',
      'branding.colour',
    );
    for (const bps of [-1, 501, 1.5, '10'])
      await refused(
        m.test.patch('/account', { underpayment_tolerance_bps: bps }),
        400,
        'invalid_request',
        'underpayment_tolerance_bps',
      );
    assert.equal((await ok(m.test.get('/account'))).underpayment_tolerance_bps, 0);
  });

  test('color null clears the colour; branding null clears colour and logo', async () => {
    assert.equal((await ok(m.test.patch('/account', { branding: { color: null } }))).branding.color, null);
    await ok(m.test.patch('/account', { branding: { color: '#123456' } }));
    assert.deepEqual((await ok(m.test.patch('/account', { branding: null }))).branding, {
      color: null,
      logo_url: null,
    });
  });
});

describe('underpayment tolerance in the simulator', () => {
  const create = async () =>
    ok(m.test.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: `tol-${Date.now()}` }), 201);
  const simulate = (id: string, outcome: string, amount: bigint) =>
    m.test.post(`/test/payments/${id}/simulate`, { outcome, amount: amount.toString() });
  const available = async () => (await ok(m.test.get('/balance'))).available_usd_cents as number;

  test('tolerance is set and echoed, and audited', async () => {
    const a = await ok(m.test.patch('/account', { underpayment_tolerance_bps: 100 }));
    assert.equal(a.underpayment_tolerance_bps, 100);
    const [entry] = await audit('settings.tolerance');
    assert.deepEqual(entry!.details, { underpayment_tolerance_bps: { from: 0, to: 100 } });
  });

  test('short by exactly floor(pay × bps / 10000): paid, within tolerance, credited with what arrived', async () => {
    const before = await available();
    const p = await create();
    // 25.00 USD in base:usdc (6 decimals) is 25 000 000; 100 bps allows 250 000 short.
    const first = await ok(simulate(p.id, 'paid', 1n).then(() => m.test.get(`/payments/${p.id}`)));
    assert.equal(first.status, 'waiting', 'an amount the outcome does not bring changes nothing');
    const pay = BigInt(first.attempts[0].pay_amount);
    assert.equal(pay, 25_000_000n);
    const paid = await ok(simulate(p.id, 'paid', pay - 250_000n));
    assert.equal(paid.status, 'paid');
    assert.equal(paid.underpaid_within_tolerance, true);
    assert.equal(paid.tolerance_shortfall, '250000');
    await t.kasse.webhooks.drain();
    const [event] = await r.next(1);
    assert.equal(event!.type, 'payment.paid');
    assert.equal(event!.data.underpaid_within_tolerance, true);
    assert.equal(event!.data.tolerance_shortfall, '250000');
    // Credited at floor(2500 × 24 750 000 / 25 000 000) = 2475 cents; the 1 % fee on that is 25 (rounded half up).
    assert.equal((await available()) - before, 2450, 'the value received is credited, less the fee on it');
    assert.equal(paid.price_amount, 2500, 'the price stays as it was asked');
    const lines = async (account: string) =>
      (
        await t.kasse.db
          .selectFrom('ledger_entries')
          .innerJoin('ledger_transactions', 'ledger_transactions.id', 'ledger_entries.transaction_id')
          .select('ledger_entries.amount')
          .where('ledger_transactions.payment_id', '=', p.id)
          .where('ledger_entries.account', '=', account)
          .execute()
      ).map((c) => String(c.amount));
    assert.deepEqual(
      await lines(`test:custody:${m.id}`),
      ['24750000'],
      'the coins taken into custody are those that arrived: the ledger shows the shortfall',
    );
    assert.deepEqual(await lines('test:settlement'), ['2475'], 'the settlement is the value received');
    assert.deepEqual(await lines('test:fees'), ['-25']);
  });

  test('one smallest unit more short: underpaid', async () => {
    const p = await create();
    await simulate(p.id, 'paid', 1n);
    const pay = BigInt((await ok(m.test.get(`/payments/${p.id}`))).attempts[0].pay_amount);
    await refused(simulate(p.id, 'paid', pay - 250_001n), 422, 'invalid_state');
    const res = await ok(simulate(p.id, 'underpaid', pay - 250_001n));
    assert.equal(res.status, 'underpaid');
    assert.equal('underpaid_within_tolerance' in res, false, 'an underpaid payment is the spec object');
    assert.equal('tolerance_shortfall' in res, false);
    await t.kasse.webhooks.drain();
    assert.equal((await r.next(1))[0]!.type, 'payment.underpaid');
  });

  test('with tolerance 0 the spec rule holds: one unit short is underpaid', async () => {
    await ok(m.test.patch('/account', { underpayment_tolerance_bps: 0 }));
    const p = await create();
    await simulate(p.id, 'paid', 1n);
    const pay = BigInt((await ok(m.test.get(`/payments/${p.id}`))).attempts[0].pay_amount);
    assert.equal((await ok(simulate(p.id, 'underpaid', pay - 1n))).status, 'underpaid');
    await t.kasse.webhooks.drain();
    assert.equal((await r.next(1))[0]!.type, 'payment.underpaid');
    await assertEveryMerchantReconciles(t.kasse);
  });
});
