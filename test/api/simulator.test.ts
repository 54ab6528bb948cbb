/**
 * The test-mode simulator: every outcome through the public API, checking the payment and attempt it leaves, the
 * ledger, the events recorded (only the outcome's own), and that a real signed webhook is delivered.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import { HOUR, MINUTE } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';
import { KASSE_HOME } from '../../src/config.ts';

let t: TestKasse;
let m: TestMerchant;
let r: WebhookReceiver;

const base = { price_amount: 2500, price_currency: 'USD', order_id: 'sim-1' };

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

async function create(body: Record<string, unknown> = {}) {
  const res = await m.test.post('/payments', { ...base, ...body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function simulate(id: string, outcome: string) {
  return m.test.post(`/test/payments/${id}/simulate`, { outcome });
}

async function eventTypes(paymentId: string): Promise<string[]> {
  const rows = await t.kasse.db
    .selectFrom('events')
    .select('type')
    .where('ordering_key', '=', paymentId)
    .orderBy('seq')
    .execute();
  return rows.map((e) => e.type);
}

async function available(): Promise<number> {
  return (await m.test.get('/balance')).body.available_usd_cents;
}

/** Every ledger transaction sums to zero per currency. */
async function assertLedgerBalanced() {
  const { rows } = await sql<{ n: string }>`
    SELECT count(*) AS n FROM (SELECT transaction_id, currency FROM ledger_entries GROUP BY 1, 2 HAVING sum(amount) <> 0) x`.execute(
    t.kasse.db,
  );
  assert.equal(Number(rows[0]!.n), 0);
}

