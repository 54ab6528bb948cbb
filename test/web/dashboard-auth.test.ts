/**
 * Signing in to the dashboard in real Chromium: the operator's one-time set-up link, owners made to enrol TOTP
 * (codes computed here from the enrolled secret), recovery codes that work once, CSRF refusal, throttling with a
 * wait (and a known browser not locked out by someone hammering the account), idle and absolute session expiry,
 * sign-out, password change and password reset by an emailed link, and an invitation read from a real SMTP receiver.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HOUR, MINUTE } from '../../src/core/clock.ts';
import { SESSION_IDLE_MS, SESSION_MAX_MS } from '../../src/modules/users/sessions.ts';
import { THROTTLE_LIMITS, THROTTLE_WINDOW_MS } from '../../src/modules/users/throttle.ts';
import { launchBrowser, screenshot, startWebKasse, type TestBrowser, type WebKasse } from '../harness/browser.ts';
import {
  createUser,
  csrfOf,
  enrol,
  get,
  PASSWORD,
  post,
  setUpAccount,
  signIn,
  signOut,
  totpCode,
  type DashboardUser,
} from '../harness/dashboard.ts';
import { linkIn, startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';

let w: WebKasse;
let b: TestBrowser;
let smtp: SmtpReceiver;
let base: string;
let owner: DashboardUser;

before(async () => {
  smtp = await startSmtpReceiver();
  w = await startWebKasse({ env: { KASSE_SMTP_URL: smtp.url } });
  b = await launchBrowser();
  base = w.t.urls.checkout;
});
after(async () => {
  await b?.close();
  await w?.close();
  await smtp?.close();
});

const audit = async (action: string) => (await w.t.kasse.audit.list(w.m.id, { action })).data;

describe('dashboard sign-in', () => {
  test('set-up link → password → owners must enrol TOTP → recovery codes → Home', async () => {
    const u = await createUser(w.t.kasse, w.m.id, 'Owner@Example.com', 'owner');
    assert.match(u.setupUrl, new RegExp(`^${base}/dashboard/setup/[A-Za-z0-9_-]{43}$`));
    const { page, errors } = await b.open('phone');
    await page.goto(u.setupUrl);
    await screenshot(page, 'dashboard-setup-phone');
    // A common password is refused.
    await page.getByLabel('New password').fill('password123');
    await page.getByLabel('Repeat the password').fill('password123');
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.getByRole('alert').filter({ hasText: 'most common passwords' }).waitFor();
    // Too short, sent past the browser's own check.
    const short = await post(page, u.setupUrl, { _csrf: await csrfOf(page), password: 'short1', confirm: 'short1' });
    assert.equal(short.status, 400);
    assert.match(short.body, /at least 10 characters/);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.waitForURL(/\/dashboard\/enrol$/);
    // Before enrolling, nothing else opens.
    const blocked = await get(page, `${base}/dashboard/test/payments`);
    assert.equal(blocked.status, 303);
    assert.equal(blocked.location, '/dashboard/enrol');
    await screenshot(page, 'dashboard-enrol-phone');
    owner = { id: u.id, email: 'owner@example.com', password: PASSWORD, secret: null, recoveryCodes: [] };
    // A wrong code first.
    await page.getByLabel('6-digit code').fill('000000');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('alert').filter({ hasText: 'does not match' }).waitFor();
    await enrol(page, w.t.clock, owner);
    await page.waitForURL(/\/dashboard\/test$/);
    await page.getByRole('heading', { name: 'Home' }).waitFor();
    // The link worked once.
    const again = await get(page, u.setupUrl);
    assert.equal(again.status, 404);
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
    assert.equal((await audit('signin.succeeded')).length, 1);
    // The set-up and the enrolment are in the log as the user's own, on their account (not of one mode).
    for (const action of ['user.setup', 'user.second_factor_enrol']) {
      const [entry, ...more] = (await audit(action)).filter((e) => e.action === action);
      assert.deepEqual(more, [], action);
      assert.deepEqual(
        [entry?.action, entry?.mode, entry?.actor.type, entry?.actor.id, entry?.actor.label, entry?.target],
        [action, null, 'user', u.id, 'owner@example.com', { type: 'user', id: u.id }],
      );
    }
    await page.context().close();
  });

  test('sign in with password and TOTP; a code works once; a recovery code works once', async () => {
    const { page } = await b.open('desktop');
    await page.goto(`${base}/dashboard/signin`);
    await screenshot(page, 'dashboard-signin-desktop');
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await screenshot(page, 'dashboard-code-desktop');
    // Pages need the second factor first.
    assert.equal((await get(page, `${base}/dashboard/test`)).location, '/dashboard/signin/code');
    const code = totpCode(owner.secret!, w.t.clock);
    await page.getByLabel('Code').fill(code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Home' }).waitFor();
    await signOut(page);
    // The same code again (same 30 s step) is refused.
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Code').fill(code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();
    // A recovery code instead.
    const recovery = owner.recoveryCodes[0]!;
    await page.getByLabel('Code').fill(recovery);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/\/account\?done=recovery_used$/);
    await page.getByText('You signed in with a recovery code').waitFor();
    await signOut(page);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Code').fill(recovery);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();
    await page.getByLabel('Code').fill(totpCode(owner.secret!, w.t.clock));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Home' }).waitFor();
    const methods = (await audit('signin.succeeded')).map((a) => a.details?.method);
    assert.deepEqual(methods.slice(0, 3), ['totp', 'recovery_code', 'totp']);
    const failed = await audit('signin.failed');
    assert.ok(failed.some((a) => a.details?.reason === 'code' && a.actor.id === owner.id));
    await page.context().close();
  });

  test("a form without this session's CSRF token is refused and changes nothing", async () => {
    const { page } = await b.open('desktop');
    await signIn(page, base, w.t.clock, owner);
    await page.goto(`${base}/dashboard/test/settings`);
    const token = await csrfOf(page);
    const before = (await w.t.kasse.merchants.get(w.m.id)).name;
    for (const form of [
      { name: 'Hijacked' },
      { name: 'Hijacked', _csrf: 'x'.repeat(43) },
      { name: 'Hijacked', _csrf: `${token.slice(0, -2)}AA` },
    ] as Array<Record<string, string>>) {
      const res = await post(page, `${base}/dashboard/test/settings`, form);
      assert.equal(res.status, 403);
      assert.match(res.body, /This form has expired or did not come from the dashboard/);
    }
    // A cross-site origin with a good token is refused too.
    const cross = await page.context().request.post(`${base}/dashboard/test/settings`, {
      form: { name: 'Hijacked', _csrf: token },
      maxRedirects: 0,
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(cross.status(), 403);
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).name, before);
    // A token of another session does not work either.
    const other = await b.open('phone');
    await signIn(other.page, base, w.t.clock, owner);
    const res = await post(other.page, `${base}/dashboard/test/settings`, { name: 'Hijacked', _csrf: token });
    assert.equal(res.status, 403);
    // With its own token the change goes through.
    await other.page.goto(`${base}/dashboard/test/settings`);
    const ok = await post(other.page, `${base}/dashboard/test/settings`, {
      name: before,
      _csrf: await csrfOf(other.page),
      payout_token: 'base:usdc',
      approvals_required: '',
    });
    assert.equal(ok.status, 303);
    // The sign-in form needs its pre-session token as well.
    // The forms before sign-in need their pre-session token as well: refused like every form, 403.
    const anon = await b.open('phone');
    await anon.page.goto(`${base}/dashboard/signin`);
    const noToken = await post(anon.page, `${base}/dashboard/signin`, { email: owner.email, password: owner.password });
    assert.equal(noToken.status, 403);
    assert.match(noToken.body, /This form has expired/);
    assert.equal(await anon.page.getByLabel('Email').count(), 1, 'the sign-in form, to try again');
    const signin = await anon.context.request.post(`${base}/dashboard/signin`, {
      form: { _csrf: await csrfOf(anon.page), email: owner.email, password: owner.password },
      maxRedirects: 0,
      headers: { origin: base },
    });
    assert.equal(signin.status(), 303);
    const cookies = signin.headersArray().filter((h) => h.name.toLowerCase() === 'set-cookie');
    assert.equal(cookies.filter((c) => c.value.startsWith('kasse_session=')).length, 1, 'one session cookie');
    assert.equal(new URL(signin.headers().location!, base).pathname, '/dashboard/signin/code');
    const noCode = await post(anon.page, `${base}/dashboard/signin/code`, { code: '123456' });
    assert.equal(noCode.status, 403);
    assert.match(noCode.body, /This form has expired/);
    await anon.context.close();
    await other.context.close();
    await page.context().close();
  });

  test('behind an https checkout URL, signing in sets each __Host- cookie once', async () => {
    // The checkout URL is what a proxy in front of Kasse serves; requests still reach this listener.
    const { kasse } = w.t;
    const real = kasse.urls.checkout;
    kasse.urls.checkout = 'https://pay.example';
    try {
      const form = await fetch(`${base}/dashboard/signin`);
      const pre = form.headers.getSetCookie().find((c) => c.startsWith('__Host-kasse_pre='))!;
      assert.match(pre, /; Secure/);
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
      const res = await fetch(`${base}/dashboard/signin`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: pre.split(';')[0]! },
        body: new URLSearchParams({ _csrf: csrf, email: owner.email, password: owner.password }),
      });
      assert.equal(res.status, 303);
      const names = res.headers.getSetCookie().map((c) => c.split('=')[0]);
      assert.deepEqual(names.sort(), ['__Host-kasse_device', '__Host-kasse_session'], 'each cookie once');
    } finally {
      kasse.urls.checkout = real;
    }
  });

  test('throttling: a wait after repeated failures, per account and per address; a known browser still gets in', async () => {
    const known = await b.open('desktop');
    await signIn(known.page, base, w.t.clock, owner);
    await signOut(known.page);
    const attacker = await b.open('phone');
    // Start of a fresh window, so the count is exact.
    w.t.clock.set(Math.ceil((w.t.clock.millis() + 1) / THROTTLE_WINDOW_MS) * THROTTLE_WINDOW_MS + 1000);
    for (let i = 0; i < THROTTLE_LIMITS.account; i++) {
      await attacker.page.goto(`${base}/dashboard/signin`);
      await attacker.page.getByLabel('Email').fill(owner.email);
      await attacker.page.getByLabel('Password').fill(`wrong-password-${i}`);
      await attacker.page.getByRole('button', { name: 'Sign in' }).click();
      await attacker.page.getByRole('alert').filter({ hasText: 'do not match an account' }).waitFor();
    }
    // Now even the right password waits, with a clear message.
    await attacker.page.getByLabel('Email').fill(owner.email);
    await attacker.page.getByLabel('Password').fill(owner.password);
    const [res] = await Promise.all([
      attacker.page.waitForResponse((r) => r.url().endsWith('/dashboard/signin') && r.request().method() === 'POST'),
      attacker.page.getByRole('button', { name: 'Sign in' }).click(),
    ]);
    assert.equal(res.status(), 429);
    assert.ok(Number(res.headers()['retry-after']) > 0);
    await attacker.page
      .getByRole('alert')
      .filter({ hasText: /Too many attempts\. Wait \d+ minutes? and try again\./ })
      .waitFor();
    await screenshot(attacker.page, 'dashboard-throttled-phone');
    // The owner's own browser (signed in here before) is not locked out by it.
    await signIn(known.page, base, w.t.clock, owner);
    await known.page.getByRole('heading', { name: 'Home' }).waitFor();
    // After the window the attacker's browser may try again (a wait, not a lock).
    w.t.clock.advance(THROTTLE_WINDOW_MS);
    await signIn(attacker.page, base, w.t.clock, owner);
    await attacker.page.getByRole('heading', { name: 'Home' }).waitFor();
    assert.ok((await audit('signin.failed')).some((a) => a.details?.reason === 'throttled'));

    // Per address: many accounts from one address.
    w.t.clock.set(Math.ceil((w.t.clock.millis() + 1) / THROTTLE_WINDOW_MS) * THROTTLE_WINDOW_MS + 1000);
    const spray = await b.open('phone');
    await spray.page.goto(`${base}/dashboard/signin`);
    const token = await csrfOf(spray.page);
    let last = 0;
    for (let i = 0; i <= THROTTLE_LIMITS.address; i++) {
      last = (
        await post(spray.page, `${base}/dashboard/signin`, {
          _csrf: token,
          email: `nobody${i}@example.com`,
          password: 'whatever-it-is',
        })
      ).status;
    }
    assert.equal(last, 429);
    // Every test browser shares 127.0.0.1: let that window pass.
    w.t.clock.advance(THROTTLE_WINDOW_MS);
    await spray.context.close();
    await known.context.close();
    await attacker.context.close();
  });

  test('sessions end after an hour idle and after 12 hours in all; sign-out revokes the session', async () => {
    const { page } = await b.open('desktop');
    await signIn(page, base, w.t.clock, owner);
    w.t.clock.advance(SESSION_IDLE_MS - MINUTE);
    assert.equal((await get(page, `${base}/dashboard/test`)).status, 200);
    w.t.clock.advance(SESSION_IDLE_MS + MINUTE);
    const idle = await get(page, `${base}/dashboard/test/payments`);
    assert.equal(idle.status, 303);
    assert.equal(idle.location, '/dashboard/signin?next=%2Fdashboard%2Ftest%2Fpayments');
    // Absolute: active every 50 minutes, still out after 12 hours.
    await signIn(page, base, w.t.clock, owner);
    for (let t = 0; t < SESSION_MAX_MS - HOUR; t += 50 * MINUTE) {
      w.t.clock.advance(50 * MINUTE);
      assert.equal((await get(page, `${base}/dashboard/test`)).status, 200);
    }
    w.t.clock.advance(2 * HOUR);
    assert.equal((await get(page, `${base}/dashboard/test`)).status, 303);
    // Sign-out: the cookie's session is dead even if replayed.
    await signIn(page, base, w.t.clock, owner);
    const cookies = await page.context().cookies();
    await signOut(page);
    const replay = await b.open('desktop');
    await replay.context.addCookies(cookies);
    assert.equal((await get(replay.page, `${base}/dashboard/test`)).status, 303);
    await replay.context.close();
    await page.context().close();
  });

  test('invitation by email (real SMTP): set up, sign in as a member; removal signs them out', async () => {
    const { page } = await b.open('desktop');
    await signIn(page, base, w.t.clock, owner);
    await page.goto(`${base}/dashboard/test/team`);
    await page.getByLabel('Email').fill('new.member@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('The invitation was sent.').waitFor();
    // Someone already on the team is told so, not asked for an email address; nothing is sent or created.
    const team = (await w.t.kasse.users.team.list(w.m.id)).length;
    for (const [email, said] of [
      [
        ' New.Member@Example.com',
        /new\.member@example\.com is already on your team as member \(invited, not yet signed in: use Resend invitation/,
      ],
      ['OWNER@example.com', /owner@example\.com is already on your team as owner\./],
    ] as const) {
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Role', { exact: true }).selectOption('viewer');
      await page.getByRole('button', { name: 'Send invitation', exact: true }).click();
      await page.locator('.d-error').waitFor();
      const told = await page.locator('.d-error').innerText();
      assert.match(told, said);
      assert.doesNotMatch(told, /Enter the email address/);
      assert.equal(await page.locator('#f-email[aria-invalid=true]').count(), 1);
    }
    assert.equal((await w.t.kasse.users.team.list(w.m.id)).length, team);
    await w.t.kasse.email.runOnce();
    const mail = await smtp.waitFor((m) => m.to === 'new.member@example.com');
    assert.match(mail.subject, /invited to Corner Café/);
    assert.match(mail.text, /owner@example\.com invited you/);
    const url = linkIn(mail.text, '/dashboard/setup/');
    assert.ok(mail.html.includes(url.replace(/&/g, '&amp;')));
    const invitee = await b.open('phone');
    const member = await setUpAccount(invitee.page, url, w.t.clock, { email: 'new.member@example.com' });
    // Members need no second factor.
    await invitee.page.getByRole('heading', { name: 'Home' }).waitFor();
    assert.equal(invitee.page.url(), `${base}/dashboard/test?done=password_set`);
    await screenshot(invitee.page, 'dashboard-home-member-phone');
    void member;
    // The owner removes them: their session ends at once.
    await page.reload();
    await page.locator('tr', { hasText: 'new.member@example.com' }).getByText('Remove…').click();
    await page.getByRole('button', { name: 'Remove new.member@example.com' }).click();
    await page.getByText('The user was removed').waitFor();
    assert.equal((await get(invitee.page, `${base}/dashboard/test`)).status, 303);
    await invitee.context.close();
    await page.context().close();
  });

  test('password reset by emailed link: signs out every session; the second factor is still asked', async () => {
    const other = await b.open('desktop');
    await signIn(other.page, base, w.t.clock, owner);
    const { page } = await b.open('phone');
    await page.goto(`${base}/dashboard/signin`);
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email').fill(owner.email);
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByText('If that email belongs to an account').waitFor();
    // An unknown email gets the same answer and no mail.
    await page.goto(`${base}/dashboard/reset`);
    await page.getByLabel('Email').fill('stranger@example.com');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await page.getByText('If that email belongs to an account').waitFor();
    await w.t.kasse.email.runOnce();
    const mail = await smtp.waitFor((m) => m.to === owner.email && /Reset your Kasse password/.test(m.subject));
    assert.equal(smtp.messages.filter((m) => m.to === 'stranger@example.com').length, 0);
    const url = linkIn(mail.text, '/dashboard/reset/');
    owner.password = 'a-brand-new-passphrase-77';
    await page.goto(url);
    await page.getByLabel('New password').fill(owner.password);
    await page.getByLabel('Repeat the password').fill(owner.password);
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await page.getByLabel('Code').fill(totpCode(owner.secret!, w.t.clock));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Home' }).waitFor();
    assert.equal((await get(other.page, `${base}/dashboard/test`)).status, 303, 'the other session was signed out');
    assert.equal((await get(page, url)).status, 404, 'the link works once');
    // Password change from the Account page: the current password is needed; other sessions end.
    await signIn(other.page, base, w.t.clock, owner);
    await page.goto(`${base}/dashboard/test/account`);
    await page.getByLabel('Current password').fill('not-my-password');
    await page.getByLabel('New password').fill('yet-another-passphrase-88');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').filter({ hasText: 'current password is not right' }).waitFor();
    await page.getByLabel('Current password').fill(owner.password);
    await page.getByLabel('New password').fill('yet-another-passphrase-88');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Your password was changed').waitFor();
    owner.password = 'yet-another-passphrase-88';
    assert.equal((await get(other.page, `${base}/dashboard/test`)).status, 303);
    assert.equal((await get(page, `${base}/dashboard/test`)).status, 200, 'this browser stays signed in');
    // Each step is in the log on the owner's account: the request by whoever asked, the rest as the owner's own.
    const logged = async (action: string) =>
      (await audit(action))
        .filter((e) => e.action === action)
        .map((e) => [e.actor.type, e.actor.id, e.actor.label, e.target?.type, e.target?.id]);
    assert.deepEqual(await logged('user.password_reset_request'), [['anonymous', null, owner.email, 'user', owner.id]]);
    for (const action of ['user.password_reset', 'user.password_change']) {
      assert.deepEqual(await logged(action), [['user', owner.id, owner.email, 'user', owner.id]], action);
    }
    await other.context.close();
    await page.context().close();
  });
});
