/**
 * `Kasse.webhooks.constructEvent` against real deliveries of a running Kasse (signed by its delivery worker), and
 * against tampered, stale and malformed ones, exactly as the spec's receiver rules say; and `sign`, which makes the
 * same header Kasse sends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Kasse, KasseSignatureVerificationError, type SignatureFailure } from '../../sdk/src/index.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startWebhookReceiver, type ReceivedEvent, type WebhookReceiver } from '../harness/webhook-receiver.ts';

let t: TestKasse;
let m: TestMerchant;
let receiver: WebhookReceiver;
let delivered: ReceivedEvent[];

before(async () => {
  t = await startTestKasse();
  receiver = await startWebhookReceiver({ now: () => t.clock.now() });
  m = await t.merchant({ webhookUrl: receiver.url });
  receiver.setSecret(m.webhookSecret);
  // Real events, delivered by the real worker: one per simulator outcome and a cancellation.
  for (const outcome of ['paid', 'underpaid', 'expired', 'late', 'wrong_asset']) {
    const p = (
      await m.test.post('/payments', {
        price_amount: 2500,
        price_currency: 'USD',
        order_id: outcome,
        metadata: { note: 'Grüße, 東京 🚀' },
      })
    ).body;
    assert.equal((await m.test.post(`/test/payments/${p.id}/simulate`, { outcome })).status, 200);
  }
  await m.test.post(
    `/payments/${(await m.test.post('/payments', { price_amount: 100, price_currency: 'USD', order_id: 'c' })).body.id}/cancel`,
  );
  await t.kasse.webhooks.drain();
  delivered = await receiver.next(6);
});
after(async () => {
  await t.close();
  await receiver.close();
});

const now = () => Math.floor(t.clock.now().getTime() / 1000);
const header = (e: ReceivedEvent) => e.headers['service-signature'] as string;

function rejects(reason: SignatureFailure, fn: () => unknown) {
  assert.throws(
    fn,
    (err: unknown) => err instanceof KasseSignatureVerificationError && err.reason === reason,
    `rejected: ${reason}`,
  );
}

describe('constructEvent with real deliveries', () => {
  test('verifies every delivery Kasse sent and returns its Event, from a string or the raw bytes', () => {
    assert.deepEqual(delivered.map((e) => e.type).sort(), [
      'payment.cancelled',
      'payment.expired',
      'payment.late',
      'payment.paid',
      'payment.underpaid',
      'payment.wrong_asset',
    ]);
    for (const e of delivered) {
      const event = Kasse.webhooks.constructEvent(e.rawBody, header(e), m.webhookSecret, { now: now() });
      assert.deepEqual(event, JSON.parse(e.rawBody));
      assert.equal(event.id, e.headers['service-event-id']);
      assert.equal(event.type, e.headers['service-event-type']);
      const fromBytes = Kasse.webhooks.constructEvent(Buffer.from(e.rawBody, 'utf8'), header(e), m.webhookSecret, {
        now: now(),
      });
      assert.equal(fromBytes.data.id, event.data.id);
    }
    // Non-ASCII metadata is signed as UTF-8 bytes.
    const paid = delivered.find((e) => e.type === 'payment.paid')!;
    assert.equal(
      Kasse.webhooks.constructEvent(Buffer.from(paid.rawBody), header(paid), m.webhookSecret, { now: now() }).data
        .metadata.note,
      'Grüße, 東京 🚀',
    );
  });

  test('sign makes exactly the header Kasse sent', () => {
    for (const e of delivered)
      assert.equal(Kasse.webhooks.sign(e.rawBody, m.webhookSecret, { timestamp: e.t }), header(e));
  });
});

describe('constructEvent refuses', () => {
  const e = () => delivered[0]!;

  test('a tampered body, a tampered signature and another secret', () => {
    const body = e().rawBody;
    rejects('signature_mismatch', () =>
      Kasse.webhooks.constructEvent(body.replace('"status":"', '"status":"x'), header(e()), m.webhookSecret, {
        now: now(),
      }),
    );
    rejects('signature_mismatch', () =>
      Kasse.webhooks.constructEvent(`${body} `, header(e()), m.webhookSecret, { now: now() }),
    );
    rejects('signature_mismatch', () =>
      Kasse.webhooks.constructEvent(JSON.stringify(JSON.parse(body), null, 1), header(e()), m.webhookSecret, {
        now: now(),
      }),
    );
    const flipped = header(e()).replace(/v1=(.)/, (_m, c: string) => `v1=${c === 'a' ? 'b' : 'a'}`);
    rejects('signature_mismatch', () => Kasse.webhooks.constructEvent(body, flipped, m.webhookSecret, { now: now() }));
    rejects('signature_mismatch', () =>
      Kasse.webhooks.constructEvent(body, header(e()), `${m.webhookSecret}x`, { now: now() }),
    );
    // A signature of another time with the same body.
    const otherT = header(e()).replace(/^t=(\d+)/, (_m, t: string) => `t=${Number(t) + 1}`);
    rejects('signature_mismatch', () => Kasse.webhooks.constructEvent(body, otherT, m.webhookSecret, { now: now() }));
  });

  test('a stale or future timestamp: more than 300 seconds from now, or the tolerance given', () => {
    const t0 = e().t;
    const check = (at: number, tolerance?: number) =>
      Kasse.webhooks.constructEvent(e().rawBody, header(e()), m.webhookSecret, { now: at, tolerance });
    assert.ok(check(t0 + 300));
    assert.ok(check(t0 - 300));
    rejects('timestamp_out_of_tolerance', () => check(t0 + 301));
    rejects('timestamp_out_of_tolerance', () => check(t0 - 301));
    rejects('timestamp_out_of_tolerance', () => check(t0 + 11, 10));
    // Without `now`, the system clock: the fake-clock delivery of 2026 is far from it.
    rejects('timestamp_out_of_tolerance', () =>
      Kasse.webhooks.constructEvent(e().rawBody, header(e()), m.webhookSecret),
    );
  });

  test('missing and malformed headers', () => {
    const body = e().rawBody;
    const v1 = /v1=([0-9a-f]{64})/.exec(header(e()))![1]!;
    const check = (h: string | undefined | null) =>
      Kasse.webhooks.constructEvent(body, h, m.webhookSecret, { now: e().t });
    rejects('missing_header', () => check(undefined));
    rejects('missing_header', () => check(null));
    rejects('missing_header', () => check(''));
    rejects('malformed_header', () => check(`v1=${v1}`));
    rejects('malformed_header', () => check(`t=,v1=${v1}`));
    rejects('malformed_header', () => check(`t=soon,v1=${v1}`));
    rejects('malformed_header', () => check(`t=${e().t}`));
    rejects('malformed_header', () => check(`t=${e().t},v0=${v1}`));
    rejects('malformed_header', () => check(`t=${e().t},v1=${v1.slice(1)}`));
    rejects('malformed_header', () => check(`t=${e().t},v1=${v1}0`));
    rejects('malformed_header', () => check(`t=${e().t},v1=${v1.slice(0, 63)}g`));
    rejects('malformed_header', () => check(`t=${e().t};v1=${v1}`));
    rejects('malformed_header', () => check('garbage'));
    assert.throws(
      () => Kasse.webhooks.constructEvent(JSON.parse(body), header(e()), m.webhookSecret, { now: e().t }),
      TypeError,
      'a parsed body is refused',
    );
    // A signed body that is not JSON cannot be an Event.
    const text = 'not json';
    rejects('malformed_body', () =>
      Kasse.webhooks.constructEvent(
        text,
        Kasse.webhooks.sign(text, m.webhookSecret, { timestamp: e().t }),
        m.webhookSecret,
        { now: e().t },
      ),
    );
  });

  test('several v1 values: one match is enough, and each must be well formed', () => {
    const body = e().rawBody;
    const t0 = e().t;
    const good = /v1=([0-9a-f]{64})/.exec(header(e()))![1]!;
    const other = /v1=([0-9a-f]{64})/.exec(Kasse.webhooks.sign(body, 'whsec_old_secret', { timestamp: t0 }))![1]!;
    assert.ok(Kasse.webhooks.constructEvent(body, `t=${t0},v1=${other},v1=${good}`, m.webhookSecret, { now: t0 }));
    assert.ok(Kasse.webhooks.constructEvent(body, `t=${t0},v1=${good},v1=${other}`, m.webhookSecret, { now: t0 }));
    assert.ok(
      Kasse.webhooks.constructEvent(body, `t=${t0}, v1=${good.toUpperCase()}`, m.webhookSecret, { now: t0 }),
      'hex in either case',
    );
    assert.ok(
      Kasse.webhooks.constructEvent(body, [`t=${t0}`, `v1=${good}`], m.webhookSecret, { now: t0 }),
      'a header given as a list',
    );
    rejects('signature_mismatch', () =>
      Kasse.webhooks.constructEvent(body, `t=${t0},v1=${other},v1=${other.replace(/./, '0')}`, m.webhookSecret, {
        now: t0,
      }),
    );
    rejects('malformed_header', () =>
      Kasse.webhooks.constructEvent(body, `t=${t0},v1=${good},v1=xyz`, m.webhookSecret, { now: t0 }),
    );
  });
});
