/**
 * Hold and capture through the public API on the test-mode simulator: a manual payment is authorized by the
 * simulator, captured in parts (with Idempotency-Key), voided by the merchant or at its deadline, refunded; every
 * step through the real state machine, ledger and signed webhooks, checked as a merchant would (the Payment, the
 * events that arrived, the balance, the statements). Bad input gets the Error body and changes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HOUR } from '../../src/core/clock.ts';

const DAY = 24 * HOUR;
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError, ok } from '../harness/expect.ts';
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

let order = 0;
async function held(body: Record<string, unknown> = {}) {
  return ok(
    m.test.post('/payments', {
      price_amount: 2500,
      price_currency: 'USD',
      order_id: `hold-${++order}`,
      capture_method: 'manual',
      ...body,
    }),
    201,
  );
}
async function authorized(body: Record<string, unknown> = {}) {
  const p = await held(body);
  return ok(m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'authorized' }));
}
const get = async (id: string) => ok(m.test.get(`/payments/${id}`));
const available = async () => (await ok(m.test.get('/balance'))).available_usd_cents as number;
const capture = (id: string, body?: unknown, headers?: Record<string, string>) =>
  m.test.post(`/payments/${id}/capture`, body, headers);
const voidIt = (id: string, headers?: Record<string, string>) =>
  m.test.post(`/payments/${id}/void`, undefined, headers);
/** What the simulated sender does on the workers' next pass, then the webhooks it caused. */
async function settle() {
  await t.kasse.capture.settleSimulated();
  await t.kasse.webhooks.drain();
}
async function events(id: string): Promise<string[]> {
  await t.kasse.webhooks.drain();
  return r.events.filter((e) => e.data?.id === id).map((e) => e.type);
}