describe('outcomes', () => {
  test('paid: picks base:usdc when no coin was chosen, pays exactly, credits once, sends only payment.paid', async () => {
    const before = await available();
    const p = await create();
    const res = await simulate(p.id, 'paid');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const paid = res.body;
    assert.equal(paid.status, 'paid');
    assert.equal(paid.paid_at, t.clock.now().toISOString());
    assert.equal(paid.attempts.length, 1);
    const a = paid.attempts[0];
    assert.equal(paid.paid_attempt_id, a.id);
    assert.equal(a.token, 'base:usdc');
    assert.equal(a.status, 'paid');
    assert.equal(a.received_amount, a.pay_amount);
    assert.equal(a.received_amount_display, '25');
    assert.equal(a.overpaid, false);
    assert.equal(a.deposits.length, 1);
    const d = a.deposits[0];
    assert.match(d.tx_hash, /^0xsim[0-9a-f]{61}$/);
    assert.deepEqual(
      { ...d, tx_hash: 'x' },
      {
        tx_hash: 'x',
        token: 'base:usdc',
        amount: '25000000',
        amount_display: '25',
        from: null,
        block_number: null,
        status: 'confirmed',
        confirmations: a.confirmations_required,
        explorer_url: null,
      },
    );
    assert.deepEqual((await m.test.get(`/payments/${p.id}`)).body, paid);
    assert.deepEqual(await eventTypes(p.id), ['payment.paid']);
    assert.equal((await available()) - before, 2475);
    await assertLedgerBalanced();

    assert.equal(await t.kasse.webhooks.drain(), 1);
    assert.equal(r.rejected.length, 0);
    const [event] = await r.next(1);
    assert.equal(event!.type, 'payment.paid');
    assert.deepEqual(event!.data, paid);
  });

  test('a webhook carries the Payment exactly as the API answers it: the same schema, the same serializer, the same bytes', async () => {
    const p = await create({
      order_id: 'sim-bytes',
      metadata: { cart: { items: [1, 'two', null], note: 'é "quoted"' }, n: 1.5 },
    });
    await simulate(p.id, 'paid');
    const api = await (
      await fetch(`${t.urls.test}/payments/${p.id}`, { headers: { authorization: `Bearer ${m.testKey}` } })
    ).text();
    const { rows } = await sql<{
      data: string;
    }>`SELECT data::text AS data FROM events WHERE ordering_key = ${p.id}`.execute(t.kasse.db);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.data, api);
  });

  test('paid on the chosen coin, even after its 10-minute hold ran out on the clock', async () => {
    const p = await create({ token: 'ethereum:usdc' });
    t.clock.advance(11 * MINUTE);
    const res = await simulate(p.id, 'paid');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'paid');
    assert.equal(res.body.attempts[0].token, 'ethereum:usdc');
    assert.equal(res.body.attempts[0].deposits[0].confirmations, 3);
    assert.deepEqual(await eventTypes(p.id), ['payment.paid']);
  });

  test('underpaid: half arrives; no credit; it never expires on its own; accept pays it', async () => {
    const before = await available();
    const p = await create();
    const res = await simulate(p.id, 'underpaid');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'underpaid');
    assert.equal(res.body.paid_at, null);
    const a = res.body.attempts[0];
    assert.equal(a.status, 'underpaid');
    assert.equal(a.received_amount, '12500000');
    assert.deepEqual(await eventTypes(p.id), ['payment.underpaid']);
    assert.equal(await available(), before);
    t.clock.advance(25 * HOUR);
    await t.kasse.payments.runDue();
    assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'underpaid');
    const accepted = await m.test.post(`/payments/${p.id}/accept`);
    assert.equal(accepted.body.status, 'paid');
    assert.deepEqual(await eventTypes(p.id), ['payment.underpaid', 'payment.paid']);
    assert.equal((await available()) - before, 2475, 'the accepted price is credited, less the fee');
    await assertLedgerBalanced();
  });

  test('expired: needs no coin; the payment and its waiting coin choices expire now', async () => {
    const bare = await create();
    const res = await simulate(bare.id, 'expired');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'expired');
    assert.deepEqual(res.body.attempts, []);
    assert.equal(res.body.expires_at, bare.expires_at, 'the lifetime is not rewritten');
    assert.deepEqual(await eventTypes(bare.id), ['payment.expired']);

    const chosen = await create({ token: 'solana:usdc' });
    const exp = await simulate(chosen.id, 'expired');
    assert.equal(exp.body.status, 'expired');
    assert.equal(exp.body.attempts[0].status, 'expired');
    assert.equal(exp.body.attempts[0].expires_at, chosen.attempts[0].expires_at);
    assert.deepEqual(await eventTypes(chosen.id), ['payment.expired']);
  });

  test('late: the full amount after the coin hold; accept pays it', async () => {
    const before = await available();
    const p = await create();
    const res = await simulate(p.id, 'late');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'late');
    assert.equal(res.body.paid_at, null);
    assert.equal(res.body.attempts[0].status, 'late');
    assert.equal(res.body.attempts[0].received_amount, res.body.attempts[0].pay_amount);
    assert.deepEqual(await eventTypes(p.id), ['payment.late']);
    assert.equal(await available(), before);
    assert.equal(res.body.expires_at, p.expires_at, 'the lifetime is not rewritten');
    const accepted = await m.test.post(`/payments/${p.id}/accept`);
    assert.equal(accepted.body.status, 'paid');
    assert.deepEqual(await eventTypes(p.id), ['payment.late', 'payment.paid']);
    assert.equal((await available()) - before, 2475);
  });

  test('late in a coin whose price held is auto-accepted by the next pass, like real late money', async () => {
    const before = await available();
    const p = await create();
    await simulate(p.id, 'late');
    await t.kasse.payments.runDue();
    assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'paid');
    assert.deepEqual(await eventTypes(p.id), ['payment.late', 'payment.paid']);
    assert.equal((await available()) - before, 2475);
  });

  test('late can be refunded instead; a requested refund stops auto-acceptance', async () => {
    const p = await create();
    await simulate(p.id, 'late');
    const refund = await m.test.post(`/payments/${p.id}/refund`, {
      destination: '0x000000000000000000000000000000000000dEaD',
    });
    assert.equal(refund.status, 202);
    await t.kasse.payments.runDue();
    await t.kasse.refunds.settleSimulated();
    assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'refunded');
    assert.deepEqual(await eventTypes(p.id), ['payment.late', 'payment.refunded']);
  });

  test('wrong_asset: another coin of the chain at its minimum; the payment keeps waiting', async () => {
    const p = await create();
    const res = await simulate(p.id, 'wrong_asset');
    assert.equal(res.status, 200);
    assert.equal(res.body.status, 'waiting');
    const a = res.body.attempts[0];
    assert.equal(a.token, 'base:usdc');
    assert.equal(a.wrong_asset, true);
    assert.equal(a.status, 'waiting');
    assert.equal(a.received_amount, '0');
    assert.equal(a.deposits[0].token, 'base:eth');
    assert.equal(a.deposits[0].amount, '400000000000000');
    assert.equal(a.deposits[0].amount_display, '0.0004');
    assert.deepEqual(await eventTypes(p.id), ['payment.wrong_asset']);
    // Still waiting, so the right coin can still be simulated.
    assert.equal((await simulate(p.id, 'paid')).body.status, 'paid');
    assert.deepEqual(await eventTypes(p.id), ['payment.wrong_asset', 'payment.paid']);
  });

  test('a wrong asset alone can be refunded in the coin that arrived', async () => {
    const before = await available();
    const p = await create();
    await simulate(p.id, 'wrong_asset');
    const refund = await m.test.post(`/payments/${p.id}/refund`, {
      destination: '0x000000000000000000000000000000000000dEaD',
    });
    assert.equal(refund.status, 202, JSON.stringify(refund.body));
    assert.equal(refund.body.token, 'base:eth');
    assert.equal(refund.body.amount, '400000000000000');
    assert.equal(refund.body.amount_display, '0.0004');
    await t.kasse.refunds.settleSimulated();
    assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'refunded');
    assert.deepEqual(await eventTypes(p.id), ['payment.wrong_asset', 'payment.refunded']);
    assert.equal(await available(), before, 'nothing was credited, nothing reversed');
  });
});

