/**
 * Subscriptions through the public API, as a merchant and its customers live them: the Subscription object and its
 * validation; a monthly subscription paid for several periods; one going past due and paid within grace; one
 * cancelled at the end of grace (and one with no grace); month-end clamping; two payments of one period; a reorg of
 * a period's payment; cancelling (API and the customer's emailed link); listing; the test-mode advance through a year
 * of renewals. Time is a fake clock; emails arrive over real SMTP (smtp-server, parsed with mailparser); webhooks are
 * received by a server that verifies every signature as a merchant must.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DAY_MS } from '../../src/modules/subscriptions/calendar.ts';
import { FakeClock, HOUR } from '../../src/core/clock.ts';
import type { DepositObservation } from '../../src/chains/ports.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError } from '../harness/expect.ts';
import { linkIn, startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';
import { startWebhookReceiver, type ReceivedEvent, type WebhookReceiver } from '../harness/webhook-receiver.ts';

let t: TestKasse;
let m: TestMerchant;
let smtp: SmtpReceiver;
let hook: WebhookReceiver;
const MERCHANT = 'Corner <b>Café</b>';
const XSS = '<img src=x onerror="alert(1)">';

before(async () => {
  smtp = await startSmtpReceiver();
  hook = await startWebhookReceiver({ now: () => t.clock.now() });
  t = await startTestKasse({
    env: { KASSE_SMTP_URL: smtp.url, KASSE_MAIL_FROM: 'Billing <billing@kasse.test>' },
    clock: new FakeClock('2026-01-31T09:00:00Z'),
  });
  m = await t.merchant({ name: MERCHANT, webhookUrl: hook.url, rateLimit: 100_000 });
  hook.setSecret(m.webhookSecret);
});
after(async () => {
  await t?.close();
  await hook?.close();
  await smtp?.close();
});

const FIELDS = [
  'id',
  'merchant_id',
  'customer',
  'title',
  'amount_usd_cents',
  'interval',
  'interval_count',
  'grace_days',
  'status',
  'started_at',
  'next_due_at',
  'periods_invoiced',
  'periods_paid',
  'last_payment_id',
  'success_url',
  'metadata',
  'cancelled_at',
  'cancellation_reason',
  'created_at',
  'collection',
  'grant',
  'charges',
  'invoices',
];
const INVOICE_FIELDS = [
  'payment_id',
  'period',
  'status',
  'amount_usd_cents',
  'checkout_url',
  'created_at',
  'expires_at',
  'paid_at',
];

const NO_GRANT = {
  status: 'none',
  token: null,
  payer: null,
  amount_per_period: null,
  period_seconds: null,
  expires_at: null,
  granted_at: null,
  charges: 0,
  next_charge_at: null,
};

let customerSeq = 0;
const customer = () => `customer${++customerSeq}@example.com`;

async function create(body: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await m.test.post(
    '/subscriptions',
    { title: 'Coffee club', amount_usd_cents: 1500, interval: 'month', ...body },
    headers,
  );
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function sub(id: string) {
  const res = await m.test.get(`/subscriptions/${id}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

/** What the workers do, once: due payments, the scheduler, mail and webhooks. */
async function pump() {
  await t.kasse.payments.runDue();
  await t.kasse.refunds.settleSimulated();
  const r = await t.kasse.subscriptions.runDue();
  await t.kasse.email.runOnce();
  await t.kasse.webhooks.drain();
  return r;
}