describe('creating a held payment', () => {
  test('capture_method manual: the Payment shows its hold terms; an automatic one is the spec object', async () => {
    const now = t.clock.now().getTime();
    const p = await held();
    assert.equal(p.status, 'waiting');
    assert.equal(p.capture_method, 'manual');
    assert.deepEqual(p.authorization, {
      amount_usd_cents: 2500,
      captured_usd_cents: 0,
      pending_usd_cents: 0,
      capture_before: new Date(now + 7 * DAY).toISOString(),
      refund_before: new Date(now + 37 * DAY).toISOString(),
      voided: false,
      captures: [],
    });
    const auto = await ok(
      m.test.post('/payments', {
        price_amount: 100,
        price_currency: 'USD',
        order_id: 'auto',
        capture_method: 'automatic',
      }),
      201,
    );
    assert.equal('capture_method' in auto, false);
    assert.equal('authorization' in auto, false);
    const later = await held({ capture_before: new Date(now + 3 * DAY + 1500).toISOString() });
    assert.equal(later.authorization.capture_before, new Date(now + 3 * DAY + 1000).toISOString(), 'whole seconds');
  });

  test('GET /currencies says which coins can be held; a manual payment refuses the others (400 capture_method)', async () => {
    const { data } = await ok(m.test.get('/currencies'));
    const usdc = data.find((c: any) => c.token === 'base:usdc');
    const eth = data.find((c: any) => c.token === 'base:eth');
    assert.equal(usdc.holdable, true);
    assert.equal(eth.holdable, false);
    for (const c of data) assert.equal(typeof c.holdable, 'boolean', c.token);
    const before = (await ok(m.test.get('/payments?limit=100'))).data.length;
    assertError(
      await m.test.post('/payments', {
        price_amount: 2500,
        price_currency: 'USD',
        order_id: 'x',
        capture_method: 'manual',
        token: 'base:eth',
      }),
      400,
      'invalid_request',
      'capture_method',
    );
    const p = await held();
    assertError(
      await m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:eth' }),
      400,
      'invalid_request',
      'token',
    );
    const chosen = await ok(m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:usdc' }), 201);
    assert.equal(chosen.attempts[0].uri, null, 'a held coin choice is not paid by sending');
    assert.equal((await ok(m.test.get('/payments?limit=100'))).data.length, before + 1);
  });

  test('bad hold terms are refused with the field named, and nothing is created', async () => {
    const before = (await ok(m.test.get('/payments?limit=100'))).data.length;
    const now = t.clock.now().getTime();
    const base = { price_amount: 2500, price_currency: 'USD', order_id: 'bad' };
    for (const [body, param] of [
      [{ capture_method: 'later' }, 'capture_method'],
      [{ capture_before: new Date(now + 3 * DAY).toISOString() }, 'capture_before'],
      [{ capture_method: 'manual', capture_before: new Date(now + DAY).toISOString() }, 'capture_before'],
      [{ capture_method: 'manual', capture_before: new Date(now + 31 * DAY).toISOString() }, 'capture_before'],
      [{ capture_method: 'manual', capture_before: 'tomorrow' }, 'capture_before'],
    ] as const)
      assertError(await m.test.post('/payments', { ...base, ...body }), 400, 'invalid_request', param);
    assert.equal((await ok(m.test.get('/payments?limit=100'))).data.length, before);
  });
});

describe('authorize, capture in parts, void, refund', () => {
  test('the simulator authorizes; two captures make it paid and credit each with its fee; a void releases the rest', async () => {
    const balance0 = await available();
    const p = await authorized();
    assert.equal(p.status, 'authorized');
    assert.equal(p.attempts[0].token, 'base:usdc');
    assert.equal(p.attempts[0].status, 'authorized');
    assert.deepEqual(await events(p.id), ['payment.authorized']);
    assert.equal(await available(), balance0, 'nothing credited while held');

    // A part, with an Idempotency-Key: answered at once, pending until it settles.
    const key = { 'idempotency-key': `cap-${p.id}-1` };
    const asked = await ok(capture(p.id, { amount_usd_cents: 1000 }, key));
    assert.equal(asked.status, 'authorized');
    assert.equal(asked.authorization.pending_usd_cents, 1000);
    assert.equal(asked.authorization.captured_usd_cents, 0);
    assert.deepEqual(await ok(capture(p.id, { amount_usd_cents: 1000 }, key)), asked, 'a retry replays the answer');
    assertError(await capture(p.id, { amount_usd_cents: 999 }, key), 409, 'idempotency_conflict', 'Idempotency-Key');
    await settle();
    const first = await get(p.id);
    assert.equal(first.status, 'paid');
    assert.equal(first.authorization.captured_usd_cents, 1000);
    assert.equal(first.authorization.pending_usd_cents, 0);
    assert.equal(first.authorization.captures.length, 1);
    assert.equal(first.authorization.captures[0].amount_usd_cents, 1000);
    assert.equal(first.authorization.captures[0].amount, '10000000');
    assert.match(first.authorization.captures[0].tx_hash, /^0xsim/);
    assert.equal(first.attempts[0].received_amount, '10000000');
    assert.deepEqual(await events(p.id), ['payment.authorized', 'payment.paid', 'payment.captured']);
    const paidEvent = r.events.find((e) => e.data?.id === p.id && e.type === 'payment.captured')!;
    assert.equal(paidEvent.data.authorization.captures.at(-1).amount_usd_cents, 1000, 'the event carries the amount');
    assert.equal(await available(), balance0 + 990, '1 % fee on what was captured');

    // More than remains: refused, naming the remainder; nothing changes.
    const refused = await capture(p.id, { amount_usd_cents: 1501 });
    assertError(refused, 422, 'invalid_state', 'amount_usd_cents');
    assert.match(refused.body.error.message, /Only 1500 US cents remain/);
    const second = await ok(capture(p.id, { amount_usd_cents: 600 }));
    assert.equal(second.authorization.pending_usd_cents, 600);
    assert.match(
      (await capture(p.id, { amount_usd_cents: 901 })).body.error.message,
      /900 US cents remain.*600 being captured/,
    );
    await settle();
    const twice = await get(p.id);
    assert.equal(twice.status, 'paid');
    assert.equal(twice.authorization.captured_usd_cents, 1600);
    assert.equal(twice.attempts[0].received_amount, '16000000');
    assert.deepEqual(await events(p.id), [
      'payment.authorized',
      'payment.paid',
      'payment.captured',
      'payment.captured',
    ]);
    assert.equal(await available(), balance0 + 990 + 594);

    // The rest goes back: the payment stays paid, the hold is voided, no event.
    const voiding = await ok(voidIt(p.id, { 'idempotency-key': `void-${p.id}` }));
    assert.equal(voiding.status, 'paid');
    assertError(await capture(p.id, { amount_usd_cents: 100 }), 422, 'invalid_state');
    await settle();
    const voided = await get(p.id);
    assert.equal(voided.status, 'paid');
    assert.equal(voided.authorization.voided, true);
    assert.equal(voided.authorization.captured_usd_cents, 1600);
    assertError(await capture(p.id), 422, 'invalid_state');
    assertError(await voidIt(p.id), 422, 'invalid_state');
    assert.equal((await events(p.id)).length, 4);

    // A refund returns what was captured and takes back both credits.
    const refund = await ok(
      m.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' }),
      202,
    );
    assert.equal(refund.amount, '16000000');
    await t.kasse.refunds.settleSimulated();
    assert.equal((await get(p.id)).status, 'refunded');
    assert.equal(await available(), balance0);
    assert.equal(await assertEveryMerchantReconciles(t.kasse), 1);
  });

  test('void before any capture: cancelled, payment.cancelled, nothing credited', async () => {
    const balance0 = await available();
    const p = await authorized();
    const answer = await ok(voidIt(p.id));
    assert.equal(answer.status, 'authorized', 'until the void settles');
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'cancelled');
    assert.equal(after.authorization.voided, true);
    assert.deepEqual(await events(p.id), ['payment.authorized', 'payment.cancelled']);
    assert.equal(await available(), balance0);
  });

  test('bad captures get the Error body and change nothing', async () => {
    const p = await authorized();
    const auto = await ok(
      m.test.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'auto' }),
      201,
    );
    await ok(m.test.post(`/test/payments/${auto.id}/simulate`, { outcome: 'paid' }));
    const waiting = await held();
    for (const [res, status, code, param] of [
      [await capture(p.id, { amount_usd_cents: 0 }), 400, 'invalid_request', 'amount_usd_cents'],
      [await capture(p.id, { amount_usd_cents: -5 }), 400, 'invalid_request', 'amount_usd_cents'],
      [await capture(p.id, { amount_usd_cents: 12.5 }), 400, 'invalid_request', 'amount_usd_cents'],
      [await capture(p.id, { amount_usd_cents: 2501 }), 422, 'invalid_state', 'amount_usd_cents'],
      [await capture(p.id, { amount: 5 }), 400, 'invalid_request', 'amount'],
      [await capture(auto.id), 422, 'invalid_state', null],
      [await voidIt(auto.id), 422, 'invalid_state', null],
      [await capture(waiting.id), 422, 'invalid_state', null],
      [await voidIt(waiting.id), 422, 'invalid_state', null],
      [await capture('pay_000000000000000000000000000000000000'), 404, 'not_found', null],
    ] as const)
      assertError(res, status, code, param);
    assertError(
      await m.test.post(`/test/payments/${auto.id}/simulate`, { outcome: 'authorized' }),
      422,
      'invalid_state',
    );
    const waitingHeld = await held();
    assertError(
      await m.test.post(`/test/payments/${waitingHeld.id}/simulate`, { outcome: 'paid' }),
      422,
      'invalid_state',
    );
    assert.deepEqual(await get(p.id), p);
    assert.equal(await t.kasse.capture.settleSimulated(), 0, 'no transfer was asked for');
  });
});

