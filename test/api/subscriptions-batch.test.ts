/**
 * The scheduler and the email sender in batches: a subscription whose payment cannot be created does not hold back
 * the others of its batch (each is invoiced and mailed once, the failing one later once it can be), and the sender's
 * batches over several SMTP connections deliver every mail once — also when a connection drops mid-batch, where a
 * mail that may have been taken is never sent again on its own. A mail stored as layout blocks goes out exactly as
 * the same mail rendered when written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeClock, MINUTE } from '../../src/core/clock.ts';
import type { MailMessage } from '../../src/modules/email/service.ts';
import { renderEmail } from '../../src/modules/email/template.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';

let t: TestKasse;
let m: TestMerchant;
let smtp: SmtpReceiver;

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestKasse({ env: { KASSE_SMTP_URL: smtp.url }, clock: new FakeClock('2026-05-01T08:00:00Z') });
  m = await t.merchant({ name: 'Batch shop', rateLimit: 100_000 });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

async function create(email: string, startAt: string) {
  const res = await m.test.post('/subscriptions', { title: 'Tea club', amount_usd_cents: 900, interval: 'month', customer_email: email, start_at: startAt });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; periods_invoiced: number };
}

const sub = async (id: string) => (await m.test.get(`/subscriptions/${id}`)).body;

describe('scheduler batches', () => {
  test("a subscription whose payment cannot be created does not hold back the rest of its batch", async () => {
    const due = '2026-05-02T08:00:00.000Z';
    const subs: Array<{ id: string; periods_invoiced: number }> = [];
    for (let i = 0; i < 6; i++) subs.push(await create(`batch${i}@example.com`, due));
    const bad = subs[3]!;
    const createIn = t.kasse.payments.createIn.bind(t.kasse.payments);
    t.kasse.payments.createIn = async (db, mode, items) => {
      if (items.some((i) => i.metadata.subscription_id === bad.id)) throw new Error('the payments module refused this payment');
      return createIn(db, mode, items);
    };
    try {
      t.clock.set(due);
      const r = await t.kasse.subscriptions.runDue();
      assert.equal(r.invoiced, 5);
    } finally {
      t.kasse.payments.createIn = createIn;
    }
    await t.kasse.email.runOnce();
    for (const s of subs) {
      const now = await sub(s.id);
      assert.equal(now.periods_invoiced, s === bad ? 0 : 1);
      assert.equal(now.invoices.length, s === bad ? 0 : 1);
      assert.equal(smtp.messages.filter((x) => x.to === now.customer.email).length, s === bad ? 0 : 1);
    }
    // Nothing is due again before the failed one's retry time…
    assert.equal((await t.kasse.subscriptions.runDue()).invoiced, 0);
    // …then it is invoiced, once, and mailed once; the others are not touched.
    t.clock.advance(5 * MINUTE);
    assert.equal((await t.kasse.subscriptions.runDue()).invoiced, 1);
    await t.kasse.email.runOnce();
    assert.equal((await sub(bad.id)).periods_invoiced, 1);
    for (const s of subs) assert.equal(smtp.messages.filter((x) => x.to === `batch${subs.indexOf(s)}@example.com`).length, 1);
  });
});

describe('email sender batches', () => {
  const mail = (subject: string): MailMessage => ({ merchantId: m.id, mode: 'test', kind: 'test.notice', to: 'many@example.com', subject, text: `Body of ${subject}` });

  test('a mail stored as layout blocks is sent and shown exactly as the same mail rendered when written', async () => {
    const content = { heading: 'Invoice from <Shop> & Co', paragraphs: ['Pay “now”, <b>please</b>.'], details: [['Amount', '$9.00']] as Array<[string, string]>, action: { label: 'Pay now', url: 'https://pay.example/p/1?a=1&b=2' }, footer: ['Why you get this'], links: [{ label: 'Manage', url: 'https://pay.example/s/1' }] };
    const rendered = renderEmail(content);
    const a = (await t.kasse.email.enqueue(t.kasse.db, { ...mail('as blocks'), content }))!.id;
    const b = (await t.kasse.email.enqueue(t.kasse.db, { ...mail('as parts'), text: rendered.text, html: rendered.html }))!.id;
    await t.kasse.email.runOnce();
    const [gotA, gotB] = [await smtp.waitFor((x) => x.subject === 'as blocks'), await smtp.waitFor((x) => x.subject === 'as parts')];
    assert.equal(gotA.text, gotB.text);
    assert.equal(gotA.html, gotB.html);
    const [storedA, storedB] = [await t.kasse.email.get(a), await t.kasse.email.get(b)];
    assert.equal(storedA.text, rendered.text);
    assert.equal(storedA.html, rendered.html);
    assert.equal(storedB.text, rendered.text);
  });

  test('more mail than one batch, over several connections: each sent once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 120; i++) ids.push((await t.kasse.email.enqueue(t.kasse.db, mail(`pooled ${i}`)))!.id);
    assert.equal(await t.kasse.email.runOnce(), 120);
    for (let i = 0; i < 120; i++) assert.equal(smtp.messages.filter((x) => x.subject === `pooled ${i}`).length, 1, `pooled ${i}`);
    for (const id of ids) {
      const s = await t.kasse.email.get(id);
      assert.equal(s.status, 'sent');
      assert.equal(s.attempts, 1);
    }
    assert.equal(await t.kasse.email.runOnce(), 0);
  });

  test('a connection drop mid-batch: every mail ends sent once or uncertain, none twice', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await t.kasse.email.enqueue(t.kasse.db, mail(`dropped ${i}`)))!.id);
    smtp.dropNext();
    await t.kasse.email.runOnce();
    // Mail not yet offered when the connections went is retried after its backoff; the rest is settled.
    t.clock.advance(48 * 60 * MINUTE);
    await t.kasse.email.runOnce();
    const statuses = new Map<string, string>();
    for (const id of ids) statuses.set(id, (await t.kasse.email.get(id)).status);
    const counts = [...statuses.values()].reduce<Record<string, number>>((a, s) => ((a[s] = (a[s] ?? 0) + 1), a), {});
    assert.ok((counts.uncertain ?? 0) >= 1, JSON.stringify(counts));
    assert.equal((counts.sent ?? 0) + (counts.uncertain ?? 0), 40, JSON.stringify(counts));
    t.clock.advance(48 * 60 * MINUTE);
    assert.equal(await t.kasse.email.runOnce(), 0);
    for (let i = 0; i < 40; i++) {
      const received = smtp.messages.filter((x) => x.subject === `dropped ${i}`).length;
      if (statuses.get(ids[i]!) === 'sent') assert.equal(received, 1, `dropped ${i}`);
      else assert.ok(received <= 1, `dropped ${i}`);
    }
  });
});
