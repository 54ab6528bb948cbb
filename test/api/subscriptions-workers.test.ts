/**
 * The subscription scheduler across processes and crashes: due times live in PostgreSQL and are taken with
 * `FOR UPDATE SKIP LOCKED`, so two worker processes racing the same due time invoice each period once; a worker
 * killed inside its transaction leaves nothing, and one killed after committing leaves the invoice mail in the
 * outbox, which is sent once. Workers are real child processes (test/harness/subscription-worker.ts) on this file's
 * database; mail arrives over real SMTP.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';
import { startSubscriptionWorker, type SubscriptionWorker } from '../harness/subscriptions.ts';

let t: TestKasse;
let m: TestMerchant;
let smtp: SmtpReceiver;
/** Started once, before the tests: a child process takes a while to load Kasse. */
let workers: { a: Worker; b: Worker; inTx: Worker; afterCommit: Worker };

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestKasse({ env: { KASSE_SMTP_URL: smtp.url }, clock: new FakeClock('2026-03-01T10:00:00Z') });
  m = await t.merchant({ name: 'Race & Co', rateLimit: 100_000 });
  workers = { a: worker(), b: worker(), inTx: worker('in-transaction'), afterCommit: worker('after-commit') };
  for (const w of Object.values(workers)) w.ready.catch(() => {});
});
after(async () => {
  for (const w of Object.values(workers ?? {}))
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill();
  await t?.close();
  await smtp?.close();
});

type Worker = SubscriptionWorker & { go(): ReturnType<SubscriptionWorker['go']> };

function worker(crash?: 'in-transaction' | 'after-commit'): Worker {
  const w = startSubscriptionWorker({
    databaseUrl: t.databaseUrl,
    secrets: { secretKey: t.kasse.secrets.secretKey, masterSeed: t.kasse.secrets.masterSeed },
    smtpUrl: smtp.url,
    crash,
  });
  return { ...w, go: () => w.go(t.clock.now()) };
}

async function createMany(n: number, email: (i: number) => string) {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = Array.from({ length: Math.min(10, n - i) }, (_, j) =>
      m.test.post('/subscriptions', {
        customer_email: email(i + j),
        title: 'Weekly box',
        amount_usd_cents: 1200,
        interval: 'week',
        grace_days: 7,
      }),
    );
    for (const res of await Promise.all(batch)) {
      assert.equal(res.status, 201, JSON.stringify(res.body));
      ids.push(res.body.id);
    }
  }
  return ids;
}

async function invoiceCounts(ids: string[]) {
  const rows = await t.kasse.db
    .selectFrom('subscription_invoices')
    .select(['subscription_id', 'period'])
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('subscription_id', 'in', ids)
    .groupBy(['subscription_id', 'period'])
    .execute();
  return rows;
}

describe('the scheduler across processes', () => {
  test('two worker processes racing the same due time: every period invoiced once, one email each', async () => {
    const ids = await createMany(210, (i) => `race${i}@example.com`);
    await t.kasse.email.runOnce();
    const week = 7 * 24 * 3600 * 1000;
    t.clock.advance(week);
    const { a, b } = workers;
    await Promise.all([a.ready, b.ready]);
    const [ra, rb] = await Promise.all([a.go(), b.go()]);
    // Both took part (more than one batch of 200 was due) and together they invoiced each subscription once.
    assert.equal(ra.result.invoiced + rb.result.invoiced, 210, JSON.stringify([ra.result, rb.result]));
    const counts = await invoiceCounts(ids);
    assert.equal(counts.length, 2 * 210);
    assert.ok(
      counts.every((c) => Number(c.n) === 1),
      'one payment per period',
    );
    // Nothing left for a third pass.
    assert.equal((await t.kasse.subscriptions.runDue()).invoiced, 0);
    await t.kasse.email.runOnce();
    for (let i = 0; i < 210; i += 37) {
      const to = `race${i}@example.com`;
      const mails = smtp.messages.filter((x) => x.to === to);
      assert.deepEqual(
        mails.map((x) => /Period: (\d+)/.exec(x.text)![1]),
        ['1', '2'],
        to,
      );
    }
    assert.equal(smtp.messages.filter((x) => x.to.startsWith('race')).length, 2 * 210);
    const subs = await Promise.all(ids.slice(0, 5).map(async (id) => (await m.test.get(`/subscriptions/${id}`)).body));
    for (const s of subs) {
      assert.equal(s.periods_invoiced, 2);
      assert.equal(s.last_payment_id, s.invoices[1].payment_id);
    }
  });

  test('a worker killed inside its transaction leaves nothing; the next pass invoices once and mails once', async () => {
    const [id] = await createMany(1, () => 'crash-in-tx@example.com');
    await t.kasse.email.runOnce();
    t.clock.advance(7 * 24 * 3600 * 1000);
    const w = workers.inTx;
    await w.ready;
    const { result, signal } = await w.go();
    assert.equal(signal, 'SIGKILL');
    assert.equal(result, null);
    assert.equal((await invoiceCounts([id!])).length, 1, 'the killed pass wrote nothing');
    const before = (await m.test.get(`/payments?order_id=${id}-2`)).body.data;
    assert.equal(before.length, 0, 'no payment for period 2 survived the crash');
    // PostgreSQL ends the dead connection's transaction; its locks go with it.
    const r = await eventually(
      'a pass that invoices once the dead transaction is gone',
      async () => {
        const pass = await t.kasse.subscriptions.runDue();
        return pass.invoiced > 0 && pass;
      },
      { intervalMs: 100 },
    );
    assert.ok(r.invoiced >= 1);
    await t.kasse.email.runOnce();
    await t.kasse.email.runOnce();
    const mails = smtp.messages.filter((x) => x.to === 'crash-in-tx@example.com');
    assert.deepEqual(
      mails.map((x) => /Period: (\d+)/.exec(x.text)![1]),
      ['1', '2'],
    );
    assert.equal((await m.test.get(`/payments?order_id=${id}-2`)).body.data.length, 1);
  });

  test('a worker killed after committing, before sending: the invoice email still goes out, once', async () => {
    const [id] = await createMany(1, () => 'crash-after@example.com');
    await t.kasse.email.runOnce();
    t.clock.advance(7 * 24 * 3600 * 1000);
    const w = workers.afterCommit;
    await w.ready;
    const { signal } = await w.go();
    assert.equal(signal, 'SIGKILL');
    const payments = (await m.test.get(`/payments?order_id=${id}-2`)).body.data;
    assert.equal(payments.length, 1, 'the period was invoiced before the crash');
    assert.equal((await t.kasse.subscriptions.runDue()).invoiced, 0, 'and is not invoiced again');
    await t.kasse.email.runOnce();
    await t.kasse.email.runOnce();
    const mails = smtp.messages.filter((x) => x.to === 'crash-after@example.com');
    assert.deepEqual(
      mails.map((x) => /Period: (\d+)/.exec(x.text)![1]),
      ['1', '2'],
    );
    assert.ok(mails[1]!.text.includes(`/p/${payments[0].id}`));
  });
});
