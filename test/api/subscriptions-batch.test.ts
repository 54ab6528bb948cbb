/**
 * The scheduler and the email sender in batches: a subscription whose payment cannot be created does not hold back
 * the others of its batch (each is invoiced and mailed once, the failing one later once it can be), and the sender's
 * batches over several SMTP connections deliver every mail once — also when a connection drops mid-batch, where a
 * mail that may have been taken is never sent again on its own. A mail stored as layout blocks goes out exactly as
 * the same mail rendered when written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { FakeClock, MINUTE } from '../../src/core/clock.ts';
import type { MailMessage } from '../../src/modules/email/service.ts';
import { renderEmail } from '../../src/modules/email/template.ts';
import { SCHEDULER_BATCH, SCHEDULER_LANES } from '../../src/modules/subscriptions/scheduler.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';
import { dueSubscriptions, seedSubscriptions } from '../harness/subscriptions.ts';

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
  const res = await m.test.post('/subscriptions', {
    title: 'Tea club',
    amount_usd_cents: 900,
    interval: 'month',
    customer_email: email,
    start_at: startAt,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; periods_invoiced: number };
}

const sub = async (id: string) => (await m.test.get(`/subscriptions/${id}`)).body;

describe('scheduler batches', () => {
  test('a subscription whose payment cannot be created does not hold back the rest of its batch', async () => {
    const due = '2026-05-02T08:00:00.000Z';
    const subs: Array<{ id: string; periods_invoiced: number }> = [];
    for (let i = 0; i < 6; i++) subs.push(await create(`batch${i}@example.com`, due));
    const bad = subs[3]!;
    const createIn = t.kasse.payments.createIn.bind(t.kasse.payments);
    t.kasse.payments.createIn = async (db, mode, items) => {
      if (items.some((i) => i.metadata.subscription_id === bad.id))
        throw new Error('the payments module refused this payment');
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
    for (const s of subs)
      assert.equal(smtp.messages.filter((x) => x.to === `batch${subs.indexOf(s)}@example.com`).length, 1);
  });
});

describe('many due at once', () => {
  test('more subscriptions than the pass writes at once: each invoiced once, with one event and one mail', async () => {
    const shop = await t.merchant({ name: 'Bulk <shop>' });
    const at = new Date('2026-06-01T00:00:00.000Z');
    const n = SCHEDULER_BATCH * SCHEDULER_LANES + 37;
    const rows = dueSubscriptions(shop.id, n, at, (i) => ({
      customer_email: `bulk${i}@example.com`,
      title: `Plan ${i}`,
      amount_usd_cents: 500 + i,
    }));
    await seedSubscriptions(t.kasse.db, rows);
    t.clock.set(at.toISOString());
    const r = await t.kasse.subscriptions.runDue();
    assert.equal(r.invoiced, n);
    assert.equal((await t.kasse.subscriptions.runDue()).invoiced, 0);
    const count = async (table: 'subscription_invoices' | 'events' | 'email_outbox', where: string, what = '*') =>
      Number(
        (
          await sql<{
            n: string;
          }>`SELECT count(${sql.raw(what)}) AS n FROM ${sql.table(table)} WHERE ${sql.raw(where)}`.execute(t.kasse.db)
        ).rows[0]!.n,
      );
    const ids = rows.map((x) => `'${x.id}'`).join(',');
    assert.equal(await count('subscription_invoices', `subscription_id IN (${ids})`), n);
    assert.equal(await count('subscription_invoices', `subscription_id IN (${ids})`, 'DISTINCT subscription_id'), n);
    assert.equal(await count('events', `type = 'subscription.invoiced' AND ordering_key IN (${ids})`), n);
    assert.equal(await count('email_outbox', `kind = 'subscription.invoice' AND merchant_id = '${shop.id}'`), n);
    // Every event shows its own subscription; every mail is composed for its own customer and amount.
    const events = await t.kasse.db
      .selectFrom('events')
      .select(['ordering_key', 'data'])
      .where('type', '=', 'subscription.invoiced')
      .where('merchant_id', '=', shop.id)
      .execute();
    for (const e of events) assert.equal((e.data as { id: string }).id, e.ordering_key);
    const mails = (await t.kasse.email.list(shop.id, { limit: 100 })).data;
    assert.equal(mails.length, 100);
    for (const mail of mails) {
      const i = Number(/^bulk(\d+)@/.exec(mail.to)![1]);
      assert.equal(
        mail.subject,
        `Invoice from Bulk <shop>: Plan ${i}, $${((500 + i) / 100).toFixed(2)} due 1 June 2026`,
      );
    }
  });

  test("a subscription mail whose reference names another merchant's payment is not composed", async () => {
    const other = await t.merchant({ name: 'Other shop' });
    const due = new Date(t.clock.now().getTime() + MINUTE);
    const s = await create(`ref-owner@example.com`, due.toISOString());
    t.clock.set(due.toISOString());
    await t.kasse.subscriptions.runDue();
    const paymentId = (await sub(s.id)).invoices[0].payment_id;
    const exp = Math.floor(Date.parse('2026-09-01T00:00:00Z') / 1000);
    const forged = {
      merchantId: other.id,
      mode: 'test' as const,
      kind: 'subscription.invoice',
      to: 'someone@example.com',
      ref: `${paymentId}.${exp}`,
      dedupeKey: `forged:${paymentId}`,
    };
    await t.kasse.db
      .transaction()
      .execute((tx) =>
        t.kasse.email.enqueueMany(tx, [
          forged,
          { ...forged, mode: 'live', merchantId: m.id, dedupeKey: `forged-live:${paymentId}` },
        ]),
      );
    const shown = [...(await t.kasse.email.list(other.id)).data, ...(await t.kasse.email.list(m.id)).data].filter(
      (x) => x.to === 'someone@example.com',
    );
    assert.equal(shown.length, 2);
    for (const x of shown) {
      assert.match(x.subject, /cannot be composed/);
      assert.equal(x.text, '');
    }
  });
});

describe('events in batches', () => {
  test('events published together are stored in order, each body byte for byte as its serialiser wrote it', async () => {
    const odd = [
      'plain',
      'quote " and \\ backslash',
      'line\nbreak\ttab',
      'ünïcødé ✓ \u2028 and a NUL escape: \u0000',
      '{"looks":"like json"}',
      '',
    ];
    // Serialisers that write spacing and key order JSON.stringify would not: the stored text must be theirs.
    const inputs = odd.map((text, i) => ({
      mode: 'test' as const,
      merchantId: m.id,
      type: 'subscription.invoiced',
      orderingKey: `sub_batch_${i}`,
      data: { text, i },
      serialize: (d: { text: string; i: number }) => `{ "z" : ${d.i},\n  "text": ${JSON.stringify(d.text)} }`,
      destination: null,
    }));
    const before = await t.kasse.db
      .selectFrom('events')
      .select((eb) => eb.fn.max('seq').as('max'))
      .executeTakeFirstOrThrow();
    await t.kasse.db.transaction().execute((tx) => t.kasse.webhooks.publishMany(tx, inputs));
    const rows = await t.kasse.db
      .selectFrom('events')
      .select([
        'seq',
        'ordering_key',
        'merchant_id',
        'mode',
        'type',
        'destination',
        (eb) => eb.cast<string>('data', 'text').as('body'),
      ])
      .where('seq', '>', before.max ?? 0n)
      .orderBy('seq')
      .execute();
    assert.deepEqual(
      rows.map((r) => [r.ordering_key, r.merchant_id, r.mode, r.type, r.destination, r.body]),
      inputs.map((e) => [e.orderingKey, m.id, 'test', 'subscription.invoiced', null, e.serialize(e.data)]),
    );
  });
});

describe('email sender batches', () => {
  const mail = (subject: string): MailMessage => ({
    merchantId: m.id,
    mode: 'test',
    kind: 'test.notice',
    to: 'many@example.com',
    subject,
    text: `Body of ${subject}`,
  });

  test('a mail stored as layout blocks is sent and shown exactly as the same mail rendered when written', async () => {
    const content = {
      heading: 'Invoice from <Shop> & Co',
      paragraphs: ['Pay “now”, <b>please</b>.'],
      details: [['Amount', '$9.00']] as Array<[string, string]>,
      action: { label: 'Pay now', url: 'https://pay.example/p/1?a=1&b=2' },
      footer: ['Why you get this'],
      links: [{ label: 'Manage', url: 'https://pay.example/s/1' }],
    };
    const rendered = renderEmail(content);
    const a = (await t.kasse.email.enqueue(t.kasse.db, { ...mail('as blocks'), content }))!.id;
    const b = (await t.kasse.email.enqueue(t.kasse.db, {
      ...mail('as parts'),
      text: rendered.text,
      html: rendered.html,
    }))!.id;
    await t.kasse.email.runOnce();
    const [gotA, gotB] = [
      await smtp.waitFor((x) => x.subject === 'as blocks'),
      await smtp.waitFor((x) => x.subject === 'as parts'),
    ];
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
    for (let i = 0; i < 120; i++)
      assert.equal(smtp.messages.filter((x) => x.subject === `pooled ${i}`).length, 1, `pooled ${i}`);
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
    const counts = [...statuses.values()].reduce<Record<string, number>>((a, s) => {
      a[s] = (a[s] ?? 0) + 1;
      return a;
    }, {});
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