async function pay(paymentId: string) {
  const res = await m.test.post(`/test/payments/${paymentId}/simulate`, { outcome: 'paid' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  await pump();
}

const mailsTo = (to: string) => smtp.messages.filter((x) => x.to === to);
const eventsOf = (id: string): ReceivedEvent[] =>
  hook.events.filter((e) => e.data?.id === id || e.data?.metadata?.subscription_id === id);
const subEvents = (id: string) =>
  eventsOf(id)
    .filter((e) => e.type.startsWith('subscription.'))
    .map((e) => e.type);

describe('POST /subscriptions', () => {
  test('201 with every field of the Subscription; the first period is invoiced at once as an ordinary payment', async () => {
    const email = customer();
    const s = await create({
      customer_email: email,
      customer_name: 'Ana Ruiz',
      grace_days: 3,
      success_url: 'https://shop.example/thanks',
      metadata: { plan: 'gold', n: [1, 2] },
    });
    assert.deepEqual(Object.keys(s), FIELDS);
    assert.match(s.id, /^sub_[0-9A-Z]{26}$/);
    assert.equal(s.merchant_id, m.id);
    assert.deepEqual(s.customer, { email, name: 'Ana Ruiz' });
    assert.deepEqual(
      { ...s, id: 0, merchant_id: 0, customer: 0, invoices: 0, last_payment_id: 0 },
      {
        id: 0,
        merchant_id: 0,
        customer: 0,
        invoices: 0,
        last_payment_id: 0,
        title: 'Coffee club',
        amount_usd_cents: 1500,
        interval: 'month',
        interval_count: 1,
        grace_days: 3,
        status: 'active',
        started_at: '2026-01-31T09:00:00.000Z',
        next_due_at: '2026-02-28T09:00:00.000Z',
        periods_invoiced: 1,
        periods_paid: 0,
        success_url: 'https://shop.example/thanks',
        metadata: { plan: 'gold', n: [1, 2] },
        cancelled_at: null,
        cancellation_reason: null,
        created_at: '2026-01-31T09:00:00.000Z',
        // Without `collection` a subscription is invoiced by email, as ever.
        collection: 'send_invoice',
        grant: NO_GRANT,
        charges: [],
      },
    );
    assert.equal(s.invoices.length, 1);
    const inv = s.invoices[0];
    assert.deepEqual(Object.keys(inv), INVOICE_FIELDS);
    assert.equal(s.last_payment_id, inv.payment_id);
    assert.deepEqual(
      { ...inv, payment_id: 0 },
      {
        payment_id: 0,
        period: 1,
        status: 'waiting',
        amount_usd_cents: 1500,
        checkout_url: `${t.urls.checkout}/p/${inv.payment_id}`,
        created_at: '2026-01-31T09:00:00.000Z',
        expires_at: '2026-02-01T09:00:00.000Z',
        paid_at: null,
      },
    );
    // An ordinary payment: in GET /payments, with the subscription in its metadata and the period in its order id.
    const p = (await m.test.get(`/payments/${inv.payment_id}`)).body;
    assert.equal(p.order_id, `${s.id}-1`);
    assert.deepEqual(p.metadata, { subscription_id: s.id, period: 1 });
    assert.equal(p.price_amount, 1500);
    assert.equal(p.success_url, 'https://shop.example/thanks');
    assert.equal(p.status, 'waiting');
    const listed = (await m.test.get(`/payments?order_id=${s.id}-1`)).body.data;
    assert.deepEqual(
      listed.map((x: any) => x.id),
      [inv.payment_id],
    );
    assert.deepEqual(await sub(s.id), s);
  });

  test('start_at in the future: nothing is invoiced until then', async () => {
    const s = await create({ customer_email: customer(), start_at: '2026-02-10T00:00:00Z' });
    assert.equal(s.periods_invoiced, 0);
    assert.deepEqual(s.invoices, []);
    assert.equal(s.next_due_at, '2026-02-10T00:00:00.000Z');
    assert.equal(s.last_payment_id, null);
  });

  test('Idempotency-Key as on payments: same key and body → 200 with the same subscription; another body → 409', async () => {
    const email = customer();
    const body = { customer_email: email, title: 'Tea', amount_usd_cents: 900, interval: 'week' };
    const a = await m.test.post('/subscriptions', body, { 'Idempotency-Key': 'sub-key-1' });
    assert.equal(a.status, 201);
    const b = await m.test.post('/subscriptions', body, { 'Idempotency-Key': 'sub-key-1' });
    assert.equal(b.status, 200);
    assert.deepEqual(b.body, a.body);
    assertError(
      await m.test.post('/subscriptions', { ...body, amount_usd_cents: 901 }, { 'Idempotency-Key': 'sub-key-1' }),
      409,
      'idempotency_conflict',
      'Idempotency-Key',
    );
    assertError(
      await m.test.post('/subscriptions', body, { 'Idempotency-Key': 'x'.repeat(256) }),
      400,
      'invalid_request',
      'Idempotency-Key',
    );
    const list = (await m.test.get(`/subscriptions?customer_email=${email}`)).body.data;
    assert.equal(list.length, 1, 'one subscription for the key');
    await t.kasse.email.runOnce();
    await smtp.waitFor((x) => x.to === email);
    assert.equal(mailsTo(email).length, 1, 'one invoice mail');
  });

  test('bad input: 400 with the offending field, nothing created', async () => {
    const email = customer();
    const ok = { customer_email: email, title: 'T', amount_usd_cents: 100, interval: 'month' };
    const cases: Array<[Record<string, unknown>, string | null]> = [
      [{ ...ok, extra: 1 }, 'extra'],
      [{ ...ok, customer_email: 'not-an-email' }, 'customer_email'],
      [{ ...ok, customer_email: `${'a'.repeat(243)}@example.com` }, 'customer_email'],
      [{ ...ok, customer_email: 'a@b.example\r\nBcc: x@y.example' }, 'customer_email'],
      [{ ...ok, customer_name: 'n'.repeat(201) }, 'customer_name'],
      [{ ...ok, title: '' }, 'title'],
      [{ ...ok, title: 't'.repeat(121) }, 'title'],
      [{ ...ok, amount_usd_cents: 99 }, 'amount_usd_cents'],
      [{ ...ok, amount_usd_cents: 100_000_001 }, 'amount_usd_cents'],
      [{ ...ok, amount_usd_cents: 150.5 }, 'amount_usd_cents'],
      [{ ...ok, interval: 'day' }, 'interval'],
      [{ ...ok, interval_count: 0 }, 'interval_count'],
      [{ ...ok, interval_count: 13 }, 'interval_count'],
      [{ ...ok, grace_days: -1 }, 'grace_days'],
      [{ ...ok, grace_days: 31 }, 'grace_days'],
      [{ ...ok, start_at: 'tomorrow' }, 'start_at'],
      [{ ...ok, start_at: '2026-01-30T09:00:00Z' }, 'start_at'],
      [{ ...ok, start_at: '2031-03-01T00:00:00Z' }, 'start_at'],
      [{ ...ok, success_url: 'not a url' }, 'success_url'],
      [{ ...ok, success_url: `https://x.example/${'a'.repeat(2040)}` }, 'success_url'],
      [{ ...ok, metadata: { big: 'x'.repeat(4100) } }, 'metadata'],
      [{ ...ok, metadata: 'x' }, 'metadata'],
      [{ title: 'T', amount_usd_cents: 100, interval: 'month' }, 'customer_email'],
      [{ customer_email: email, amount_usd_cents: 100, interval: 'month' }, 'title'],
      [{ customer_email: email, title: 'T', interval: 'month' }, 'amount_usd_cents'],
      [{ customer_email: email, title: 'T', amount_usd_cents: 100 }, 'interval'],
    ];
    for (const [body, param] of cases)
      assertError(await m.test.post('/subscriptions', body), 400, 'invalid_request', param);
    // https only on the live API.
    assertError(
      await m.live.post('/subscriptions', { ...ok, success_url: 'http://shop.example/ok' }),
      400,
      'invalid_request',
      'success_url',
    );
    assert.equal((await m.test.get(`/subscriptions?customer_email=${email}`)).body.data.length, 0);
    assert.equal((await m.live.get(`/subscriptions?customer_email=${email}`)).body.data.length, 0);
  });
});

let txSeq = 0;
/** A confirmed transfer of `amount` to a payment's coin choice, as a chain watcher reports it. */
function deposit(
  attempt: { chain: string; address: string; token: string },
  amount: bigint,
  block: bigint,
): DepositObservation {
  return {
    chain: attempt.chain,
    address: attempt.address.toLowerCase(),
    token: attempt.token,
    txHash: `0x${(++txSeq).toString(16).padStart(64, 'e')}`,
    index: 0,
    amount,
    from: '0x1111111111111111111111111111111111111111',
    blockNumber: block,
    blockHash: `0x${block.toString(16).padStart(64, 'c')}`,
  };
}

async function available(): Promise<number> {
  return (await m.test.get('/balance')).body.available_usd_cents;
}

describe('the life of a subscription', () => {
  test('monthly, paid for four periods from 31 January: month ends clamped, an invoice email each period, counts kept true', async () => {
    const email = customer();
    let s = await create({
      customer_email: email,
      customer_name: `Ana ${XSS}`,
      title: `Beans ${XSS}`,
      amount_usd_cents: 2500,
    });
    const dues = [
      '2026-01-31T09:00:00.000Z',
      '2026-02-28T09:00:00.000Z',
      '2026-03-31T09:00:00.000Z',
      '2026-04-30T09:00:00.000Z',
      '2026-05-31T09:00:00.000Z',
    ];
    assert.equal(s.started_at, dues[0]);
    for (let period = 1; period <= 4; period++) {
      if (period > 1) {
        assert.ok(t.clock.now() < new Date(s.next_due_at));
        t.clock.set(s.next_due_at);
        const r = await pump();
        assert.ok(r.invoiced >= 1);
        s = await sub(s.id);
      }
      assert.equal(s.periods_invoiced, period);
      assert.equal(s.next_due_at, dues[period]);
      const inv = s.invoices[period - 1];
      assert.equal(inv.period, period);
      assert.equal(s.last_payment_id, inv.payment_id);
      await pump();
      const mail = await smtp.waitFor((x) => x.to === email && x.text.includes(`Period: ${period} (`));
      // The invoice names the merchant, the amount, the period, the due date and the checkout link.
      assert.match(mail.subject, /^Invoice from Corner <b>Café<\/b>: Beans <img/);
      assert.match(mail.text, /Amount: \$25\.00/);
      assert.ok(
        mail.text.includes(`Due: ${['31 January', '28 February', '31 March', '30 April'][period - 1]} 2026, 09:00 UTC`),
        mail.text,
      );
      assert.ok(mail.text.includes(`Pay now: ${inv.checkout_url}`));
      assert.ok(mail.text.includes('Corner <b>Café</b>'));
      assert.match(mail.html, /href="http:\/\/[^"]+\/p\/pay_/);
      linkIn(mail.text, '/s/sub_');
      await pay(inv.payment_id);
      s = await sub(s.id);
      assert.equal(s.periods_paid, period);
      assert.equal(s.status, 'active');
      assert.equal(s.invoices[period - 1].status, 'paid');
      assert.equal(s.invoices[period - 1].paid_at, t.clock.now().toISOString());
    }
    assert.deepEqual(
      s.invoices.map((i: any) => [i.period, i.status]),
      [
        [1, 'paid'],
        [2, 'paid'],
        [3, 'paid'],
        [4, 'paid'],
      ],
    );
    assert.equal(mailsTo(email).length, 4);
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      ...Array(4).fill(['subscription.invoiced', 'subscription.paid']).flat(),
    ]);
    const paidEvents = eventsOf(s.id).filter((e) => e.type === 'subscription.paid');
    assert.deepEqual(
      paidEvents.map((e) => e.data.periods_paid),
      [1, 2, 3, 4],
    );
    for (const e of eventsOf(s.id).filter((x) => x.type.startsWith('subscription.')))
      assert.deepEqual(Object.keys(e.data), FIELDS);
    // Each period's payment is an ordinary payment in webhooks too.
    const paymentPaid = eventsOf(s.id).filter((e) => e.type === 'payment.paid');
    assert.deepEqual(
      paymentPaid.map((e) => e.data.metadata),
      [1, 2, 3, 4].map((period) => ({ subscription_id: s.id, period })),
    );
  });

  test('past due, then paid within grace: a reminder with a fresh payment, back to active', async () => {
    const email = customer();
    const start = t.clock.now();
    let s = await create({ customer_email: email, grace_days: 3 });
    await pump();
    t.clock.advance(DAY_MS);
    const r = await pump();
    assert.equal(r.reissued, 1);
    s = await sub(s.id);
    assert.equal(s.status, 'past_due');
    assert.deepEqual(
      s.invoices.map((i: any) => [i.period, i.status]),
      [
        [1, 'expired'],
        [1, 'waiting'],
      ],
    );
    assert.equal(s.periods_invoiced, 1);
    assert.equal(s.last_payment_id, s.invoices[1].payment_id);
    // The fresh payment's event shows the Subscription exactly as the API does: both payments, each in its state.
    assert.deepEqual(
      eventsOf(s.id)
        .filter((e) => e.type === 'subscription.invoiced')
        .at(-1)!.data,
      s,
    );
    const reminder = await smtp.waitFor((x) => x.to === email && /^Overdue/.test(x.subject));
    assert.match(reminder.text, /has not arrived and is overdue/);
    const ends = new Date(start.getTime() + 3 * DAY_MS);
    assert.ok(reminder.text.includes(`your subscription will end on ${ends.getUTCDate()} `), reminder.text);
    assert.ok(reminder.text.includes(`Pay now: ${s.invoices[1].checkout_url}`));
    await pay(s.invoices[1].payment_id);
    s = await sub(s.id);
    assert.equal(s.status, 'active');
    assert.equal(s.periods_paid, 1);
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.past_due',
      'subscription.invoiced',
      'subscription.paid',
    ]);
    // The next period is billed as usual.
    t.clock.set(s.next_due_at);
    await pump();
    s = await sub(s.id);
    assert.equal(s.periods_invoiced, 2);
    assert.equal(s.status, 'active');
  });

  test('never paid: a fresh payment each day of grace, then cancelled at its end (reason unpaid); nothing billed after', async () => {
    const email = customer();
    const start = t.clock.now();
    let s = await create({ customer_email: email, grace_days: 3 });
    await pump();
    for (let d = 1; d <= 2; d++) {
      t.clock.advance(DAY_MS);
      await pump();
      s = await sub(s.id);
      assert.equal(s.status, 'past_due', `day ${d}`);
      assert.equal(s.invoices.length, d + 1);
    }
    t.clock.advance(DAY_MS);
    await pump();
    s = await sub(s.id);
    assert.equal(s.status, 'cancelled');
    assert.equal(s.cancellation_reason, 'unpaid');
    assert.equal(s.cancelled_at, new Date(start.getTime() + 3 * DAY_MS).toISOString());
    assert.deepEqual(
      s.invoices.map((i: any) => i.status),
      ['expired', 'expired', 'expired'],
    );
    const ended = await smtp.waitFor((x) => x.to === email && /^Subscription cancelled/.test(x.subject));
    assert.match(ended.text, /was not received before its grace period ended/);
    assert.equal(mailsTo(email).filter((x) => /^Overdue/.test(x.subject)).length, 2);
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.past_due',
      'subscription.invoiced',
      'subscription.invoiced',
      'subscription.cancelled',
    ]);
    const cancelled = eventsOf(s.id).find((e) => e.type === 'subscription.cancelled')!;
    assert.equal(cancelled.data.status, 'cancelled');
    assert.equal(cancelled.data.cancellation_reason, 'unpaid');
    t.clock.set(new Date(new Date(s.next_due_at).getTime() + HOUR));
    await pump();
    const later = await sub(s.id);
    assert.equal(later.periods_invoiced, 1);
    assert.equal(later.invoices.length, 3);
  });

  test('no grace: cancelled when the first payment expires unpaid, without passing through past due', async () => {
    let s = await create({ customer_email: customer(), interval: 'week' });
    await pump();
    t.clock.advance(DAY_MS);
    await pump();
    s = await sub(s.id);
    assert.equal(s.status, 'cancelled');
    assert.equal(s.cancellation_reason, 'unpaid');
    assert.deepEqual(subEvents(s.id), ['subscription.created', 'subscription.invoiced', 'subscription.cancelled']);
  });

  test('two payments of one period both paid: both credited, the period counted once', async () => {
    let s = await create({ customer_email: customer(), grace_days: 3, amount_usd_cents: 1000 });
    const first = s.invoices[0].payment_id;
    const withCoin = await m.test.post(`/payments/${first}/attempts`, { chain: 'base', token: 'base:usdc' });
    assert.equal(withCoin.status, 201);
    const attempt = withCoin.body.attempts[0];
    await pump();
    t.clock.advance(DAY_MS);
    await pump();
    s = await sub(s.id);
    assert.equal(s.invoices[0].status, 'expired');
    const before = await available();
    await pay(s.invoices[1].payment_id);
    // The first payment's money arrives after all (late) and the merchant accepts it.
    await t.kasse.payments.deposits.recordDeposits('test', [deposit(attempt, BigInt(attempt.pay_amount), 5_000n)]);
    await t.kasse.payments.deposits.headAdvanced('test', 'base', 5_100n);
    assert.equal((await m.test.get(`/payments/${first}`)).body.status, 'late');
    assert.equal((await m.test.post(`/payments/${first}/accept`)).body.status, 'paid');
    await pump();
    s = await sub(s.id);
    assert.deepEqual(
      s.invoices.map((i: any) => i.status),
      ['paid', 'paid'],
    );
    assert.equal(s.periods_paid, 1);
    assert.equal(s.status, 'active');
    assert.equal(subEvents(s.id).filter((x) => x === 'subscription.paid').length, 1);
    const fee = (c: number) => c - Math.round((c * 100) / 10_000);
    assert.equal((await available()) - before, 2 * fee(1000), 'both payments credited (less the fee)');
  });

  test("a reorg takes a period's payment back: the period is unpaid again, and paid again when the money returns", async () => {
    let s = await create({ customer_email: customer(), grace_days: 2, amount_usd_cents: 1000 });
    const inv = s.invoices[0].payment_id;
    const attempt = (await m.test.post(`/payments/${inv}/attempts`, { chain: 'base', token: 'base:usdc' })).body
      .attempts[0];
    const d = deposit(attempt, BigInt(attempt.pay_amount), 7_000n);
    await t.kasse.payments.deposits.recordDeposits('test', [d]);
    await t.kasse.payments.deposits.headAdvanced('test', 'base', 7_010n);
    await pump();
    s = await sub(s.id);
    assert.equal(s.periods_paid, 1);
    await t.kasse.payments.deposits.blocksRemoved('test', 'base', 7_000n);
    await pump();
    s = await sub(s.id);
    assert.equal(s.invoices[0].status, 'waiting');
    assert.equal(s.periods_paid, 0);
    await t.kasse.payments.deposits.recordDeposits('test', [
      { ...d, txHash: `0x${'f'.repeat(64)}`, blockNumber: 7_001n },
    ]);
    await t.kasse.payments.deposits.headAdvanced('test', 'base', 7_020n);
    await pump();
    s = await sub(s.id);
    assert.equal(s.periods_paid, 1);
    assert.equal(s.status, 'active');
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.paid',
      'subscription.paid',
    ]);
  });
});