describe('the deadline', () => {
  test('at capture_before Kasse voids what is left; captures are refused from then on', async () => {
    const p = await authorized();
    t.clock.set(Date.parse(p.authorization.capture_before) - 1);
    await t.kasse.capture.runDue();
    await settle();
    assert.equal((await get(p.id)).status, 'authorized', 'nothing is due before the deadline');
    t.clock.advance(1);
    assertError(await capture(p.id), 422, 'invalid_state');
    await t.kasse.capture.runDue();
    assert.equal(await t.kasse.capture.runDue(), 0, 'one void at a time');
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'cancelled');
    assert.equal(after.authorization.voided, true);
    assert.deepEqual(await events(p.id), ['payment.authorized', 'payment.cancelled']);
  });

  test('a capture asked just before the deadline and the void at it both settle: captured part paid, the rest back', async () => {
    const balance0 = await available();
    const p = await authorized();
    t.clock.set(Date.parse(p.authorization.capture_before) - 1000);
    await ok(capture(p.id, { amount_usd_cents: 700 }));
    t.clock.advance(1000);
    await t.kasse.capture.runDue();
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'paid');
    assert.equal(after.authorization.captured_usd_cents, 700);
    assert.equal(after.authorization.voided, true);
    assert.deepEqual(await events(p.id), ['payment.authorized', 'payment.paid', 'payment.captured']);
    assert.equal(await available(), balance0 + 693);
    assert.equal(await assertEveryMerchantReconciles(t.kasse), 1);
  });

  test("the merchant's void after capture_before is taken: it is what the deadline's void does", async () => {
    const p = await authorized();
    t.clock.set(Date.parse(p.authorization.capture_before) + 1000);
    assertError(await capture(p.id), 422, 'invalid_state');
    const answer = await ok(voidIt(p.id));
    assert.equal(answer.status, 'authorized', 'until the void settles');
    assert.equal(await t.kasse.capture.runDue(), 0, 'the due pass finds the void on its way');
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'cancelled');
    assert.equal(after.authorization.voided, true);
    assert.deepEqual(await events(p.id), ['payment.authorized', 'payment.cancelled']);
  });

  test('a due hold the pass cannot act on (no escrow runs for its network) does not keep it from the next one', async () => {
    const stuck = await authorized();
    const due = await authorized();
    // The first in deadline order is on a network nothing serves here, as after its escrow was removed from the
    // networks file.
    const moved = await t.kasse.db
      .updateTable('holds')
      .set({
        simulated: false,
        chain: 'gone',
        capture_before: new Date(Date.parse(due.authorization.capture_before) - 1000),
      })
      .where('payment_id', '=', stuck.id)
      .returning(['chain'])
      .execute();
    assert.equal(moved.length, 1);
    t.clock.set(Date.parse(due.authorization.capture_before));
    assert.equal(await t.kasse.capture.runDue(1), 1, 'one hold a page: the second page voids the due one');
    await settle();
    assert.equal((await get(due.id)).status, 'cancelled');
    assert.equal((await get(stuck.id)).status, 'authorized', 'left for when its network is served');
    // Served again, it is voided like any.
    await t.kasse.db
      .updateTable('holds')
      .set({ simulated: true, chain: 'base' })
      .where('payment_id', '=', stuck.id)
      .execute();
    assert.equal(await t.kasse.capture.runDue(1), 1);
    await settle();
    assert.equal((await get(stuck.id)).status, 'cancelled');
  });
});

