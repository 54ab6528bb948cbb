/**
 * The Medusa payment provider (integrations/medusa, built and loaded as Medusa loads it) method by method against a
 * Kasse started here: test mode, payments finished by the simulator, webhooks delivered by Kasse's worker, signed
 * with the merchant's secret, and handed to the provider as Medusa's webhook route hands them (raw body, headers).
 * Medusa itself runs in medusa.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Kasse } from '../../sdk/src/index.ts';
import { FakeClock, SECOND } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { loadProviderPackage, medusaPackage, requireFromMedusaPackage } from '../harness/medusa.ts';
import { startWebhookReceiver, type ReceivedEvent, type WebhookReceiver } from '../harness/webhook-receiver.ts';

const PAYER = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

let t: TestKasse;
let m: TestMerchant;
let receiver: WebhookReceiver;
let Provider: any;
let provider: any;
const warnings: string[] = [];
const logger = { warn: (msg: string) => warnings.push(msg), info() {}, error() {}, debug() {} };

before(async () => {
  const [pkg] = await Promise.all([
    medusaPackage().then(() => loadProviderPackage()),
    (async () => {
      // The provider checks signatures against the real clock, so Kasse's clock starts at it.
      t = await startTestKasse({ clock: new FakeClock(Date.now()) });
      receiver = await startWebhookReceiver({ now: () => t.clock.now() });
      m = await t.merchant({ webhookUrl: receiver.url, rateLimit: 100_000 });
      receiver.setSecret(m.webhookSecret);
    })(),
  ]);
  Provider = pkg.default.services[0];
  provider = make();
});
after(async () => {
  await t?.close();
  await receiver?.close();
});

function make(options: Record<string, unknown> = {}) {
  return new Provider(
    { logger },
    { apiKey: m.testKey, baseUrl: t.urls.test, webhookSecret: m.webhookSecret, ...options },
  );
}

const session = () => `payses_${randomBytes(8).toString('hex')}`;

/** What Medusa's payment module passes to `initiatePayment` for a new session. */
function initiate(amount: unknown, currency = 'usd', data: Record<string, unknown> = {}, id = session()) {
  return provider.initiatePayment({ amount, currency_code: currency, data, context: { idempotency_key: id } });
}

async function kassePayment(id: string) {
  return (await m.test.get(`/payments/${id}`)).body;
}