describe('dunning starts when the payment ends, not at its 24-hour check', () => {
  /** Counts the times this process is told scheduler work is due now (what wakes the worker loop at once). */
  function wakes(): { count: number; off: () => void } {
    const w = { count: 0, off: () => {} };
    w.off = t.kasse.subscriptions.onWork(() => void w.count++);
    return w;
  }

  test('expired through the simulator: past due at once, a fresh payment and a reminder; paying it makes it active', async () => {
    const email = customer();
    let s = await create({ customer_email: email, grace_days: 3 });
    const first = s.invoices[0].payment_id;
    const wake = wakes();
    const res = await m.test.post(`/test/payments/${first}/simulate`, { outcome: 'expired' });
    wake.off();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(wake.count, 1, 'the worker loop is woken when the change commits');
    // The clock has not moved: the scheduler's next pass, from what the payment's transaction stored, starts dunning.
    const r = await pump();
    assert.equal(r.reissued, 1);
    s = await sub(s.id);
    assert.equal(s.status, 'past_due');
    assert.deepEqual(
      s.invoices.map((i: any) => [i.period, i.status]),
      [
        [1, 'expired'],
        [1, 'waiting'],
      ],
    );
    assert.equal(s.invoices[1].created_at, t.clock.now().toISOString());
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.past_due',
      'subscription.invoiced',
    ]);
    const reminder = await smtp.waitFor((x) => x.to === email && /^Overdue/.test(x.subject));
    assert.ok(reminder.text.includes(`Pay now: ${s.invoices[1].checkout_url}`), reminder.text);
    await pay(s.invoices[1].payment_id);
    s = await sub(s.id);
    assert.equal(s.status, 'active');
    assert.equal(s.periods_paid, 1);
  });

  test('no grace: expired through the simulator cancels it at once (reason unpaid), with the email', async () => {
    const email = customer();
    let s = await create({ customer_email: email, interval: 'week' });
    assert.equal(
      (await m.test.post(`/test/payments/${s.invoices[0].payment_id}/simulate`, { outcome: 'expired' })).status,
      200,
    );
    await pump();
    s = await sub(s.id);
    assert.equal(s.status, 'cancelled');
    assert.equal(s.cancellation_reason, 'unpaid');
    assert.equal(s.cancelled_at, t.clock.now().toISOString());
    assert.deepEqual(subEvents(s.id), ['subscription.created', 'subscription.invoiced', 'subscription.cancelled']);
    await smtp.waitFor((x) => x.to === email && /^Subscription cancelled/.test(x.subject));
  });

  test("live mode: the merchant cancels the period's payment; dunning starts at once", async () => {
    const email = customer();
    const created = await m.live.post('/subscriptions', {
      customer_email: email,
      title: 'Coffee club',
      amount_usd_cents: 1500,
      interval: 'month',
      grace_days: 2,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id;
    const cancelled = await m.live.post(`/payments/${created.body.invoices[0].payment_id}/cancel`);
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    await pump();
    const s = (await m.live.get(`/subscriptions/${id}`)).body;
    assert.equal(s.status, 'past_due');
    assert.deepEqual(
      s.invoices.map((i: any) => [i.period, i.status]),
      [
        [1, 'cancelled'],
        [1, 'waiting'],
      ],
    );
    await smtp.waitFor((x) => x.to === email && /^Overdue/.test(x.subject));
  });

  test('expired by time after the scheduler already looked: taken up at once, not a minute later', async () => {
    let s = await create({ customer_email: customer(), grace_days: 3 });
    t.clock.advance(DAY_MS);
    // The scheduler's check comes before the payments module expired the payment: still waiting, look again soon.
    await t.kasse.subscriptions.runDue();
    s = await sub(s.id);
    assert.deepEqual([s.status, s.invoices.map((i: any) => i.status)], ['active', ['waiting']]);
    await t.kasse.payments.runDue();
    assert.equal((await sub(s.id)).invoices[0].status, 'expired');
    await t.kasse.subscriptions.runDue();
    s = await sub(s.id);
    assert.deepEqual([s.status, s.invoices.map((i: any) => i.status)], ['past_due', ['expired', 'waiting']]);
  });
});