describe('races', () => {
  /** The hold's operations as stored: what Kasse asked the chain to do. */
  const operations = (paymentId: string) =>
    t.kasse.db
      .selectFrom('hold_operations')
      .select(['kind', 'amount_cents', 'status'])
      .where('payment_id', '=', paymentId)
      .execute();

  test('a capture of everything racing the void at capture_before: exactly one wins, balances exact', async () => {
    const balance0 = await available();
    // A moment before the deadline the capture wins: the due pass finds nothing to void.
    const early = await authorized();
    t.clock.set(Date.parse(early.authorization.capture_before) - 1);
    const [captured] = await Promise.all([capture(early.id), t.kasse.capture.runDue()]);
    assert.equal(captured.status, 200);
    t.clock.advance(1);
    assert.equal(await t.kasse.capture.runDue(), 0, 'nothing is left to void');
    await settle();
    const won = await get(early.id);
    assert.equal(won.status, 'paid');
    assert.equal(won.authorization.captured_usd_cents, 2500);
    assert.equal(won.authorization.voided, false);
    assert.deepEqual(await operations(early.id), [{ kind: 'capture', amount_cents: 2500, status: 'sent' }]);
    assert.equal(await available(), balance0 + 2475);

    // At the deadline the void wins: the capture racing it is refused and changes nothing.
    const late = await authorized();
    t.clock.set(Date.parse(late.authorization.capture_before));
    const [refused, acted] = await Promise.all([capture(late.id), t.kasse.capture.runDue()]);
    assertError(refused, 422, 'invalid_state');
    assert.equal(acted, 1);
    await settle();
    const lost = await get(late.id);
    assert.equal(lost.status, 'cancelled');
    assert.equal(lost.authorization.captured_usd_cents, 0);
    assert.deepEqual(await operations(late.id), [{ kind: 'void', amount_cents: null, status: 'sent' }]);
    assert.deepEqual(await events(late.id), ['payment.authorized', 'payment.cancelled']);
    assert.equal(await available(), balance0 + 2475);
    assert.equal(await assertEveryMerchantReconciles(t.kasse), 1);
  });

  test("the merchant's capture and void sent at once: one is taken, the other refused; the void replays under its key", async () => {
    const balance0 = await available();
    const p = await authorized();
    const key = { 'idempotency-key': `race-${p.id}` };
    const [c, v] = await Promise.all([capture(p.id), voidIt(p.id, key)]);
    assert.deepEqual([c.status, v.status].sort(), [200, 422], 'exactly one wins');
    await settle();
    const after = await get(p.id);
    if (c.status === 200) {
      assert.equal(after.status, 'paid');
      assert.equal(await available(), balance0 + 2475);
    } else {
      assert.equal(after.status, 'cancelled');
      assert.equal(await available(), balance0);
      assert.deepEqual(await ok(voidIt(p.id, key)), v.body, 'a retry of the void replays its answer');
    }
    assert.equal((await operations(p.id)).length, 1);
  });

  test('a refund while a capture is in flight is refused until it settles, and a capture while a refund is open', async () => {
    const balance0 = await available();
    const p = await authorized();
    await ok(capture(p.id, { amount_usd_cents: 1000 }));
    await settle();
    await ok(capture(p.id, { amount_usd_cents: 500 }));
    const refund = () =>
      m.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' });
    const early = await refund();
    assertError(early, 422, 'invalid_state');
    assert.match(early.body.error.message, /capture of this payment's hold is on its way; refund once it settles/);
    const refunds = await t.kasse.db.selectFrom('refunds').select('id').where('payment_id', '=', p.id).execute();
    assert.deepEqual(refunds, [], 'nothing was recorded');
    await settle();
    assert.equal((await get(p.id)).authorization.captured_usd_cents, 1500);
    const asked = await ok(refund(), 202);
    assert.equal(asked.amount, '15000000', 'everything captured goes back');
    const late = await capture(p.id, { amount_usd_cents: 100 });
    assertError(late, 422, 'invalid_state');
    assert.match(late.body.error.message, /A refund of this payment is on its way/);
    assert.equal(await t.kasse.capture.settleSimulated(), 0, 'no capture was asked for');
    await t.kasse.refunds.settleSimulated();
    const after = await get(p.id);
    assert.equal(after.status, 'refunded');
    assert.equal(after.authorization.captured_usd_cents, 1500);
    assert.equal(await available(), balance0, 'both credits taken back, nothing more');
    assert.equal(await assertEveryMerchantReconciles(t.kasse), 1);
  });

  test('a void while a capture is in flight is refused (the escrow would release what the capture takes)', async () => {
    const balance0 = await available();
    const p = await authorized();
    await ok(capture(p.id, { amount_usd_cents: 1000 }));
    const early = await voidIt(p.id);
    assertError(early, 422, 'invalid_state');
    assert.match(early.body.error.message, /void once the capture settles/);
    assert.deepEqual(await operations(p.id), [{ kind: 'capture', amount_cents: 1000, status: 'pending' }]);
    await settle();
    await ok(voidIt(p.id));
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'paid');
    assert.equal(after.authorization.captured_usd_cents, 1000);
    assert.equal(after.authorization.voided, true);
    assert.equal(await available(), balance0 + 990);
  });

  test('after a refund of what was captured, the rest of the hold can be voided back to the payer', async () => {
    const balance0 = await available();
    const p = await authorized();
    await ok(capture(p.id, { amount_usd_cents: 1000 }));
    await settle();
    await ok(
      m.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' }),
      202,
    );
    await t.kasse.refunds.settleSimulated();
    assert.equal((await get(p.id)).status, 'refunded');
    assertError(await capture(p.id), 422, 'invalid_state');
    const answer = await ok(voidIt(p.id));
    assert.equal(answer.status, 'refunded');
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'refunded');
    assert.equal(after.authorization.voided, true);
    assert.deepEqual(
      (await operations(p.id)).map((o) => o.kind),
      ['capture', 'void'],
    );
    assert.equal(await available(), balance0);
    assertError(await voidIt(p.id), 422, 'invalid_state');
  });

  test('while a refund of a partly captured payment is on its way, nothing is offered for capture', async () => {
    const p = await authorized();
    await ok(capture(p.id, { amount_usd_cents: 1000 }));
    await settle();
    const tenant = { mode: 'test' as const, merchantId: m.id };
    assert.equal((await t.kasse.capture.openHold(tenant, p.id))!.capturableCents, 1500);
    await ok(
      m.test.post(`/payments/${p.id}/refund`, { destination: '0x000000000000000000000000000000000000dEaD' }),
      202,
    );
    assert.equal((await t.kasse.capture.openHold(tenant, p.id))!.capturableCents, 0, 'the capture would be refused');
    assertError(await capture(p.id, { amount_usd_cents: 100 }), 422, 'invalid_state');
    await t.kasse.refunds.settleSimulated();
  });

  test('a capture landing on a payment that can no longer take it (refunded before these refusals) is kept as sent and records nothing', async () => {
    const p = await authorized();
    await ok(capture(p.id, { amount_usd_cents: 1000 }));
    await settle();
    await ok(capture(p.id, { amount_usd_cents: 500 }));
    // The state a refund taken while this capture was in flight left behind.
    await t.kasse.db.updateTable('payments').set({ status: 'refunded' }).where('id', '=', p.id).execute();
    const balance0 = await available();
    await settle();
    assert.deepEqual(
      (await operations(p.id)).map((o) => [o.kind, o.amount_cents, o.status]),
      [
        ['capture', 1000, 'sent'],
        ['capture', 500, 'sent'],
      ],
    );
    const after = await get(p.id);
    assert.equal(after.authorization.captured_usd_cents, 1000, 'the hold records no capture the payment did not take');
    assert.equal(await available(), balance0, 'nothing credited');
  });

  test('a simulated settlement that cannot be applied stays pending and holds back no other', async () => {
    const [a, b] = [await authorized(), await authorized()];
    await ok(capture(a.id, { amount_usd_cents: 300 }));
    await ok(capture(b.id, { amount_usd_cents: 400 }));
    // A's capture can no longer be applied (its operation's record is gone); B's settles all the same.
    const [gone] = await t.kasse.db
      .deleteFrom('hold_operations')
      .where('payment_id', '=', a.id)
      .returning('id')
      .execute();
    assert.equal(await t.kasse.capture.settleSimulated(), 1);
    await t.kasse.webhooks.drain();
    const settledB = await get(b.id);
    assert.equal(settledB.status, 'paid');
    assert.equal(settledB.authorization.captured_usd_cents, 400);
    const left = await t.kasse.db
      .selectFrom('transfers')
      .select('status')
      .where('id', '=', gone!.id)
      .executeTakeFirstOrThrow();
    assert.equal(left.status, 'pending');
    await t.kasse.db.deleteFrom('transfers').where('id', '=', gone!.id).execute();
  });
});

