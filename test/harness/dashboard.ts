/**
 * Driving the merchant dashboard in real Chromium as its users do: set up an account from its one-time link, enrol
 * TOTP (the code is computed here from the secret the page shows, at the app's fake-clock time), save the recovery
 * codes, sign in and out. Direct requests (`post`) reuse the browser's cookies, to try what a hidden button would
 * not allow.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { Secret, TOTP } from 'otpauth';
import type { FakeClock } from '../../src/core/clock.ts';
import type { Kasse } from '../../src/kasse.ts';
import {
  launchBrowser,
  startWebKasse,
  type RecordedPage,
  type Size,
  type TestBrowser,
  type WebKasse,
} from './browser.ts';

export interface DashboardUser {
  id: string;
  email: string;
  password: string;
  /** Base32 TOTP secret once enrolled. */
  secret: string | null;
  recoveryCodes: string[];
}

export const PASSWORD = 'correct-horse-battery-staple-42';

/** A TOTP code for the app's current (fake) time; the clock moves 30 s first so no code is reused. */
export function totpCode(secret: string, clock: FakeClock): string {
  clock.advance(30_000);
  return TOTP.generate({
    secret: Secret.fromBase32(secret),
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    timestamp: clock.millis(),
  });
}

/** Creates a user as the operator's CLI does; returns the one-time set-up link. */
export async function createUser(
  kasse: Kasse,
  merchantId: string,
  email: string,
  role: 'owner' | 'member' | 'viewer',
): Promise<{ id: string; setupUrl: string }> {
  const r = await kasse.users.team.create({
    merchantId,
    email,
    role,
    actor: { type: 'operator', id: null, label: 'test', ip: null },
    invite: false,
  });
  return { id: r.user.id, setupUrl: r.setup_url };
}

/** Opens a set-up (or reset) link, chooses the password, and enrols TOTP when the page asks (owners). */
export async function setUpAccount(
  page: Page,
  url: string,
  clock: FakeClock,
  o: { email: string; password?: string; enrol?: boolean; id?: string },
): Promise<DashboardUser> {
  const password = o.password ?? PASSWORD;
  await page.goto(url);
  await page.getByLabel('New password').fill(password);
  await page.getByLabel('Repeat the password').fill(password);
  await page.getByRole('button', { name: 'Save password' }).click();
  await page.waitForLoadState('domcontentloaded');
  const user: DashboardUser = { id: o.id ?? '', email: o.email, password, secret: null, recoveryCodes: [] };
  if (page.url().endsWith('/dashboard/enrol') || o.enrol) {
    if (!page.url().endsWith('/dashboard/enrol')) await page.goto(new URL('/dashboard/enrol', page.url()).toString());
    await enrol(page, clock, user);
  }
  return user;
}

/** On the enrolment page: reads the secret, enters a code, keeps the recovery codes, continues. */
export async function enrol(page: Page, clock: FakeClock, user: DashboardUser): Promise<void> {
  await page.getByRole('heading', { name: 'Set up two-factor authentication' }).waitFor();
  const secret = await page.locator('[data-totp-secret]').getAttribute('data-totp-secret');
  assert.ok(secret && /^[A-Z2-7]{32}$/.test(secret), 'the page shows a base32 secret');
  assert.equal(await page.locator('.d-qr svg').count(), 1, 'the page shows a QR code');
  user.secret = secret;
  await page.getByLabel('6-digit code').fill(totpCode(secret, clock));
  await page.getByRole('button', { name: 'Turn on' }).click();
  await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
  user.recoveryCodes = await page.locator('#recovery-codes code').allTextContents();
  assert.equal(user.recoveryCodes.length, 10);
  await page.getByRole('link', { name: /I saved them/ }).click();
  await page.waitForLoadState('domcontentloaded');
}