describe('refunding a paid period', () => {
  test('the period stays paid and the subscription active; billing goes on until the merchant cancels', async () => {
    const email = customer();
    let s = await create({ customer_email: email, grace_days: 2, amount_usd_cents: 1000 });
    const paid = s.invoices[0].payment_id;
    await pay(paid);
    const refund = await m.test.post(`/payments/${paid}/refund`, {
      destination: '0x000000000000000000000000000000000000dEaD',
    });
    assert.equal(refund.status, 202, JSON.stringify(refund.body));
    await pump();
    assert.equal((await m.test.get(`/payments/${paid}`)).body.status, 'refunded');
    s = await sub(s.id);
    assert.equal(s.status, 'active');
    assert.equal(s.periods_paid, 1);
    assert.deepEqual(
      s.invoices.map((i: any) => [i.period, i.status]),
      [[1, 'refunded']],
    );
    assert.deepEqual(subEvents(s.id), ['subscription.created', 'subscription.invoiced', 'subscription.paid']);
    assert.equal(mailsTo(email).filter((x) => /^Overdue|^Subscription cancelled/.test(x.subject)).length, 0);
    // The next period is billed as usual; cancelling is the merchant's call.
    t.clock.set(s.next_due_at);
    await pump();
    s = await sub(s.id);
    assert.equal(s.periods_invoiced, 2);
    assert.equal(s.status, 'active');
    assert.equal((await m.test.post(`/subscriptions/${s.id}/cancel`)).body.status, 'cancelled');
  });
});