describe('a hold authorized on chain elsewhere (x402)', () => {
  test('recordAuthorizedHold makes an authorized manual payment the merchant captures and voids through the API', async () => {
    const balance0 = await available();
    const now = t.clock.now();
    const captureBefore = new Date(now.getTime() + 2 * DAY);
    const payment = await t.kasse.db.transaction().execute((tx) =>
      t.kasse.capture.recordAuthorizedHold(tx, {
        mode: 'test',
        merchantId: m.id,
        chain: 'base',
        token: 'base:usdc',
        address: '0x00000000000000000000000000000000000000a1',
        addressIndex: 0n,
        amount: 5_000_000n,
        priceCents: 500,
        orderId: 'agent-1',
        description: 'A held resource',
        x402: {
          resource: 'https://shop.example/api/report',
          description: null,
          payer: '0x00000000000000000000000000000000000000b2',
          network: 'eip155:8453',
          transaction: '0xsimauthorize',
          simulated: true,
          amount_usd: '5',
        },
        captureBefore,
        refundBefore: new Date(captureBefore.getTime() + 30 * DAY),
        payer: '0x00000000000000000000000000000000000000b2',
        reference: `0x${'ab'.repeat(32)}`,
        terms: { simulated: true },
      }),
    );
    assert.equal(payment.status, 'authorized');
    const p = await get(payment.id);
    assert.equal(p.source, 'x402');
    assert.equal(p.capture_method, 'manual');
    assert.equal(p.authorization.amount_usd_cents, 500);
    assert.equal(p.authorization.capture_before, captureBefore.toISOString());
    await ok(capture(p.id, { amount_usd_cents: 200 }));
    await settle();
    await ok(voidIt(p.id));
    await settle();
    const after = await get(p.id);
    assert.equal(after.status, 'paid');
    assert.equal(after.authorization.captured_usd_cents, 200);
    assert.equal(after.authorization.voided, true);
    assert.deepEqual(await events(p.id), ['payment.authorized', 'payment.paid', 'payment.captured']);
    assert.equal(await available(), balance0 + 198);
  });
});