describe('rules', () => {
  test('only waiting payments; unknown outcomes and ids are refused', async () => {
    const p = await create();
    await simulate(p.id, 'paid');
    const again = await simulate(p.id, 'expired');
    assert.equal(again.status, 422);
    assert.equal(again.body.error.code, 'invalid_state');
    const bad = await simulate(p.id, 'stolen');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'outcome');
    assert.equal((await m.test.post(`/test/payments/${p.id}/simulate`, {})).body.error.param, 'outcome');
    assert.equal((await simulate(`pay_${'A'.repeat(36)}`, 'paid')).status, 404);
    const other = await t.merchant({ name: 'Other' });
    assert.equal((await other.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' })).status, 404);
  });

  test("from names the payer's address as the deposit's sender; one not of the network is refused and changes nothing", async () => {
    const payer = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
    const p = await create();
    for (const [from, outcome] of [
      ['bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq', 'paid'],
      ['0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', 'paid'],
      [payer, 'expired'],
    ] as const) {
      const res = await m.test.post(`/test/payments/${p.id}/simulate`, { outcome, from });
      assert.equal(res.status, 400, `${from} ${outcome}`);
      assert.equal(res.body.error.param, 'from');
    }
    const untouched = (await m.test.get(`/payments/${p.id}`)).body;
    assert.equal(untouched.status, 'waiting');
    assert.deepEqual(untouched.attempts, [], 'no coin was chosen for a refused request');

    const paid = await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid', from: payer });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.attempts[0].deposits[0].from, payer);
    const late = await create();
    await m.test.post(`/test/payments/${late.id}/simulate`, { outcome: 'late', from: payer });
    assert.equal((await m.test.get(`/payments/${late.id}`)).body.attempts[0].deposits[0].from, payer);
  });

  test('the auto-picked coin follows the real rules: below its minimum is 422 amount_too_small', async () => {
    const p = await create({ price_amount: 50 });
    const res = await simulate(p.id, 'paid');
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'amount_too_small');
    assert.equal((await simulate(p.id, 'expired')).body.status, 'expired');
  });

  test('the auto-picked coin is the networks file\'s "default" coin', async () => {
    const doc = JSON.parse(readFileSync(join(KASSE_HOME, 'config', 'networks.test.json'), 'utf8'));
    for (const n of doc.networks) for (const tok of n.tokens) tok.default = n.id === 'solana' && tok.symbol === 'usdc';
    const file = join(mkdtempSync(join(tmpdir(), 'kasse-default-')), 'networks.test.json');
    writeFileSync(file, JSON.stringify(doc));
    const other = await startTestKasse({ env: { KASSE_NETWORKS_FILE: file } });
    try {
      const om = await other.merchant();
      const p = (await om.test.post('/payments', base)).body;
      const res = await om.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'paid');
      assert.equal(res.body.attempts[0].token, 'solana:usdc');
    } finally {
      await other.close();
    }
  });

  test('every ledger transaction balances', assertLedgerBalanced);
});

test('every month of every merchant’s statement reconciles with its payments and refunds', async () => {
  assert.ok((await assertEveryMerchantReconciles(t.kasse)) > 0);
});