/** Signs in through the form (and the second factor when the user has one). */
export async function signIn(
  page: Page,
  base: string,
  clock: FakeClock,
  user: DashboardUser,
  o: { code?: string; next?: string } = {},
): Promise<void> {
  await page.goto(`${base}/dashboard/signin${o.next ? `?next=${encodeURIComponent(o.next)}` : ''}`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState('domcontentloaded');
  if (user.secret) {
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await page.getByLabel('Code').fill(o.code ?? totpCode(user.secret, clock));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForLoadState('domcontentloaded');
  }
}

export async function signOut(page: Page): Promise<void> {
  await page.locator('.d-user summary').click();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/dashboard\/signin/);
}

/** The CSRF token of the page the browser is on. */
export async function csrfOf(page: Page): Promise<string> {
  const token = await page.locator('input[name=_csrf]').first().getAttribute('value');
  assert.ok(token);
  return token;
}

/**
 * A form POST with the browser's cookies: status, location and body. A success's redirect is not followed; a failed
 * form's redirect (303 to `…?form=<id>`, POST/redirect/GET) is, as the browser does, and the answer is the page that
 * shows the failure, with its status (`redirected` says so).
 */
export async function post(
  page: Page,
  url: string,
  form: Record<string, string>,
): Promise<{ status: number; location: string | null; body: string; redirected: boolean }> {
  const res = await page
    .context()
    .request.post(url, { form, maxRedirects: 0, headers: { origin: new URL(url).origin } });
  const location = res.headers().location ?? null;
  if (res.status() === 303 && location && /[?&]form=/.test(location)) {
    const shown = await get(page, new URL(location, url).toString());
    return { status: shown.status, location, body: shown.body, redirected: true };
  }
  return { status: res.status(), location, body: await res.text(), redirected: false };
}

/** A GET with the browser's cookies (response headers with lower-case names). */
export async function get(
  page: Page,
  url: string,
): Promise<{ status: number; location: string | null; body: string; headers: Record<string, string> }> {
  const res = await page.context().request.get(url, { maxRedirects: 0 });
  return {
    status: res.status(),
    location: res.headers().location ?? null,
    body: await res.text(),
    headers: res.headers(),
  };
}

export type Role = 'owner' | 'member' | 'viewer';

/** The app, a browser and a team whose accounts are set up (owners enrolled in TOTP), for a test file's `before`. */
export interface DashboardTeam<N extends string> {
  w: WebKasse;
  b: TestBrowser;
  /** The app's address (checkout origin; the dashboard is under /dashboard). */
  base: string;
  users: Record<N, DashboardUser>;
  /** A fresh browser context signed in as `name`. */
  as(name: N, size?: Size): Promise<RecordedPage>;
  close(): Promise<void>;
}

/** The four people most dashboard tests need: two owners (ana, bo), a member and a viewer. */
export const TEAM = { ana: 'owner', bo: 'owner', member: 'member', viewer: 'viewer' } as const;

/** Starts the app and a browser, and sets up one account per entry of `team` (`<name>@example.com`). */
export async function startDashboard<N extends string>(
  team: Record<N, Role>,
  opts: Parameters<typeof startWebKasse>[0] = {},
): Promise<DashboardTeam<N>> {
  const w = await startWebKasse(opts);
  const b = await launchBrowser();
  const base = w.t.urls.checkout;
  const users = {} as Record<N, DashboardUser>;
  for (const [name, role] of Object.entries(team) as [N, Role][]) {
    const u = await createUser(w.t.kasse, w.m.id, `${name}@example.com`, role);
    const { page, context } = await b.open('desktop');
    users[name] = await setUpAccount(page, u.setupUrl, w.t.clock, { email: `${name}@example.com`, id: u.id });
    await context.close();
  }
  return {
    w,
    b,
    base,
    users,
    async as(name, size = 'desktop') {
      const rec = await b.open(size);
      await signIn(rec.page, base, w.t.clock, users[name]);
      return rec;
    },
    async close() {
      await b.close();
      await w.close();
    },
  };
}
