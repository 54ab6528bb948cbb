/**
 * The Medusa provider's rules that need neither Medusa nor Kasse (integrations/medusa/src/mapping.ts): amounts as
 * exact cents, every Kasse status and event as Medusa's, the address a refund goes back to, and the options.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  capturedCents,
  fromCents,
  optionsProblem,
  type PaymentFacts,
  payerAddress,
  sessionOf,
  sessionStatus,
  toCents,
  webhookReport,
} from '../../integrations/medusa/src/mapping.ts';
import { EVENT_TYPES, PAYMENT_STATUSES } from '../../src/modules/payments/model.ts';

test('toCents: decimal dollars to integer cents exactly, a fraction of a cent half up; fromCents back', () => {
  const cases: Array<[string, number]> = [
    ['25.5', 2550],
    ['25.50', 2550],
    ['0.01', 1],
    ['0.005', 1],
    ['0.0049999', 0],
    ['10.825', 1083],
    ['10.824', 1082],
    ['19.999', 2000],
    ['1000000', 100_000_000],
    ['7', 700],
    ['7.', 700],
  ];
  for (const [decimal, cents] of cases) {
    if (cents === 0) assert.throws(() => toCents(decimal), /less than a cent/);
    else assert.equal(toCents(decimal), cents, decimal);
  }
  for (const bad of ['-1', '1e3', 'abc', '', '1,5'])
    assert.throws(() => toCents(bad), /not a positive decimal amount/, bad);
  assert.throws(() => toCents('1000000.005'), /more than Kasse's largest payment/);
  assert.deepEqual([2550, 1, 0, 100_000_000].map(fromCents), ['25.50', '0.01', '0.00', '1000000.00']);
  assert.throws(() => fromCents(1.5), /whole number of cents/);
});

test('every Kasse payment status has a Medusa session status; a refunded payment is not a paid one', () => {
  const expected: Record<string, string> = {
    waiting: 'pending',
    detected: 'pending',
    confirming: 'pending',
    authorized: 'authorized',
    paid: 'captured',
    underpaid: 'requires_more',
    expired: 'canceled',
    late: 'pending',
    refunded: 'canceled',
    cancelled: 'canceled',
  };
  assert.deepEqual(Object.keys(expected).sort(), [...PAYMENT_STATUSES].sort());
  for (const status of PAYMENT_STATUSES) assert.equal(sessionStatus({ status }), expected[status], status);
  assert.equal(sessionStatus({ status: 'a-status-of-a-newer-kasse' }), 'pending');
  // A manual payment is paid from its first capture on, and captured for Medusa once all of its hold is.
  assert.equal(sessionStatus({ status: 'paid', authorization: hold(1000) }), 'authorized');
  assert.equal(sessionStatus({ status: 'paid', authorization: hold(2500) }), 'captured');
  assert.equal(sessionStatus({ status: 'refunded', authorization: hold(2500) }), 'canceled');
});

const hold = (captured: number, pending = 0) => ({
  amount_usd_cents: 2500,
  captured_usd_cents: captured,
  pending_usd_cents: pending,
  voided: false,
});

test("every payment event is reported from the payment's current status, not the event's", () => {
  const now = (status: string) => ({ ...payment([]), status });
  const expected: Record<string, [string, string]> = {
    'payment.detected': ['confirming', 'pending'],
    'payment.confirming': ['confirming', 'pending'],
    'payment.paid': ['paid', 'captured'],
    'payment.underpaid': ['underpaid', 'requires_more'],
    'payment.overpaid': ['paid', 'not_supported'],
    'payment.expired': ['expired', 'canceled'],
    'payment.late': ['late', 'pending'],
    'payment.wrong_asset': ['waiting', 'not_supported'],
    'payment.reorged': ['confirming', 'pending'],
    'payment.refunded': ['refunded', 'not_supported'],
    'payment.cancelled': ['cancelled', 'canceled'],
    'payment.authorized': ['authorized', 'authorized'],
    'payment.captured': ['paid', 'captured'],
  };
  assert.deepEqual(Object.keys(expected).sort(), [...EVENT_TYPES].sort());
  for (const type of EVENT_TYPES) {
    const [status, action] = expected[type]!;
    const report = webhookReport(type, now(status), null);
    assert.equal(report.action, action, type);
    if (action !== 'not_supported') assert.equal(report.cents, 2500, type);
  }
  assert.equal(webhookReport('refund.failed', now('paid'), null).action, 'not_supported');
  // A payment.paid read after the payment was refunded, or before it was paid, captures nothing.
  assert.equal(webhookReport('payment.paid', now('refunded'), null).action, 'canceled');
  assert.equal(webhookReport('payment.paid', now('confirming'), null).action, 'pending');
});

test("a manual payment's captures reach Medusa once, through payment.captured, for what Medusa has not recorded", () => {
  const manual = (status: string, authorization: ReturnType<typeof hold>) => ({
    ...payment([]),
    status,
    authorization,
  });
  // 10.00 of 25.00 captured on Kasse's API: payment.paid and payment.captured both arrive; the capture is reported once.
  const partly = manual('paid', hold(1000));
  assert.deepEqual(webhookReport('payment.paid', partly, 0), { action: 'authorized', cents: 2500 });
  assert.deepEqual(webhookReport('payment.captured', partly, 0), { action: 'captured', cents: 1000 });
  // Recorded already, or Medusa captured those 10.00 itself and Kasse settled them: nothing more to record.
  assert.equal(webhookReport('payment.captured', partly, 1000).action, 'not_supported');
  // The rest captured from Medusa (recorded there at once), settled later: nothing more either.
  const whole = manual('paid', hold(2500));
  assert.equal(webhookReport('payment.captured', whole, 2500).action, 'not_supported');
  assert.deepEqual(webhookReport('payment.paid', whole, 2500), { action: 'authorized', cents: 2500 });
  // Two captures on Kasse's dashboard before Medusa read either: the first event records both, the second nothing.
  assert.deepEqual(webhookReport('payment.captured', manual('paid', hold(1500)), 0), {
    action: 'captured',
    cents: 1500,
  });
  assert.equal(webhookReport('payment.captured', manual('paid', hold(1500)), 1500).action, 'not_supported');
  assert.deepEqual(webhookReport('payment.authorized', manual('authorized', hold(0)), 0), {
    action: 'authorized',
    cents: 2500,
  });
});

function payment(deposits: PaymentFacts['attempts'][number]['deposits'], paid = true): PaymentFacts {
  return {
    id: 'pay_1',
    status: paid ? 'paid' : 'underpaid',
    price_amount: 2500,
    paid_attempt_id: paid ? 'att_2' : null,
    metadata: { medusa_session_id: 'payses_1' },
    attempts: [
      { id: 'att_1', token: 'base:usdc', deposits: [{ token: 'base:usdc', from: '0xOTHER', status: 'confirmed' }] },
      { id: 'att_2', token: 'base:usdc', deposits },
    ],
  };
}

test("payerAddress: the one sender of the paid attempt's confirmed money, else none", () => {
  const a = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
  const confirmed = (from: string | null, token = 'base:usdc', status = 'confirmed') => ({ token, from, status });
  assert.equal(payerAddress(payment([confirmed(a)])), a);
  assert.equal(payerAddress(payment([confirmed(a), confirmed(a.toLowerCase(), 'base:usdc', 'final')])), a);
  assert.equal(payerAddress(payment([confirmed(a), confirmed('0x0000000000000000000000000000000000000001')])), null);
  assert.equal(payerAddress(payment([confirmed(null)])), null, 'a sender Kasse could not tell');
  assert.equal(payerAddress(payment([confirmed(a), confirmed(null)])), null);
  assert.equal(payerAddress(payment([confirmed(a), confirmed('0xB', 'base:usdc', 'orphaned')])), a);
  assert.equal(payerAddress(payment([confirmed(a), confirmed('0xB', 'base:eth')])), a, 'a wrong asset is not paid');
  assert.equal(payerAddress(payment([confirmed(a)], false)), null, 'no paid attempt');
});

test('capturedCents and sessionOf', () => {
  assert.equal(capturedCents(payment([])), 2500);
  assert.equal(
    capturedCents({
      ...payment([]),
      authorization: { ...hold(1000), voided: true },
    }),
    1000,
  );
  assert.equal(sessionOf(payment([])), 'payses_1');
  assert.equal(sessionOf({ metadata: {} }), null);
  assert.equal(sessionOf({ metadata: { medusa_session_id: 7 } }), null);
});

test('optionsProblem: both capture modes are accepted; a trailing slash on /v1 is fine', () => {
  const options = { apiKey: 'kasse_live_x', baseUrl: 'https://api.pay.example.com/v1/', webhookSecret: 'whsec_x' };
  assert.equal(optionsProblem(options), null);
  assert.equal(optionsProblem({ ...options, capture: 'manual' }), null);
  assert.equal(optionsProblem({ ...options, capture: 'automatic' }), null);
  assert.match(optionsProblem({ ...options, capture: 'Manual' })!, /option capture must be "automatic" or "manual"/);
  assert.match(optionsProblem([])!, /options are missing/);
  assert.match(optionsProblem({ ...options, apiKey: 'kasse_live_' })!, /not a Kasse API key/);
});