async function simulate(id: string, outcome: string, from?: string) {
  const res = await m.test.post(`/test/payments/${id}/simulate`, { outcome, ...(from ? { from } : {}) });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** Kasse's worker delivers what is due; the `n` deliveries of these payments that arrived. */
async function delivered(paymentIds: string[], n: number): Promise<ReceivedEvent[]> {
  await t.kasse.webhooks.drain();
  return eventually(`${n} webhooks of ${paymentIds.join(', ')}`, () => {
    const events = receiver.events.filter((e) => paymentIds.includes(e.data?.id));
    return events.length >= n && events.slice(0, n);
  });
}

function asMedusaReceives(e: ReceivedEvent) {
  return { data: JSON.parse(e.rawBody), rawData: Buffer.from(e.rawBody), headers: e.headers };
}

async function rejects(fn: () => Promise<unknown>, pattern: RegExp) {
  await assert.rejects(fn, (err: Error) => {
    assert.match(err.message, pattern);
    return true;
  });
}

describe('options', () => {
  test('checked when Medusa loads the provider, each problem naming the option', () => {
    const good = { apiKey: 'kasse_test_abc', baseUrl: 'http://127.0.0.1:8081/v1', webhookSecret: 'whsec_abc' };
    const cases: Array<[unknown, RegExp]> = [
      [undefined, /options are missing/],
      [{ ...good, apiKey: undefined }, /option apiKey is missing/],
      [{ ...good, apiKey: 'sk_live_x' }, /option apiKey is not a Kasse API key/],
      [{ ...good, webhookSecret: 'secret' }, /option webhookSecret is not a Kasse webhook secret/],
      [{ ...good, baseUrl: undefined }, /option baseUrl is missing/],
      [{ ...good, baseUrl: 'not a url' }, /option baseUrl is not a URL/],
      [{ ...good, baseUrl: 'http://127.0.0.1:8081' }, /ending in \/v1/],
      [{ ...good, baseUrl: 'ftp://127.0.0.1/v1' }, /http\(s\) URL/],
      [{ ...good, capture: 'sometimes' }, /option capture must be "automatic" or "manual"/],
      [{ ...good, capture: 'MANUAL' }, /option capture must be "automatic" or "manual"/],
      [{ ...good, webhook_secret: 'whsec_abc' }, /unknown option webhook_secret/],
    ];
    for (const [options, message] of cases)
      assert.throws(
        () => Provider.validateOptions(options),
        (err: Error) => /^Kasse payment provider \(@kasse\/medusa\): /.test(err.message) && message.test(err.message),
        JSON.stringify(options),
      );
    Provider.validateOptions(good);
    Provider.validateOptions({ ...good, capture: 'automatic' });
    Provider.validateOptions({ ...good, capture: 'manual' });
    assert.equal(Provider.identifier, 'kasse');
  });
});

describe('initiatePayment', () => {
  test('creates a Kasse payment for the amount in cents, named by the session, with its checkout_url in data', async () => {
    const id = session();
    const out = await initiate('25.5', 'usd', { success_url: 'https://shop.example.com/thanks', cart_id: 'x' }, id);
    assert.match(out.id, /^pay_/);
    assert.equal(out.status, 'pending');
    const p = await kassePayment(out.id);
    assert.equal(p.price_amount, 2550);
    assert.equal(p.price_currency, 'USD');
    assert.equal(p.order_id, id);
    assert.equal(p.success_url, 'https://shop.example.com/thanks');
    assert.deepEqual(p.metadata, { medusa_session_id: id, medusa_amount: '25.5' });
    assert.equal(out.data.id, out.id);
    assert.equal(out.data.checkout_url, p.checkout_url);
    assert.match(out.data.checkout_url, /\/p\/pay_/);
  });

  test('Medusa repeating the call for the same session gets the same payment, not a second one', async () => {
    const id = session();
    const [a, b] = await Promise.all([initiate(10, 'usd', {}, id), initiate(10, 'usd', {}, id)]);
    const c = await initiate(10, 'usd', {}, id);
    assert.equal(a.id, b.id);
    assert.equal(a.id, c.id);
    const all = (await m.test.get(`/payments?order_id=${id}`)).body.data;
    assert.equal(all.length, 1);
  });

  test('amounts become exact cents: a BigNumber, a raw value, a fraction of a cent rounded half up', async () => {
    const { BigNumber } = requireFromMedusaPackage('@medusajs/framework/utils');
    const cases: Array<[unknown, number]> = [
      [new BigNumber('19.99'), 1999],
      [{ value: '10.825', precision: 20 }, 1083],
      ['10.824999', 1082],
      [0.1 + 0.2, 30],
      [1000000, 100_000_000],
    ];
    for (const [amount, cents] of cases) {
      const out = await initiate(amount);
      assert.equal((await kassePayment(out.id)).price_amount, cents, JSON.stringify(amount));
    }
  });

  test('another currency, a zero amount or more than Kasse takes is refused with a clear error and creates nothing', async () => {
    const id = session();
    await rejects(() => initiate(25, 'eur', {}, id), /Kasse prices payments in US dollars, and this one is in EUR/);
    await rejects(() => initiate(0, 'usd', {}, id), /less than a cent/);
    await rejects(() => initiate('1000000.01', 'usd', {}, id), /more than Kasse's largest payment/);
    await rejects(
      () => initiate(5, 'usd', { success_url: 'ftp://x' }, id),
      /Kasse answered: .*\(invalid_request, param success_url/,
    );
    assert.deepEqual((await m.test.get(`/payments?order_id=${id}`)).body.data, []);
  });
});

describe('statuses', () => {
  test("authorizePayment and getPaymentStatus follow Kasse's status, with Kasse's payment in data", async () => {
    const expect: Array<[string | null, string]> = [
      [null, 'pending'],
      ['paid', 'captured'],
      ['underpaid', 'requires_more'],
      ['expired', 'canceled'],
      ['late', 'pending'],
    ];
    for (const [outcome, status] of expect) {
      const out = await initiate(12);
      if (outcome) await simulate(out.id, outcome);
      const kasse = await kassePayment(out.id);
      const authorized = await provider.authorizePayment({ data: out.data, context: {} });
      assert.equal(authorized.status, status, `${outcome} → ${status}`);
      assert.deepEqual(authorized.data, kasse);
      assert.equal((await provider.getPaymentStatus({ data: out.data })).status, status);
      assert.deepEqual((await provider.retrievePayment({ data: out.data })).data, kasse);
    }
  });

  test("a session's data naming another session's payment is refused", async () => {
    const out = await initiate(12);
    await rejects(
      () => provider.authorizePayment({ data: out.data, context: { idempotency_key: session() } }),
      /belongs to payment session payses_/,
    );
    await rejects(() => provider.retrievePayment({ data: { id: 'nothing' } }), /no Kasse payment id/);
    await rejects(
      () => provider.retrievePayment({ data: { id: `pay_${'A'.repeat(36)}` } }),
      /Kasse answered: .*not_found/,
    );
  });
});

describe('capture, cancel, delete, update', () => {
  test('capturePayment confirms a paid payment (automatic capture) and refuses one that is not paid', async () => {
    const out = await initiate(30);
    await rejects(
      () => provider.capturePayment({ data: out.data }),
      /is waiting; only a paid or authorized payment is captured/,
    );
    await simulate(out.id, 'paid');
    const captured = await provider.capturePayment({ data: out.data, context: { idempotency_key: 'capt_1' } });
    assert.equal(captured.data.status, 'paid');
    assert.equal((await provider.capturePayment({ data: out.data })).data.status, 'paid', 'again: nothing changes');
  });

  test('cancelPayment cancels a waiting payment, again changes nothing, and refuses one the payer paid', async () => {
    const out = await initiate(30);
    assert.equal((await provider.cancelPayment({ data: out.data })).data.status, 'cancelled');
    assert.equal((await kassePayment(out.id)).status, 'cancelled');
    assert.equal((await provider.cancelPayment({ data: out.data })).data.status, 'cancelled');
    const paid = await initiate(30);
    await simulate(paid.id, 'paid');
    await rejects(
      () => provider.cancelPayment({ data: paid.data }),
      /is paid: the payer has sent money, so it cannot be cancelled/,
    );
    assert.equal((await kassePayment(paid.id)).status, 'paid');
  });

  test('deletePayment lets a waiting payment go and keeps one holding money', async () => {
    const out = await initiate(30);
    assert.equal((await provider.deletePayment({ data: out.data })).data.status, 'cancelled');
    const expired = await initiate(30);
    await simulate(expired.id, 'expired');
    assert.equal((await provider.deletePayment({ data: expired.data })).data.status, 'expired');
    const underpaid = await initiate(30);
    await simulate(underpaid.id, 'underpaid');
    await rejects(() => provider.deletePayment({ data: underpaid.data }), /is underpaid: the payer has sent money/);
    assert.deepEqual(await provider.deletePayment({ data: {} }), { data: {} }, 'a session that never got a payment');
  });

  test('updatePayment: the same amount keeps the payment; a new amount replaces it once, however often Medusa asks', async () => {
    const id = session();
    const first = await initiate('20', 'usd', {}, id);
    const same = await provider.updatePayment({ amount: 20, currency_code: 'usd', data: first.data, context: {} });
    assert.equal(same.data.id, first.id);
    const update = () =>
      provider.updatePayment({ amount: '22.5', currency_code: 'usd', data: first.data, context: {} });
    const [a, b] = [await update(), await update()];
    assert.equal(a.data.id, b.data.id);
    assert.notEqual(a.data.id, first.id);
    assert.equal(a.status, 'pending');
    assert.equal((await kassePayment(first.id)).status, 'cancelled');
    const replacement = await kassePayment(a.data.id);
    assert.equal(replacement.price_amount, 2250);
    assert.deepEqual(replacement.metadata, { medusa_session_id: id, medusa_amount: '22.5' });
    const live = (await m.test.get(`/payments?order_id=${id}`)).body.data.filter((p: any) => p.status === 'waiting');
    assert.deepEqual(
      live.map((p: any) => p.id),
      [a.data.id],
    );

    await simulate(a.data.id, 'paid');
    await rejects(
      () => provider.updatePayment({ amount: 30, currency_code: 'usd', data: a.data, context: {} }),
      /is paid: the payer has sent money, so its amount cannot change/,
    );
    await rejects(
      () => provider.updatePayment({ amount: 30, currency_code: 'eur', data: a.data, context: {} }),
      /in EUR/,
    );
  });
});

describe('refundPayment', () => {
  test('refunds the whole payment to the address it was paid from; Medusa repeating it sends nothing twice', async () => {
    const out = await initiate('40');
    await simulate(out.id, 'paid', PAYER);
    await rejects(
      () => provider.refundPayment({ amount: 10, data: out.data, context: {} }),
      /Kasse refunds a payment in full: 40\.00 USD for payment pay_\w+, not 10\.00 USD/,
    );
    const refunded = await provider.refundPayment({
      amount: '40',
      data: out.data,
      context: { idempotency_key: 'ref_1' },
    });
    assert.equal(refunded.data.id, out.id);
    const again = await provider.refundPayment({ amount: 40, data: out.data, context: { idempotency_key: 'ref_1' } });
    assert.equal(again.data.id, out.id);
    await t.kasse.refunds.settleSimulated();
    const p = await kassePayment(out.id);
    assert.equal(p.status, 'refunded');
    const sent = await t.kasse.db
      .selectFrom('refunds')
      .select(['destination', 'status', 'note'])
      .where('payment_id', '=', out.id)
      .execute();
    assert.deepEqual(sent, [{ destination: PAYER, status: 'sent', note: 'Medusa refund ref_1' }]);
    assert.equal((await provider.refundPayment({ amount: 40, data: out.data, context: {} })).data.status, 'refunded');
    // The money went back: a cart completed now does not become a paid order.
    assert.equal((await provider.authorizePayment({ data: out.data, context: {} })).status, 'canceled');
    assert.equal((await provider.getPaymentStatus({ data: out.data })).status, 'canceled');
  });

  test("without the payer's address it says how to refund from Kasse's dashboard, then records that refund", async () => {
    const out = await initiate('15');
    await simulate(out.id, 'paid');
    await rejects(
      () => provider.refundPayment({ amount: 15, data: out.data, context: {} }),
      /Kasse does not know the one address payment pay_\w+ was paid from.*Refund it on Kasse's dashboard/,
    );
    assert.equal((await kassePayment(out.id)).status, 'paid', 'nothing was sent');
    assert.equal((await m.test.post(`/payments/${out.id}/refund`, { destination: PAYER })).status, 202);
    await t.kasse.refunds.settleSimulated();
    const recorded = await provider.refundPayment({ amount: 15, data: out.data, context: {} });
    assert.equal(recorded.data.status, 'refunded');
    const count = await t.kasse.db
      .selectFrom('refunds')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('payment_id', '=', out.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 1);
  });
});

describe('manual capture', () => {
  let manual: any;
  before(() => {
    manual = make({ capture: 'manual' });
  });

  const hold = (amount: unknown, id = session()) =>
    manual.initiatePayment({ amount, currency_code: 'usd', data: {}, context: { idempotency_key: id } });

  /** Kasse's sender settles the captures and voids asked for, as its workers do. */
  const settle = () => t.kasse.capture.settleSimulated();

  test('initiatePayment creates a manual Kasse payment; the authorized payment is authorized in Medusa', async () => {
    const out = await hold('25.5');
    const created = await kassePayment(out.id);
    assert.equal(created.capture_method, 'manual');
    assert.equal(created.authorization.amount_usd_cents, 2550);
    assert.equal(out.status, 'pending');
    assert.equal((await manual.authorizePayment({ data: out.data, context: {} })).status, 'pending');
    await simulate(out.id, 'authorized', PAYER);
    const authorized = await manual.authorizePayment({ data: out.data, context: {} });
    assert.equal(authorized.status, 'authorized');
    assert.equal(authorized.data.status, 'authorized');
    assert.equal((await manual.getPaymentStatus({ data: out.data })).status, 'authorized');
    assert.equal((await kassePayment(out.id)).authorization.captured_usd_cents, 0, 'nothing captured by authorizing');
  });

  test("capturePayment captures all of the hold once under Medusa's capture id, however often Medusa asks", async () => {
    const out = await hold(40);
    await rejects(
      () => manual.capturePayment({ data: out.data, context: { idempotency_key: 'capt_early' } }),
      /is waiting; only a paid or authorized payment is captured/,
    );
    await simulate(out.id, 'authorized', PAYER);
    const captureId = `capt_${randomBytes(6).toString('hex')}`;
    const [a, b] = await Promise.all([
      manual.capturePayment({ data: out.data, context: { idempotency_key: captureId } }),
      manual.capturePayment({ data: out.data, context: { idempotency_key: captureId } }),
    ]);
    assert.equal(a.data.authorization.pending_usd_cents, 4000);
    assert.deepEqual(b.data, a.data);
    // Medusa losing the answer deletes its capture and captures again, under a new capture id.
    const retried = await manual.capturePayment({ data: out.data, context: { idempotency_key: `${captureId}-2` } });
    assert.equal(retried.data.authorization.pending_usd_cents, 4000);
    await settle();
    const p = await kassePayment(out.id);
    assert.equal(p.status, 'paid');
    assert.equal(p.authorization.captured_usd_cents, 4000);
    assert.equal(p.authorization.captures.length, 1, 'one capture on chain');
    const after = await manual.capturePayment({ data: out.data, context: { idempotency_key: `${captureId}-3` } });
    assert.equal(after.data.status, 'paid');
    assert.equal((await kassePayment(out.id)).authorization.captures.length, 1);
    assert.equal((await manual.getPaymentStatus({ data: out.data })).status, 'captured');
    assert.equal(await settle(), 0, 'no transfer left to send');
  });

  test('cancelPayment and deletePayment void an authorization (once), and cancel a waiting payment', async () => {
    const cancelled = await hold(30);
    await simulate(cancelled.id, 'authorized', PAYER);
    const voiding = await manual.cancelPayment({ data: cancelled.data, context: { idempotency_key: 'pay_medusa_1' } });
    assert.equal(voiding.data.status, 'authorized', 'until the void settles');
    assert.equal((await manual.cancelPayment({ data: cancelled.data })).data.status, 'authorized', 'asked again');
    await settle();
    const voided = await kassePayment(cancelled.id);
    assert.equal(voided.status, 'cancelled');
    assert.equal(voided.authorization.voided, true);
    assert.equal(voided.authorization.captured_usd_cents, 0);
    assert.equal((await manual.cancelPayment({ data: cancelled.data })).data.status, 'cancelled');
    assert.equal((await manual.getPaymentStatus({ data: cancelled.data })).status, 'canceled');

    const deleted = await hold(31);
    await simulate(deleted.id, 'authorized', PAYER);
    await manual.deletePayment({ data: deleted.data });
    await settle();
    assert.equal((await kassePayment(deleted.id)).status, 'cancelled');

    const waiting = await hold(32);
    assert.equal((await manual.cancelPayment({ data: waiting.data })).data.status, 'cancelled');
    assert.equal(await settle(), 0, 'a waiting payment has no hold to void');
  });

  test('refundPayment refunds what was captured to the payer who authorized it', async () => {
    const out = await hold('18.75');
    await simulate(out.id, 'authorized', PAYER);
    await manual.capturePayment({ data: out.data, context: { idempotency_key: 'capt_refund' } });
    await settle();
    await rejects(
      () => manual.refundPayment({ amount: 5, data: out.data, context: {} }),
      /Kasse refunds a payment in full: 18\.75 USD for payment pay_\w+, not 5\.00 USD/,
    );
    const refunded = await manual.refundPayment({
      amount: '18.75',
      data: out.data,
      context: { idempotency_key: 'ref_manual' },
    });
    assert.equal(refunded.data.id, out.id);
    await manual.refundPayment({ amount: '18.75', data: out.data, context: { idempotency_key: 'ref_manual' } });
    await t.kasse.refunds.settleSimulated();
    assert.equal((await kassePayment(out.id)).status, 'refunded');
    const sent = await t.kasse.db
      .selectFrom('refunds')
      .select(['destination', 'status', 'note'])
      .where('payment_id', '=', out.id)
      .execute();
    assert.deepEqual(sent, [{ destination: PAYER, status: 'sent', note: 'Medusa refund ref_manual' }]);
  });

  test('webhooks: payment.authorized is authorized; of payment.paid and payment.captured only the capture is captured', async () => {
    const id = session();
    const out = await hold('12.5', id);
    await simulate(out.id, 'authorized', PAYER);
    const [authorizedEvent] = await delivered([out.id], 1);
    assert.equal(authorizedEvent!.type, 'payment.authorized');
    const authorized = await manual.getWebhookActionAndData(asMedusaReceives(authorizedEvent!));
    assert.equal(authorized.action, 'authorized');
    assert.equal(authorized.data.session_id, id);
    assert.equal(authorized.data.amount.bigNumber.toFixed(), '12.5');

    await manual.capturePayment({ data: out.data, context: { idempotency_key: 'capt_hook' } });
    await settle();
    const events = await delivered([out.id], 3);
    assert.deepEqual(
      events.map((e) => e.type),
      ['payment.authorized', 'payment.paid', 'payment.captured'],
    );
    // Either entry reads the account's events: the automatic one maps them the same way. The capture is reported
    // once, by payment.captured; payment.paid of a held payment is no second capture.
    for (const reader of [manual, provider]) {
      const paid = await reader.getWebhookActionAndData(asMedusaReceives(events[1]!));
      assert.equal(paid.action, 'authorized');
      const captured = await reader.getWebhookActionAndData(asMedusaReceives(events[2]!));
      assert.equal(captured.action, 'captured');
      assert.equal(captured.data.session_id, id);
      assert.equal(captured.data.amount.bigNumber.toFixed(), '12.5');
    }
  });

  test("a capture on Kasse's API captures that part only; capturePayment outside Medusa then takes the rest", async () => {
    const id = session();
    const out = await hold(40, id);
    await simulate(out.id, 'authorized', PAYER);
    assert.equal((await m.test.post(`/payments/${out.id}/capture`, { amount_usd_cents: 1000 })).status, 200);
    await settle();
    const events = await delivered([out.id], 3);
    const captured = await manual.getWebhookActionAndData(asMedusaReceives(events[2]!));
    assert.deepEqual([captured.action, captured.data.amount.bigNumber.toFixed()], ['captured', '10']);
    assert.equal((await manual.getWebhookActionAndData(asMedusaReceives(events[1]!))).action, 'authorized');
    assert.equal((await manual.authorizePayment({ data: out.data, context: {} })).status, 'authorized');
    assert.equal((await kassePayment(out.id)).authorization.captured_usd_cents, 1000);
    await manual.capturePayment({ data: out.data, context: { idempotency_key: 'capt_rest' } });
    await settle();
    const p = await kassePayment(out.id);
    assert.deepEqual(
      p.authorization.captures.map((c: any) => c.amount_usd_cents),
      [1000, 3000],
    );
    assert.equal((await manual.getPaymentStatus({ data: out.data })).status, 'captured');
  });

  test('refunding before the capture settled says it is settling and sends nothing', async () => {
    const out = await hold('18');
    await simulate(out.id, 'authorized', PAYER);
    await manual.capturePayment({ data: out.data, context: { idempotency_key: 'capt_settling' } });
    for (const amount of [18, 0.01])
      await rejects(
        () => manual.refundPayment({ amount, data: out.data, context: {} }),
        /the capture of 18\.00 USD of Kasse payment pay_\w+ is still settling on chain.*refund, or cancel the order, again then/,
      );
    await settle();
    await manual.refundPayment({ amount: 18, data: out.data, context: {} });
    await t.kasse.refunds.settleSimulated();
    assert.equal((await kassePayment(out.id)).status, 'refunded');
  });
});

describe('getWebhookActionAndData', () => {
  test("Kasse's signed events become Medusa's actions with the session id and amount", async () => {
    const ids = { paid: session(), expired: session(), cancelled: session(), underpaid: session() };
    const paid = await initiate('25.5', 'usd', {}, ids.paid);
    const expired = await initiate(20, 'usd', {}, ids.expired);
    const cancelled = await initiate(21, 'usd', {}, ids.cancelled);
    const underpaid = await initiate(22, 'usd', {}, ids.underpaid);
    await simulate(paid.id, 'paid', PAYER);
    await simulate(expired.id, 'expired');
    await provider.cancelPayment({ data: cancelled.data });
    await simulate(underpaid.id, 'underpaid');
    const events = await delivered([paid.id, expired.id, cancelled.id, underpaid.id], 4);
    const got = new Map<string, any>();
    for (const e of events) got.set(e.type, await provider.getWebhookActionAndData(asMedusaReceives(e)));
    const amount = (r: any) => r.data.amount.bigNumber.toFixed();
    assert.equal(got.get('payment.paid').action, 'captured');
    assert.equal(got.get('payment.paid').data.session_id, ids.paid);
    assert.equal(amount(got.get('payment.paid')), '25.5');
    assert.deepEqual(
      [got.get('payment.expired').action, got.get('payment.expired').data.session_id],
      ['canceled', ids.expired],
    );
    assert.equal(amount(got.get('payment.expired')), '20');
    assert.deepEqual(
      [got.get('payment.cancelled').action, got.get('payment.cancelled').data.session_id],
      ['canceled', ids.cancelled],
    );
    assert.deepEqual(
      [got.get('payment.underpaid').action, got.get('payment.underpaid').data.session_id],
      ['requires_more', ids.underpaid],
    );

    // The same delivery twice (at least once) maps the same way; a string body as well as the bytes.
    const paidEvent = events.find((e) => e.type === 'payment.paid')!;
    const twice = await provider.getWebhookActionAndData({
      ...asMedusaReceives(paidEvent),
      rawData: paidEvent.rawBody,
    });
    assert.deepEqual(JSON.stringify(twice), JSON.stringify(got.get('payment.paid')));
    // Medusa's event bus can hand the body over serialised as {type: 'Buffer', data}.
    const serialised = JSON.parse(JSON.stringify(asMedusaReceives(paidEvent)));
    assert.equal((await provider.getWebhookActionAndData(serialised)).action, 'captured');

    await provider.refundPayment({ amount: '25.5', data: paid.data, context: {} });
    await t.kasse.refunds.settleSimulated();
    const refunded = (await delivered([paid.id], 2)).find((e) => e.type === 'payment.refunded');
    const r = await provider.getWebhookActionAndData(asMedusaReceives(refunded!));
    assert.equal(r.action, 'not_supported');
    assert.equal(r.data.session_id, ids.paid);
  });

  test('a payment Medusa did not create, and events of other objects, are not supported', async () => {
    const p = (await m.test.post('/payments', { price_amount: 500, price_currency: 'USD', order_id: 'pos-7' })).body;
    await simulate(p.id, 'paid');
    const [e] = await delivered([p.id], 1);
    assert.deepEqual(await provider.getWebhookActionAndData(asMedusaReceives(e!)), { action: 'not_supported' });
  });

  test('a forged, tampered or unsigned delivery is refused: no action, no session, a warning says why', async () => {
    const out = await initiate(33);
    await simulate(out.id, 'paid');
    const [e] = await delivered([out.id], 1);
    const real = asMedusaReceives(e!);
    // The signature's first hex digit changed (to one it is not, so the forgery never equals the original).
    const forgedSignature = real.headers['service-signature']!.toString().replace(/v1=(\w)/, (_, d) =>
      d === '0' ? 'v1=1' : 'v1=0',
    );
    const tampered = e!.rawBody.replace('"status":"paid"', '"status":"paiD"');
    const cases: Array<[any, string]> = [
      [{ ...real, headers: { ...real.headers, 'service-signature': forgedSignature } }, 'signature_mismatch'],
      [{ ...real, rawData: Buffer.from(tampered), data: JSON.parse(tampered) }, 'signature_mismatch'],
      [{ ...real, headers: {} }, 'missing_header'],
      [{ ...real, rawData: undefined }, 'malformed_body'],
    ];
    for (const [payload, reason] of cases) {
      warnings.length = 0;
      assert.deepEqual(await provider.getWebhookActionAndData(payload), { action: 'not_supported' }, reason);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, new RegExp(`webhook refused \\(${reason}\\)`));
    }
    // Signed by another account's secret.
    const other = make({ webhookSecret: 'whsec_another' });
    assert.deepEqual(await other.getWebhookActionAndData(real), { action: 'not_supported' });
  });

  /** `body` signed with the account's webhook secret, as anyone holding the secret can sign it. */
  function signedWithSecret(body: unknown, timestamp?: number) {
    const raw = JSON.stringify(body);
    const signature = Kasse.webhooks.sign(raw, m.webhookSecret, timestamp === undefined ? {} : { timestamp });
    return { data: JSON.parse(raw), rawData: Buffer.from(raw), headers: { 'service-signature': signature } };
  }
  const crafted = (type: string, data: unknown) => ({
    id: `evt_${randomBytes(13).toString('hex').toUpperCase()}`,
    type,
    created_at: new Date().toISOString(),
    data,
  });

  test("a signed event takes nothing from its body: Kasse's payment, read with the provider's key, decides", async () => {
    const victim = session();
    const out = await initiate('40', 'usd', {}, victim);
    const waiting = await kassePayment(out.id);

    // The body claims the payment is paid: Kasse says it is waiting.
    const claimed = await provider.getWebhookActionAndData(
      signedWithSecret(crafted('payment.paid', { ...waiting, status: 'paid' })),
    );
    assert.deepEqual([claimed.action, claimed.data.session_id], ['pending', victim]);

    // A test payment naming a session it was not made for: paid through the simulator, its event genuinely signed.
    const decoy = (
      await m.test.post('/payments', {
        price_amount: 100,
        price_currency: 'USD',
        order_id: 'decoy-1',
        metadata: { medusa_session_id: victim, medusa_amount: '1' },
      })
    ).body;
    await simulate(decoy.id, 'paid');
    const [decoyEvent] = await delivered([decoy.id], 1);
    warnings.length = 0;
    assert.deepEqual(await provider.getWebhookActionAndData(asMedusaReceives(decoyEvent!)), {
      action: 'not_supported',
    });
    assert.match(warnings[0]!, new RegExp(`for ${victim} ignored: Kasse's payment ${decoy.id} was not made for`));

    // The live entry of the same account (one webhook secret for both modes) cannot read a test payment.
    const live = make({ apiKey: m.liveKey, baseUrl: t.urls.live });
    warnings.length = 0;
    assert.deepEqual(await live.getWebhookActionAndData(asMedusaReceives(decoyEvent!)), { action: 'not_supported' });
    assert.match(warnings[0]!, new RegExp(`payment ${decoy.id} is not one this provider's API key can read`));
    const testPaid = await initiate(5);
    await simulate(testPaid.id, 'paid');
    const [testEvent] = await delivered([testPaid.id], 1);
    assert.deepEqual(await live.getWebhookActionAndData(asMedusaReceives(testEvent!)), { action: 'not_supported' });

    assert.equal((await kassePayment(out.id)).status, 'waiting', 'nothing changed');
  });

  test('a genuinely signed event is read however late Medusa hands it over', async () => {
    const id = session();
    const out = await initiate(34, 'usd', {}, id);
    await simulate(out.id, 'paid');
    const [e] = await delivered([out.id], 1);
    const late = signedWithSecret(JSON.parse(e!.rawBody), Math.floor(Date.now() / 1000) - 301);
    const r = await provider.getWebhookActionAndData(late);
    assert.deepEqual([r.action, r.data.session_id, r.data.amount.bigNumber.toFixed()], ['captured', id, '34']);
    // Kasse's clock ten minutes on from the provider's: its delivery is read too.
    t.clock.advance(600 * SECOND);
    const expiring = await initiate(35);
    await simulate(expiring.id, 'expired');
    const [ahead] = await delivered([expiring.id], 1);
    assert.equal((await provider.getWebhookActionAndData(asMedusaReceives(ahead!))).action, 'canceled');
  });

  test('a refund Kasse could not send is told in the log with what to do; Medusa is asked nothing', async () => {
    const id = session();
    const out = await initiate('16', 'usd', {}, id);
    await simulate(out.id, 'paid', PAYER);
    await provider.refundPayment({ amount: 16, data: out.data, context: {} });
    const [refund] = await t.kasse.db.selectFrom('refunds').select('id').where('payment_id', '=', out.id).execute();
    await t.kasse.transfers.transferSettled('test', {
      transferId: refund!.id,
      status: 'failed',
      txHash: null,
      error: 'the destination cannot receive it',
    });
    await t.kasse.webhooks.drain();
    const failed = await eventually('refund.failed', () =>
      receiver.events.find((e) => e.type === 'refund.failed' && e.data?.id === refund!.id),
    );
    warnings.length = 0;
    assert.deepEqual(await provider.getWebhookActionAndData(asMedusaReceives(failed)), { action: 'not_supported' });
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      new RegExp(
        `Kasse could not send the refund of payment ${out.id} \\(Medusa payment session ${id}\\): the destination cannot receive it\\. Medusa still shows it refunded; refund it again on Kasse's dashboard`,
      ),
    );
    assert.equal((await kassePayment(out.id)).status, 'paid', 'Kasse lets it be refunded again');
  });
});