describe('reading, listing and cancelling', () => {
  test('cancel through the API: cancelled (reason merchant), its open payment withdrawn, the customer told; again → 422', async () => {
    const email = customer();
    let s = await create({ customer_email: email, grace_days: 2 });
    const open = s.invoices[0].payment_id;
    const res = await m.test.post(`/subscriptions/${s.id}/cancel`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    s = res.body;
    assert.deepEqual(Object.keys(s), FIELDS);
    assert.equal(s.status, 'cancelled');
    assert.equal(s.cancellation_reason, 'merchant');
    assert.equal(s.cancelled_at, t.clock.now().toISOString());
    assert.equal(
      (await m.test.get(`/payments/${open}`)).body.status,
      'cancelled',
      'a payment still waiting is withdrawn',
    );
    assertError(await m.test.post(`/subscriptions/${s.id}/cancel`), 422, 'invalid_state', null);
    await pump();
    const notice = await smtp.waitFor((x) => x.to === email && /^Subscription cancelled/.test(x.subject));
    assert.match(notice.text, /Corner <b>Café<\/b> cancelled it\./);
    // Nothing is billed after a cancellation.
    t.clock.set(new Date(new Date(s.next_due_at).getTime() + HOUR));
    await pump();
    assert.equal((await sub(s.id)).periods_invoiced, 1);
    assert.deepEqual(subEvents(s.id).slice(-1), ['subscription.cancelled']);
  });

  test('mode and merchant scoping: a test subscription is not found on the live API nor by another merchant', async () => {
    const s = await create({ customer_email: customer() });
    assertError(await m.live.get(`/subscriptions/${s.id}`), 404, 'not_found', null);
    assertError(await m.live.post(`/subscriptions/${s.id}/cancel`), 404, 'not_found', null);
    const other = await t.merchant({ name: 'Other shop' });
    assertError(await other.test.get(`/subscriptions/${s.id}`), 404, 'not_found', null);
    assertError(await other.test.post(`/subscriptions/${s.id}/cancel`), 404, 'not_found', null);
    assertError(await other.test.post(`/test/subscriptions/${s.id}/advance`), 404, 'not_found', null);
    assert.equal((await other.test.get('/subscriptions')).body.data.length, 0);
    assertError(await m.test.get('/subscriptions/sub_nope'), 400, 'invalid_request', 'id');
    assertError(await m.test.get(`/subscriptions/sub_${'0'.repeat(26)}`), 404, 'not_found', null);
  });

  test('list: newest first, cursor paging, filters by status and customer email (any case)', async () => {
    const email = customer();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await create({ customer_email: i === 2 ? email.toUpperCase() : email, title: `Plan ${i}` })).id);
    await m.test.post(`/subscriptions/${ids[1]}/cancel`);
    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/subscriptions?customer_email=${encodeURIComponent(email)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page: any = (await m.test.get(q)).body;
      assert.ok(page.data.length <= 2);
      pages.push(...page.data.map((x: any) => x.id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(pages, [...ids].reverse());
    const cancelled = (await m.test.get(`/subscriptions?customer_email=${encodeURIComponent(email)}&status=cancelled`))
      .body.data;
    assert.deepEqual(
      cancelled.map((x: any) => x.id),
      [ids[1]],
    );
    const active = (await m.test.get(`/subscriptions?customer_email=${encodeURIComponent(email)}&status=active`)).body
      .data;
    assert.deepEqual(
      active.map((x: any) => x.id),
      [ids[4], ids[3], ids[2], ids[0]],
    );
    assertError(await m.test.get('/subscriptions?status=paused'), 400, 'invalid_request', 'status');
    assertError(await m.test.get('/subscriptions?limit=101'), 400, 'invalid_request', 'limit');
    assertError(await m.test.get('/subscriptions?cursor=garbage'), 400, 'invalid_request', 'cursor');
  });

  test('the customer cancels through the link in the email (signed, expiring, no key); an altered link opens nothing', async () => {
    const email = customer();
    const s = await create({ customer_email: email, title: `Box ${XSS}`, customer_name: `Bo ${XSS}` });
    await pump();
    const mail = await smtp.waitFor((x) => x.to === email && /^Invoice/.test(x.subject));
    const link = linkIn(mail.text, '/s/sub_');
    assert.ok(link.startsWith(`${t.urls.checkout}/s/${s.id}.`));
    const page = await fetch(link);
    assert.equal(page.status, 200);
    const body = await page.text();
    assert.ok(
      body.includes('Box &lt;img src=x onerror=&quot;alert(1)&quot;&gt;') ||
        body.includes('Box &lt;img src=x onerror=&#34;alert(1)&#34;&gt;'),
      'the title is escaped',
    );
    assert.ok(!body.includes(XSS));
    assert.ok(body.includes('Corner &lt;b&gt;Café&lt;/b&gt;'));
    assert.match(body, /Cancel subscription/);
    // Altered links: another subscription id under the same signature, a changed expiry, a cut signature.
    const [, exp, mac] = link.split('/s/')[1]!.split('.');
    const other = (await create({ customer_email: customer() })).id;
    for (const bad of [
      `${other}.${exp}.${mac}`,
      `${s.id}.${Number(exp) + 1}.${mac}`,
      `${s.id}.${exp}.${mac!.slice(1)}`,
    ]) {
      assert.equal((await fetch(`${t.urls.checkout}/s/${bad}`)).status, 404, bad);
      const post = await fetch(`${t.urls.checkout}/s/${bad}/cancel`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: t.urls.checkout },
        body: '',
        redirect: 'manual',
      });
      assert.equal(post.status, 404);
    }
    // Another site's form cannot cancel it.
    const cross = await fetch(`${link}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
      body: '',
      redirect: 'manual',
    });
    assert.equal(cross.status, 400);
    assert.equal((await sub(s.id)).status, 'active');
    const res = await fetch(`${link}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: t.urls.checkout },
      body: '',
      redirect: 'manual',
    });
    assert.equal(res.status, 303);
    const after = await sub(s.id);
    assert.equal(after.status, 'cancelled');
    assert.equal(after.cancellation_reason, 'customer');
    assert.equal(after.invoices[0].status, 'cancelled');
    const shown = await (await fetch(`${t.urls.checkout}${res.headers.get('location')}`)).text();
    assert.match(shown, /Your subscription is cancelled/);
    assert.ok(!shown.includes('Cancel subscription</button>'));
    await pump();
    const confirm = await smtp.waitFor((x) => x.to === email && /^Subscription cancelled/.test(x.subject));
    assert.match(confirm.text, /You cancelled it with the link/);
    // The link expires: 30 days after the email at the least, later it is refused with 410.
    t.clock.advance(400 * DAY_MS);
    assert.equal((await fetch(link)).status, 410);
  });

  test('markup in the title, the customer name and the merchant name is inert in every email', async () => {
    const email = customer();
    const s = await create({ customer_email: email, title: `Plan ${XSS}`, customer_name: `Eve ${XSS}`, grace_days: 1 });
    await pump();
    t.clock.advance(DAY_MS);
    await pump();
    await m.test.post(`/subscriptions/${s.id}/cancel`).catch(() => {});
    await pump();
    const mails = await Promise.all(
      [/^Invoice/, /^Overdue|^Subscription cancelled/].map((re) =>
        smtp.waitFor((x) => x.to === email && re.test(x.subject)),
      ),
    );
    assert.ok(mails.length >= 2);
    for (const mail of mailsTo(email)) {
      assert.ok(!mail.html.includes('<img'), `no live markup in ${mail.subject}`);
      assert.ok(!mail.html.includes('<b>Café'), `merchant name escaped in ${mail.subject}`);
      assert.ok(mail.html.includes('&lt;img src=x onerror='), `title shown as text in ${mail.subject}`);
      assert.ok(mail.text.includes(XSS), 'the plain-text part shows the text as written');
      assert.ok(!/[\r\n]/.test(mail.subject));
    }
  });
});

