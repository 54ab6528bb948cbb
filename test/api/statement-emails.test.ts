/**
 * The monthly statement by email, at the service: who receives it (owners who opted in and are still owners), per
 * mode, every month a stopped worker missed sent oldest first, and the mail kept with its PDF when there is no SMTP
 * server. Delivery over real SMTP and the dashboard's opt-in are in test/web/dashboard-statements.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeClock } from '../../src/core/clock.ts';
import type { ApiError } from '../../src/core/errors.ts';
import { statementEmailDue } from '../../src/modules/statements/emails.ts';
import type { UserRecord } from '../../src/modules/users/records.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';

const OPERATOR = { type: 'operator' as const, id: null, label: 'test', ip: null };
let t: TestKasse;
let m: TestMerchant;
const users: Record<string, UserRecord> = {};

/** A user whose account is set up (the set-up link redeemed). */
async function user(email: string, role: 'owner' | 'member'): Promise<UserRecord> {
  const { setup_url } = await t.kasse.users.team.create({
    merchantId: m.id,
    email,
    role,
    actor: OPERATOR,
    invite: false,
  });
  await t.kasse.users.links.redeemToken(setup_url.split('/').pop()!, 'setup', 'correct-horse-battery-staple-42', {
    ip: null,
    userAgent: null,
  });
  return (await t.kasse.users.team.list(m.id)).find((u) => u.email === email)!;
}

const mails = async () =>
  (
    await t.kasse.db
      .selectFrom('email_outbox')
      .select(['id', 'to_address', 'subject', 'mode', 'dedupe_key'])
      .where('kind', '=', 'statement.monthly')
      .orderBy('created_at')
      .orderBy('id')
      .execute()
  ).map((r) => `${r.mode} ${r.to_address}: ${r.subject!.replace(/^.*statement for /, '')}`);

before(async () => {
  t = await startTestKasse({ clock: new FakeClock('2026-03-10T12:00:00Z') });
  m = await t.merchant({ name: 'Corner Café' });
  users.ana = await user('ana@example.com', 'owner');
  users.bo = await user('bo@example.com', 'owner');
  users.cy = await user('cy@example.com', 'member');
});
after(async () => {
  await t?.close();
});

describe('statement emails', () => {
  test('owners who opted in, per mode; someone no longer an owner stops receiving it; members cannot opt in', async () => {
    await assert.rejects(
      t.kasse.statementEmails.subscribe(users.cy!, 'test', OPERATOR),
      (e: ApiError) => e.code === 'invalid_state',
    );
    await t.kasse.statementEmails.subscribe(users.ana!, 'test', OPERATOR);
    await t.kasse.statementEmails.subscribe(users.ana!, 'test', OPERATOR); // twice: one subscription
    await t.kasse.statementEmails.subscribe(users.bo!, 'test', OPERATOR);
    await t.kasse.statementEmails.subscribe(users.bo!, 'live', OPERATOR);
    assert.deepEqual(await t.kasse.statementEmails.next({ mode: 'test', merchantId: m.id }), {
      month: '2026-03',
      dueAt: statementEmailDue('2026-03'),
    });
    assert.equal(statementEmailDue('2026-03').toISOString(), '2026-04-01T00:15:00.000Z');
    await t.kasse.users.team.changeRole(m.id, users.bo!.id, 'member', OPERATOR);

    t.clock.set(statementEmailDue('2026-03'));
    assert.equal(await t.kasse.statementEmails.runOnce(), 2, 'test and live');
    assert.deepEqual(await mails(), ['test ana@example.com: March 2026 (test mode)']);

    // No SMTP server: the mail is kept (the Mail page shows it) with its PDF.
    assert.equal(await t.kasse.email.runOnce(), 1);
    const id = (
      await t.kasse.db
        .selectFrom('email_outbox')
        .select('id')
        .where('kind', '=', 'statement.monthly')
        .executeTakeFirstOrThrow()
    ).id;
    const kept = await t.kasse.email.get(id, m.id);
    assert.equal(kept.status, 'kept');
    assert.equal(kept.attachments.length, 1);
    assert.equal(kept.attachments[0]!.filename, 'statement-2026-03-test.pdf');
    assert.equal(kept.attachments[0]!.content_type, 'application/pdf');
    assert.ok(kept.attachments[0]!.bytes > 1000);
    assert.match(kept.text, /Closing balance: \$0\.00/);
  });

  test('a worker that was down sends every month it missed, oldest first, once', async () => {
    await t.kasse.users.team.changeRole(m.id, users.bo!.id, 'owner', OPERATOR);
    t.clock.set(new Date('2026-07-02T08:00:00Z'));
    assert.equal(await t.kasse.statementEmails.runOnce(), 6, 'April, May and June in each mode');
    assert.equal(await t.kasse.statementEmails.runOnce(), 0);
    assert.deepEqual((await mails()).slice(1), [
      'live bo@example.com: April 2026',
      'test ana@example.com: April 2026 (test mode)',
      'test bo@example.com: April 2026 (test mode)',
      'live bo@example.com: May 2026',
      'test ana@example.com: May 2026 (test mode)',
      'test bo@example.com: May 2026 (test mode)',
      'live bo@example.com: June 2026',
      'test ana@example.com: June 2026 (test mode)',
      'test bo@example.com: June 2026 (test mode)',
    ]);
    await t.kasse.statementEmails.unsubscribe(users.ana!, 'test', OPERATOR);
    assert.equal(await t.kasse.statementEmails.subscribed(users.ana!.id, 'test'), false);
    assert.equal(await t.kasse.statementEmails.subscribed(users.bo!.id, 'live'), true);
  });
});
