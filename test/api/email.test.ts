/**
 * The email outbox end to end over real SMTP (smtp-server + mailparser): a mail exists only if the transaction that
 * wrote it commits; the worker sends plain-text and HTML parts with merchant strings escaped; refusals the server
 * answers are retried on the backoff schedule (4xx) or fail at once (5xx); a connection lost while the server may
 * have taken the message makes it `uncertain` and it is never resent on its own (at most once); a worker that died
 * before offering a message leaves it to be sent, one that died while offering it leaves it uncertain; with no
 * SMTP server the mail is kept, listed for the dashboard and logged.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { MINUTE } from '../../src/core/clock.ts';
import { createLogger } from '../../src/core/log.ts';
import { withTx } from '../../src/db/index.ts';
import { EMAIL_MAX_ATTEMPTS, EMAIL_RETRY_DELAYS_MS } from '../../src/modules/email/delivery.ts';
import type { MailMessage } from '../../src/modules/email/service.ts';
import { renderEmail } from '../../src/modules/email/template.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';

let t: TestKasse;
let m: TestMerchant;
let smtp: SmtpReceiver;

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestKasse({
    env: { KASSE_SMTP_URL: smtp.url, KASSE_MAIL_FROM: 'Kasse Payments <billing@kasse.test>' },
  });
  m = await t.merchant({ name: 'Corner <b>Café</b>' });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

const mail = (over: Partial<MailMessage> = {}): MailMessage => {
  const body = renderEmail({
    heading: 'Your invoice from Corner <b>Café</b>',
    paragraphs: ['Pay <script>alert(1)</script> by Friday.'],
    action: { label: 'Pay now', url: 'https://pay.example/i/1?a=1&b=2' },
    details: [['Amount', '$12.50']],
  });
  return {
    merchantId: m.id,
    mode: 'test',
    kind: 'test.notice',
    to: 'customer@example.com',
    toName: 'Ana "A" Ruiz',
    subject: 'Invoice <1>',
    text: body.text,
    html: body.html,
    ...over,
  };
};

const status = async (id: string) => (await t.kasse.email.get(id)).status;

describe('email outbox', () => {
  test('written in the causing transaction: a rollback leaves no mail; a commit sends text and HTML over SMTP', async () => {
    await assert.rejects(
      withTx(t.kasse.db, async (tx) => {
        await t.kasse.email.enqueue(tx, mail({ subject: 'rolled back' }));
        throw new Error('the change failed');
      }),
      /the change failed/,
    );
    const id = await withTx(t.kasse.db, async (tx) => (await t.kasse.email.enqueue(tx, mail()))!.id);
    assert.equal(await status(id), 'pending');
    assert.equal(await t.kasse.email.runOnce(), 1);
    const got = await smtp.waitFor((x) => x.subject === 'Invoice <1>');
    assert.equal(smtp.messages.filter((x) => x.subject === 'rolled back').length, 0);
    assert.equal(got.to, 'customer@example.com');
    assert.deepEqual(got.envelope.from, 'billing@kasse.test');
    assert.equal(got.parsed.from?.value[0]?.name, 'Kasse Payments');
    assert.equal(got.parsed.to && !Array.isArray(got.parsed.to) ? got.parsed.to.value[0]?.name : null, 'Ana "A" Ruiz');
    // Plain text keeps the merchant's characters as typed; HTML shows them as text.
    assert.match(got.text, /Your invoice from Corner <b>Café<\/b>/);
    assert.match(got.text, /Pay now: https:\/\/pay\.example\/i\/1\?a=1&b=2/);
    assert.match(got.html, /Corner &lt;b&gt;Café&lt;\/b&gt;/);
    assert.match(got.html, /Pay &lt;script&gt;alert\(1\)&lt;\/script&gt; by Friday/);
    assert.doesNotMatch(got.html, /<script>|<b>Café/);
    assert.match(got.html, /href="https:\/\/pay\.example\/i\/1\?a=1&amp;b=2"/);
    assert.equal(got.parsed.headers.get('auto-submitted'), 'auto-generated');
    const stored = await t.kasse.email.get(id);
    assert.equal(stored.status, 'sent');
    assert.equal(stored.message_id, got.messageId);
    assert.equal(stored.attempts, 1);
    // Nothing more to do.
    assert.equal(await t.kasse.email.runOnce(), 0);
  });

  test('a dedupe key sends one mail per business fact', async () => {
    const a = await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'dedupe', dedupeKey: 'sub_X:invoice:1' }));
    const b = await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'dedupe', dedupeKey: 'sub_X:invoice:1' }));
    assert.ok(a);
    assert.equal(b, null);
    await t.kasse.email.runOnce();
    await smtp.waitFor((x) => x.subject === 'dedupe');
    assert.equal(smtp.messages.filter((x) => x.subject === 'dedupe').length, 1);
  });

  test('a 4xx refusal is retried after the backoff; a 5xx refusal fails at once', async () => {
    smtp.refuseNext(451, 2);
    const id = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'busy server' })))!.id;
    await t.kasse.email.runOnce();
    let s = await t.kasse.email.get(id);
    assert.equal(s.status, 'pending');
    assert.match(s.last_error!, /451/);
    assert.equal(new Date(s.next_attempt_at!).getTime(), t.clock.millis() + EMAIL_RETRY_DELAYS_MS[0]);
    assert.equal(await t.kasse.email.runOnce(), 0, 'not due before its backoff');
    t.clock.advance(EMAIL_RETRY_DELAYS_MS[0]);
    await t.kasse.email.runOnce();
    s = await t.kasse.email.get(id);
    assert.equal(s.status, 'pending');
    assert.equal(new Date(s.next_attempt_at!).getTime(), t.clock.millis() + EMAIL_RETRY_DELAYS_MS[1]);
    t.clock.advance(EMAIL_RETRY_DELAYS_MS[1]);
    await t.kasse.email.runOnce();
    assert.equal(await status(id), 'sent');
    assert.equal(smtp.messages.filter((x) => x.subject === 'busy server').length, 1);

    smtp.refuseNext(550);
    const gone = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'no such mailbox' })))!.id;
    await t.kasse.email.runOnce();
    const f = await t.kasse.email.get(gone);
    assert.equal(f.status, 'failed');
    assert.match(f.last_error!, /550/);
    t.clock.advance(24 * 60 * MINUTE);
    assert.equal(await t.kasse.email.runOnce(), 0);
  });

  test(`a server that keeps answering 4xx: ${EMAIL_MAX_ATTEMPTS} attempts, then failed`, async () => {
    smtp.refuseNext(421, EMAIL_MAX_ATTEMPTS);
    const id = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'never' })))!.id;
    for (let i = 0; i < EMAIL_MAX_ATTEMPTS; i++) {
      await t.kasse.email.runOnce();
      if (i < EMAIL_RETRY_DELAYS_MS.length) t.clock.advance(EMAIL_RETRY_DELAYS_MS[i]!);
    }
    const s = await t.kasse.email.get(id);
    assert.equal(s.status, 'failed');
    assert.equal(s.attempts, EMAIL_MAX_ATTEMPTS);
  });

  test('sign-in to the SMTP server fails: nothing was offered, so the mail is retried', async () => {
    smtp.authFails = true;
    const id = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'after auth fix' })))!.id;
    const offered = smtp.offered;
    await t.kasse.email.runOnce();
    smtp.authFails = false;
    assert.equal(smtp.offered, offered);
    const s = await t.kasse.email.get(id);
    assert.equal(s.status, 'pending');
    assert.match(s.last_error!, /SMTP connection failed/);
    t.clock.advance(EMAIL_RETRY_DELAYS_MS[0]);
    await t.kasse.email.runOnce();
    assert.equal(await status(id), 'sent');
  });

  test('the connection drops while the server may have taken the message: uncertain, never resent on its own', async () => {
    smtp.dropNext();
    const id = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'maybe delivered' })))!.id;
    const second = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'next in the batch' })))!.id;
    const offered = smtp.offered;
    await t.kasse.email.runOnce();
    assert.equal(smtp.offered, offered + 2, 'both were offered; the second on a new connection');
    assert.equal(await status(id), 'uncertain');
    assert.equal(await status(second), 'sent');
    t.clock.advance(48 * 60 * MINUTE);
    assert.equal(await t.kasse.email.runOnce(), 0);
    assert.equal(smtp.messages.filter((x) => x.subject === 'maybe delivered').length, 0);
    // The operator decides to send it again: the copy carries the same Message-ID.
    await t.kasse.email.resend(id);
    await t.kasse.email.runOnce();
    const got = await smtp.waitFor((x) => x.subject === 'maybe delivered');
    assert.equal(got.messageId, (await t.kasse.email.get(id)).message_id);
  });

  test('the server closes the connection after taking a message: the rest is sent on a new one or retried, never failed', async () => {
    const subjects = ['limit 1', 'limit 2', 'limit 3'];
    const ids: string[] = [];
    for (const subject of subjects) ids.push((await t.kasse.email.enqueue(t.kasse.db, mail({ subject })))!.id);
    smtp.closeAfterNext(1);
    await t.kasse.email.runOnce();
    // Each mail offered after a close either went over a new connection or, when the client found the connection
    // half-closed, was not offered and waits for its retry; none is given up.
    for (const id of ids) assert.ok(['sent', 'pending'].includes(await status(id)), `${id}: ${await status(id)}`);
    t.clock.advance(EMAIL_RETRY_DELAYS_MS[0]);
    await t.kasse.email.runOnce();
    for (const id of ids) assert.equal(await status(id), 'sent');
    for (const subject of subjects) assert.equal(smtp.messages.filter((x) => x.subject === subject).length, 1, subject);
  });

  test('a worker that died after claiming sends later; one that died while handing the message over leaves it uncertain', async () => {
    const claimed = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'claimed then crash' })))!.id;
    const handed = (await t.kasse.email.enqueue(t.kasse.db, mail({ subject: 'handed then crash' })))!.id;
    // What a worker leaves behind when its process dies at those two points.
    const lease = new Date(t.clock.millis() + 10 * MINUTE);
    await t.kasse.db
      .updateTable('email_outbox')
      .set({ status: 'claimed', locked_until: lease, lease_token: 'dead', attempts: 1 })
      .where('id', '=', claimed)
      .execute();
    await t.kasse.db
      .updateTable('email_outbox')
      .set({ status: 'handed', locked_until: lease, lease_token: 'dead', attempts: 1 })
      .where('id', '=', handed)
      .execute();
    assert.equal(await t.kasse.email.runOnce(), 0, 'claims hold until their lease ends');
    t.clock.advance(10 * MINUTE);
    await t.kasse.email.runOnce();
    assert.equal(await status(claimed), 'sent');
    assert.equal(await status(handed), 'uncertain');
    await smtp.waitFor((x) => x.subject === 'claimed then crash');
    assert.equal(smtp.messages.filter((x) => x.subject === 'handed then crash').length, 0);
  });

  test("a mail stored by reference is composed by its kind's composer when shown and sent; one it cannot compose fails, unsent", async () => {
    const calls: string[][] = [];
    t.kasse.email.composeWith(['test.composed'], async (_db, refs) => {
      calls.push(refs.map((r) => r.ref));
      const out = new Map<string, { subject: string; content: { heading: string; paragraphs: string[] } }>();
      for (const r of refs)
        if (r.ref !== 'gone' && r.merchantId === m.id)
          out.set(r.ref, {
            subject: `Composed <${r.ref}>`,
            content: { heading: `Hello from <i>${r.ref}</i>`, paragraphs: [`Mode ${r.mode}.`] },
          });
      return out;
    });
    const ref = (r: string) => ({
      merchantId: m.id,
      mode: 'test' as const,
      kind: 'test.composed',
      to: 'composed@example.com',
      ref: r,
      dedupeKey: `composed:${r}`,
    });
    await withTx(t.kasse.db, (tx) => t.kasse.email.enqueueMany(tx, [ref('one'), ref('two'), ref('gone')]));
    const row = await t.kasse.db
      .selectFrom('email_outbox')
      .select(['subject', 'text_body', 'content', 'content_ref'])
      .where('dedupe_key', '=', 'composed:one')
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { subject: null, text_body: null, content: null, content_ref: 'one' });
    // Shown as composed, the three of a page in one call.
    const listed = (await t.kasse.email.list(m.id)).data.filter((x) => x.kind === 'test.composed');
    assert.deepEqual(listed.map((x) => x.subject).sort(), [
      '(test.composed mail of gone: cannot be composed)',
      'Composed <one>',
      'Composed <two>',
    ]);
    assert.equal(calls.length, 1);
    assert.equal(await t.kasse.email.runOnce(), 3);
    const got = await smtp.waitFor((x) => x.subject === 'Composed <two>');
    assert.match(got.text, /Hello from <i>two<\/i>/);
    assert.match(got.html, /Hello from &lt;i&gt;two&lt;\/i&gt;/);
    await smtp.waitFor((x) => x.subject === 'Composed <one>');
    assert.equal(smtp.messages.filter((x) => x.to === 'composed@example.com').length, 2);
    const gone = (await t.kasse.email.forOperator({ status: 'failed' })).data.find((x) => x.kind === 'test.composed');
    assert.ok(gone, 'the mail that cannot be composed failed');
    assert.match(gone.last_error ?? '', /could not be composed/);
    assert.equal(gone.attempts, 1);
  });
});

describe('without an SMTP server', () => {
  let k: TestKasse;
  const lines: string[] = [];
  before(async () => {
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        cb();
      },
    });
    k = await startTestKasse({ log: createLogger('info', sink) });
  });
  after(async () => k?.close());

  test('mail is kept, listed for the merchant and logged without its body', async () => {
    const merchant = await k.merchant({ name: 'Kept shop' });
    const other = await k.merchant({ name: 'Other shop' });
    const id = (await k.kasse.email.enqueue(k.kasse.db, {
      merchantId: merchant.id,
      mode: 'test',
      kind: 'user.password_reset',
      to: 'a@example.com',
      subject: 'Reset',
      text: 'secret link https://x/reset/abc',
      sensitive: true,
    }))!.id;
    assert.equal(await k.kasse.email.runOnce(), 1);
    const kept = await k.kasse.email.get(id);
    assert.equal(kept.status, 'kept');
    assert.equal(kept.sensitive, true);
    assert.deepEqual(
      (await k.kasse.email.list(merchant.id)).data.map((x) => x.id),
      [id],
    );
    assert.deepEqual((await k.kasse.email.list(other.id)).data, []);
    await assert.rejects(k.kasse.email.get(id, other.id), /No such mail/);
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.mail === id);
    assert.ok(logged, 'a log line names the kept mail');
    assert.equal(logged.subject, 'Reset');
    assert.ok(!lines.some((l) => l.includes('reset/abc')), 'the body (a sign-in link) is never logged');
  });
});