describe('test mode: advance', () => {
  test('a year of weekly renewals in a minute: each advance invoices the next period, with the real email and webhooks', async () => {
    const email = customer();
    let s = await create({
      customer_email: email,
      interval: 'week',
      interval_count: 4,
      amount_usd_cents: 700,
      grace_days: 2,
    });
    const startedAt = new Date(s.started_at).getTime();
    await pay(s.invoices[0].payment_id);
    for (let period = 2; period <= 13; period++) {
      const res = await m.test.post(`/test/subscriptions/${s.id}/advance`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      s = res.body;
      assert.equal(s.periods_invoiced, period);
      assert.equal(s.status, 'active');
      assert.equal(s.next_due_at, new Date(startedAt + period * 28 * DAY_MS).toISOString());
      await pay(s.invoices[period - 1].payment_id);
    }
    s = await sub(s.id);
    assert.equal(s.periods_paid, 13);
    await pump();
    for (let period = 1; period <= 13; period++)
      await smtp.waitFor((x) => x.to === email && x.text.includes(`Period: ${period} (`));
    assert.equal(mailsTo(email).length, 13);
    assert.equal(subEvents(s.id).filter((x) => x === 'subscription.invoiced').length, 13);
    assert.equal(subEvents(s.id).filter((x) => x === 'subscription.paid').length, 13);
  });

  test('advancing an unpaid subscription runs grace on the way: past due, a fresh payment each day, then cancelled; live → 404', async () => {
    const email = customer();
    let s = await create({ customer_email: email, grace_days: 2 });
    s = (await m.test.post(`/test/subscriptions/${s.id}/advance`)).body;
    assert.equal(s.status, 'cancelled');
    assert.equal(s.cancellation_reason, 'unpaid');
    assert.deepEqual(
      s.invoices.map((i: any) => [i.period, i.status]),
      [
        [1, 'expired'],
        [1, 'expired'],
      ],
    );
    await pump();
    assert.equal(mailsTo(email).filter((x) => /^Overdue/.test(x.subject)).length, 1);
    await smtp.waitFor((x) => x.to === email && /^Subscription cancelled/.test(x.subject));
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.past_due',
      'subscription.invoiced',
      'subscription.cancelled',
    ]);
    assertError(await m.test.post(`/test/subscriptions/${s.id}/advance`), 422, 'invalid_state', null);
    const live = await m.live.post(`/test/subscriptions/${s.id}/advance`);
    assert.equal(live.status, 404);
    assert.equal(live.body.error.code, 'not_found');
  });
});

describe('charged automatically (test mode: the simulator)', () => {
  const simulate = (id: string, outcome: string) => m.test.post(`/test/subscriptions/${id}/simulate`, { outcome });
  const balance = async () => (await m.test.get('/balance')).body.available_usd_cents as number;

  test('granted once: the due period is charged at once, and each advance charges the next; no invoice email, a receipt each time', async () => {
    const email = customer();
    let s = await create({ customer_email: email, collection: 'charge_automatically', grace_days: 3 });
    assert.equal(s.collection, 'charge_automatically');
    assert.deepEqual(s.grant, NO_GRANT);
    // No grant yet: the first period is invoiced by email, as for any subscription.
    await pump();
    await smtp.waitFor((x) => x.to === email && /^Invoice/.test(x.subject));
    const before = await balance();

    const res = await simulate(s.id, 'grant');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    s = res.body;
    assert.equal(s.grant.status, 'active');
    assert.match(s.grant.token, /^[a-z0-9-]+:usdc$/, 'the first test network with USDC');
    assert.equal(s.grant.amount_per_period, '15000000');
    assert.equal(s.grant.period_seconds, 28 * 86_400);
    assert.equal(s.grant.charges, 1);
    assert.equal(s.periods_paid, 1);
    assert.equal(s.invoices[0].status, 'paid');
    assert.equal(s.charges.length, 1);
    const c = s.charges[0];
    assert.deepEqual(
      { ...c, id: 0, created_at: 0, settled_at: 0 },
      {
        id: 0,
        period: 1,
        attempt: 1,
        status: 'succeeded',
        amount: '15000000',
        token: s.grant.token,
        payment_id: s.invoices[0].payment_id,
        transaction: c.transaction,
        failure_reason: null,
        failure_message: null,
        created_at: 0,
        settled_at: 0,
      },
    );
    assert.match(c.transaction, /^0xsim/);
    // The payment is paid like any other: its deposit is the charge's transaction, the merchant credited.
    const p = (await m.test.get(`/payments/${c.payment_id}`)).body;
    assert.equal(p.status, 'paid');
    assert.equal(p.attempts.at(-1).deposits[0].tx_hash, c.transaction);
    await pump();
    assert.equal(await balance(), before + 1485);
    const paid = eventsOf(s.id).find((e) => e.type === 'subscription.paid')!;
    assert.equal(paid.data.charges[0].transaction, c.transaction, 'subscription.paid carries the charge');
    await smtp.waitFor((x) => x.to === email && /^Receipt/.test(x.subject) && x.text.includes(c.transaction));

    for (let period = 2; period <= 3; period++) {
      s = (await m.test.post(`/test/subscriptions/${s.id}/advance`)).body;
      assert.equal(s.periods_invoiced, period);
      assert.equal(s.periods_paid, period, 'charged as it fell due');
      assert.equal(s.charges.at(-1).status, 'succeeded');
    }
    await pump();
    assert.equal(
      mailsTo(email).filter((x) => /^Invoice/.test(x.subject)).length,
      1,
      'only the period before the grant',
    );
    assert.equal(mailsTo(email).filter((x) => /^Receipt/.test(x.subject)).length, 3);
    assert.equal(await balance(), before + 3 * 1485);
    assert.deepEqual(subEvents(s.id), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.granted',
      'subscription.paid',
      'subscription.invoiced',
      'subscription.paid',
      'subscription.invoiced',
      'subscription.paid',
    ]);
  });

  test('an empty wallet: charge_failed with the reason, the payment to pay by hand mailed, retried, then paid once funded within grace', async () => {
    const email = customer();
    let s = await create({ customer_email: email, collection: 'charge_automatically', grace_days: 3 });
    await simulate(s.id, 'grant');
    assert.equal((await simulate(s.id, 'insufficient_funds')).status, 200);
    s = (await m.test.post(`/test/subscriptions/${s.id}/advance`)).body;
    const [failed, retry] = s.charges.slice(1);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure_reason, 'insufficient_funds');
    assert.equal(retry.status, 'pending');
    assert.equal(retry.attempt, 2);
    assert.equal(s.periods_paid, 1);
    await pump();
    const e = eventsOf(s.id).find((x) => x.type === 'subscription.charge_failed')!;
    assert.equal(e.data.charges[1].failure_reason, 'insufficient_funds');
    const mail = await smtp.waitFor((x) => x.to === email && /^Payment failed/.test(x.subject));
    assert.match(mail.text, /did not hold enough/);
    assert.ok(mail.text.includes(s.invoices[1].checkout_url), 'the payment to pay by hand');
    // Funded again; the retry (an hour after the due time, on the subscription's clock) goes through.
    await simulate(s.id, 'grant');
    t.clock.advance(HOUR + 1000);
    await pump();
    s = await sub(s.id);
    assert.equal(s.charges.at(-1).status, 'succeeded');
    assert.equal(s.periods_paid, 2);
    assert.equal(s.status, 'active');
    assert.equal(mailsTo(email).filter((x) => /^Payment failed/.test(x.subject)).length, 1, 'told once per period');
  });

  test('revoked: grant_ended, and the next period is invoiced by email with nothing charged', async () => {
    const email = customer();
    let s = await create({ customer_email: email, collection: 'charge_automatically' });
    await simulate(s.id, 'grant');
    s = (await simulate(s.id, 'revoke')).body;
    assert.equal(s.grant.status, 'revoked');
    assert.equal(s.grant.next_charge_at, null);
    s = (await m.test.post(`/test/subscriptions/${s.id}/advance`)).body;
    assert.equal(s.charges.length, 1, 'nothing charged after the revoke');
    assert.equal(s.invoices[1].status, 'waiting');
    await pump();
    assert.ok(subEvents(s.id).includes('subscription.grant_ended'));
    await smtp.waitFor((x) => x.to === email && /^Invoice/.test(x.subject) && x.text.includes('Period: 2 ('));
  });

  test('a hand payment with money on its way is waited for: the grant charges nothing while it confirms, and nothing once it pays the period', async () => {
    let s = await create({ customer_email: customer(), collection: 'charge_automatically', grace_days: 3 });
    const inv = s.invoices[0].payment_id;
    const attempt = (await m.test.post(`/payments/${inv}/attempts`, { chain: 'base', token: 'base:usdc' })).body
      .attempts[0];
    const d = deposit(attempt, BigInt(attempt.pay_amount), 9_000n);
    await t.kasse.payments.deposits.recordDeposits('test', [d]);
    assert.match((await m.test.get(`/payments/${inv}`)).body.status, /^(detected|confirming)$/);
    const before = await balance();
    s = (await simulate(s.id, 'grant')).body;
    assert.equal(s.grant.status, 'active');
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.status]),
      [[1, 'pending']],
      'not charged while the hand payment confirms',
    );
    assert.equal(s.periods_paid, 0);
    t.clock.advance(2 * 60_000);
    await pump();
    assert.equal((await sub(s.id)).charges[0].status, 'pending', 'looked at again: still confirming');
    // The hand payment confirms and pays the period: the charge is not made.
    await t.kasse.payments.deposits.headAdvanced('test', 'base', 9_010n);
    t.clock.advance(2 * 60_000);
    await pump();
    s = await sub(s.id);
    assert.equal(s.invoices[0].status, 'paid');
    assert.equal(s.periods_paid, 1);
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.status]),
      [[1, 'cancelled']],
    );
    assert.equal(s.grant.charges, 0);
    assert.equal(s.invoices.length, 1, 'no second payment of the period');
    assert.equal(await balance(), before + 1485, 'credited once');
  });

  test('granted while an earlier period is overdue: the grant starts at the period it charges, the overdue one is left to pay by hand', async () => {
    const WEEK = 7 * DAY_MS;
    let s = await create({
      customer_email: customer(),
      collection: 'charge_automatically',
      interval: 'week',
      grace_days: 10,
    });
    s = (await m.test.post(`/test/subscriptions/${s.id}/advance`)).body;
    assert.equal(s.periods_invoiced, 2);
    assert.equal(s.status, 'past_due', 'period 1 is overdue, within grace');
    s = (await simulate(s.id, 'grant')).body;
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.status]),
      [[2, 'succeeded']],
    );
    // Twelve periods from period 2, the one charged: period 1 is not among what the payer allowed.
    const started = Date.parse(s.started_at);
    assert.equal(Date.parse(s.grant.expires_at), started + 13 * WEEK);
    assert.equal(s.invoices.find((i: any) => i.period === 1 && i.status === 'waiting')?.period, 1, 'to pay by hand');
    assert.equal(s.periods_paid, 1);
  });

  test('every period that falls back to invoices is mailed its invoice: a charge revoked before it was tried, and one whose time passed', async () => {
    const WEEK = 7 * DAY_MS;
    const invoiceOf = (email: string, period: number) =>
      mailsTo(email).filter((x) => /^Invoice/.test(x.subject) && x.text.includes(`Period: ${period} (`));
    // Period 2 is invoiced under the grant (no invoice mail: its charge is due); the payer revokes before it is tried.
    const email = customer();
    let s = await create({
      customer_email: email,
      collection: 'charge_automatically',
      interval: 'week',
      grace_days: 3,
    });
    await simulate(s.id, 'grant');
    t.clock.advance(WEEK);
    await t.kasse.subscriptions.scheduler.runDue();
    s = await sub(s.id);
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.status]),
      [
        [1, 'succeeded'],
        [2, 'pending'],
      ],
    );
    s = (await simulate(s.id, 'revoke')).body;
    assert.equal(s.charges.at(-1).status, 'cancelled');
    await pump();
    await smtp.waitFor((x) => x.to === email && /^Invoice/.test(x.subject) && x.text.includes('Period: 2 ('));

    // Kasse was down past the next period's slot: period 2 cannot be charged any more, period 3 is.
    const late = customer();
    let l = await create({ customer_email: late, collection: 'charge_automatically', interval: 'week', grace_days: 3 });
    await simulate(l.id, 'grant');
    t.clock.advance(2 * WEEK + 60_000);
    await pump();
    l = await sub(l.id);
    assert.deepEqual(
      l.charges.map((c: any) => [c.period, c.status]),
      [
        [1, 'succeeded'],
        [2, 'cancelled'],
        [3, 'succeeded'],
      ],
    );
    assert.equal(l.invoices[1].status, 'waiting', 'period 2 is to be paid by hand');
    await smtp.waitFor((x) => x.to === late && /^Invoice/.test(x.subject) && x.text.includes('Period: 2 ('));
    await pump();
    assert.equal(invoiceOf(email, 2).length, 1, 'once');
    assert.equal(invoiceOf(late, 2).length, 1, 'once');
    assert.equal(invoiceOf(late, 3).length, 0, 'period 3 was charged');
  });

  test('refused: simulating on an invoiced subscription, revoking with no grant, an unknown outcome; nothing changes', async () => {
    const invoiced = await create({ customer_email: customer() });
    assertError(await simulate(invoiced.id, 'grant'), 422, 'invalid_state', null);
    const charged = await create({ customer_email: customer(), collection: 'charge_automatically' });
    assertError(await simulate(charged.id, 'revoke'), 422, 'invalid_state', null);
    assertError(await simulate(charged.id, 'insufficient_funds'), 422, 'invalid_state', null);
    assertError(await simulate(charged.id, 'steal'), 400, 'invalid_request', 'outcome');
    assertError(
      await m.test.post('/subscriptions', {
        customer_email: customer(),
        title: 'x',
        amount_usd_cents: 500,
        interval: 'month',
        collection: 'charge_now',
      }),
      400,
      'invalid_request',
      'collection',
    );
    assert.deepEqual((await sub(charged.id)).grant, NO_GRANT);
    assert.equal((await m.live.post(`/test/subscriptions/${charged.id}/simulate`, { outcome: 'grant' })).status, 404);
  });
});

describe('webhooks', () => {
  test('every event arrived signed and verified by the receiver, data being the Subscription', async () => {
    await pump();
    assert.equal(hook.rejected.length, 0, JSON.stringify(hook.rejected.map((r) => r.rejected)));
    const subs = hook.events.filter((e) => e.type.startsWith('subscription.'));
    assert.deepEqual([...new Set(subs.map((e) => e.type))].sort(), [
      'subscription.cancelled',
      'subscription.charge_failed',
      'subscription.created',
      'subscription.grant_ended',
      'subscription.granted',
      'subscription.invoiced',
      'subscription.paid',
      'subscription.past_due',
    ]);
    for (const e of subs) {
      assert.deepEqual(Object.keys(e.data), FIELDS);
      assert.match(e.data.id, /^sub_[0-9A-Z]{26}$/);
    }
  });
});
