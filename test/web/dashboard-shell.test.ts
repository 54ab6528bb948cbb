/**
 * The dashboard's shell in real Chromium, as a merchant meets it: live keys rolled and revoked after a confirmation
 * and a TOTP code, the new key shown once and a reload rolling nothing; every form POST/redirect/GET so a failed form
 * leaves a page that reloads; its own 404 pages in the frame (no JSON, no Home highlighted); the session cookie
 * SameSite=Lax (a link from another site opens the page signed in, a form there still changes nothing); live mode's
 * banner with the words of `GET /currencies`; and the audit log: every action family in its filter, details as
 * labelled values, refusals and first sign-ins recorded, no word broken in its table.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ACTION_FAMILIES, inFamily } from '../../src/web/dashboard/pages/audit.ts';
import { readmeSection } from '../../src/web/dashboard/pages/going-live.ts';
import { t } from '../../src/core/i18n/index.ts';
import { ApiClient } from '../harness/app.ts';
import { startMerchantSite, type TestBrowser, type WebKasse } from '../harness/browser.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';
import {
  csrfOf,
  post,
  totpCode,
  type DashboardUser,
  startDashboard,
  TEAM,
  type DashboardTeam,
} from '../harness/dashboard.ts';

let w: WebKasse;
let b: TestBrowser;
let base: string;
let users: Record<keyof typeof TEAM, DashboardUser>;
let as: DashboardTeam<keyof typeof TEAM>['as'];

before(async () => {
  ({ w, b, base, users, as } = await startDashboard(TEAM));
});
after(async () => {
  await b?.close();
  await w?.close();
});

const audit = async (action: string) =>
  (await w.t.kasse.audit.list(w.m.id, { action })).data.filter((a) => a.action === action);
const activeLiveKey = async () =>
  (await w.t.kasse.merchants.listKeys(w.m.id)).find((k) => k.mode === 'live' && !k.revoked_at)!;

describe('dashboard shell', () => {
  test('a live key is rolled after a confirmation and a code, shown once; a reload rolls nothing and shows no key', async () => {
    const { page, context } = await as('ana');
    await page.goto(`${base}/dashboard/live/developers`);
    await page.getByRole('link', { name: 'Roll live key' }).click();
    await page.getByRole('heading', { name: 'Roll the live key' }).waitFor();
    assert.match((await page.locator('main').textContent())!, /revokes every current live key at once/);
    // A wrong code rolls nothing; the failure is shown on a page that reloads.
    await page.getByLabel('Your current 6-digit code').fill('000000');
    await page.getByRole('button', { name: 'Roll live key' }).click();
    await page.getByRole('alert').filter({ hasText: 'That code is not valid' }).waitFor();
    assert.match(page.url(), /\/dashboard\/live\/developers\/keys\/roll\?form=/);
    assert.equal((await audit('key.roll')).length, 0);
    assert.equal((await w.m.live.get('/account')).status, 200, 'the live key still works');
    // Without a code (a direct POST), nothing either.
    const bare = await post(page, `${base}/dashboard/live/developers/keys/roll`, { _csrf: await csrfOf(page) });
    assert.equal(bare.status, 400);
    assert.equal((await audit('key.roll')).length, 0);

    await page.getByLabel('Your current 6-digit code').fill(totpCode(users.ana.secret!, w.t.clock));
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Roll live key' }).click(),
    ]);
    assert.equal(answer.status(), 303, 'the roll answers with a redirect, never with the key');
    await page.waitForURL(/\/dashboard\/live\/developers\?done=key_rolled$/);
    const key = (await page.locator('#new-key').textContent())!;
    assert.match(key, /^kasse_live_[A-Za-z0-9_-]{32}$/);
    assert.equal((await w.m.live.get('/account')).status, 401, 'the previous live key stopped working');
    const api = new ApiClient(w.t.urls.live, key);
    assert.equal((await api.get('/account')).status, 200);
    // The reload the browser offers: nothing secret, nothing rolled.
    const again = await page.reload();
    assert.equal(again!.status(), 200);
    assert.equal(await page.locator('#new-key').count(), 0);
    assert.ok(!(await page.content()).includes(key));
    assert.equal((await api.get('/account')).status, 200, 'the key just copied still works');
    assert.equal((await audit('key.roll')).length, 1);

    // Revoking a live key: a confirmation page, a code.
    const k = await activeLiveKey();
    await page.goto(`${base}/dashboard/live/developers`);
    await page.getByRole('link', { name: 'Revoke' }).click();
    await page.getByRole('heading', { name: 'Revoke a live key' }).waitFor();
    const refused = await post(page, `${base}/dashboard/live/developers/keys/${k.id}/revoke`, {
      _csrf: await csrfOf(page),
      code: '123456',
    });
    assert.equal(refused.status, 400);
    assert.equal((await api.get('/account')).status, 200);
    await page.getByLabel('Your current 6-digit code').fill(totpCode(users.ana.secret!, w.t.clock));
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('The key was revoked').waitFor();
    assert.equal((await api.get('/account')).status, 401);
    assert.equal((await audit('key.revoke')).length, 1);
    await context.close();
  });

  test('unknown addresses answer the dashboard 404 page in the frame; a failed form redirects to a page that reloads', async () => {
    const { page, context } = await as('ana');
    for (const path of [
      '/dashboard/test/nope',
      '/dashboard/test/disbursements/dsb_01JNZZZZZZZZZZZZZZZZZZZZZZ/approve',
      '/dashboard/prod/payments',
      '/dashboard/test/developers/keys/roll/x',
    ]) {
      const res = await page.goto(base + path);
      assert.equal(res!.status(), 404, path);
      assert.match(res!.headers()['content-type']!, /^text\/html/, path);
      assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Not found', path);
      assert.equal(await page.locator('.d-nav').count(), 1, `${path}: in the signed-in frame`);
      assert.equal(await page.locator('.d-nav [aria-current]').count(), 0, `${path}: no page highlighted`);
    }
    const postUnknown = await page
      .context()
      .request.post(`${base}/dashboard/test/nope`, { form: { _csrf: 'x' }, maxRedirects: 0 });
    assert.equal(postUnknown.status(), 404);
    assert.match(postUnknown.headers()['content-type']!, /^text\/html/);
    // A request that fails before any page handles it (too large, a type no form sends) is a dashboard page too.
    const action = `${base}/dashboard/live/developers/webhook-url`;
    const tooLarge = await page
      .context()
      .request.post(action, { form: { _csrf: 'x', webhook_url: 'h'.repeat(2_000_000) }, maxRedirects: 0 });
    const oddType = await page
      .context()
      .request.post(action, { data: 'webhook_url=x', headers: { 'content-type': 'text/plain' }, maxRedirects: 0 });
    for (const [res, status, words] of [
      [tooLarge, 413, /too large/],
      [oddType, 415, /could not be read|Content-Type/],
    ] as const) {
      assert.equal(res.status(), status);
      assert.match(res.headers()['content-type']!, /^text\/html/);
      const text = await res.text();
      assert.match(text, words);
      assert.doesNotMatch(text, /"error"/);
    }
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).webhookUrl.live, null, 'nothing was saved');
    // The live Mail page does not exist: 404, Home is not highlighted.
    const mail = await page.goto(`${base}/dashboard/live/mail`);
    assert.equal(mail!.status(), 404);
    assert.equal(await page.locator('.d-nav [aria-current]').count(), 0);

    // A failed form: 303 to the page it belongs to, which shows the failure once with its status; a reload is fresh.
    await page.goto(`${base}/dashboard/live/developers`);
    const raw = await page.context().request.post(`${base}/dashboard/live/developers/webhook-url`, {
      form: { _csrf: await csrfOf(page), webhook_url: 'http://shop.example/hook' },
      maxRedirects: 0,
      headers: { origin: base },
    });
    assert.equal(raw.status(), 303);
    assert.match(raw.headers().location!, /^\/dashboard\/live\/developers\?form=[A-Za-z0-9_-]{22}$/);
    await page.getByLabel('Events are POSTed here').fill('http://shop.example/hook');
    await page.getByRole('button', { name: 'Save URL' }).click();
    await page.waitForURL(/\/dashboard\/live\/developers\?form=/);
    await page.getByRole('alert').filter({ hasText: 'https://' }).waitFor();
    const reloaded = await page.reload();
    assert.equal(reloaded!.status(), 200);
    assert.equal(await page.getByRole('alert').count(), 0);
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).webhookUrl.live, null, 'nothing was saved');
    await context.close();

    // Signed out: the 404 page outside the frame.
    const anon = await b.open('phone');
    const res = await anon.page.goto(`${base}/dashboard/test/nope`);
    assert.equal(res!.status(), 404);
    assert.equal(await anon.page.getByRole('heading', { level: 1 }).textContent(), 'Page not found');
    await anon.context.close();
  });

  test('the session cookie is SameSite=Lax: a link from another site opens the page signed in; a form there changes nothing', async () => {
    const rec = await as('ana');
    const cookie = (await rec.context.cookies(base)).find((c) => c.name === 'kasse_session')!;
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.httpOnly, true);
    const before = (await w.t.kasse.merchants.listKeys(w.m.id)).filter((k) => !k.revoked_at).map((k) => k.id);
    const site = await startMerchantSite({
      '/': {
        type: 'text/html',
        body: `<!doctype html><a id="go" href="${base}/dashboard/test/payments">Open the dashboard</a><form id="f" method="post" action="${base}/dashboard/test/developers/keys/roll"><button>Roll</button></form>`,
      },
    });
    try {
      // Another site: localhost is not 127.0.0.1.
      await rec.page.goto(site.url.replace('127.0.0.1', 'localhost'));
      await rec.page.click('#go');
      await rec.page.waitForURL(`${base}/dashboard/test/payments`);
      assert.equal(await rec.page.getByRole('heading', { level: 1 }).textContent(), 'Payments');
      await rec.page.goto(site.url.replace('127.0.0.1', 'localhost'));
      await rec.page.click('#f button');
      await rec.page.waitForLoadState('domcontentloaded');
      assert.doesNotMatch(rec.page.url(), /developers\?done=key_rolled/);
      assert.deepEqual(
        (await w.t.kasse.merchants.listKeys(w.m.id)).filter((k) => !k.revoked_at).map((k) => k.id),
        before,
        'no key was rolled',
      );
    } finally {
      await site.close();
      await rec.context.close();
    }
  });

  test('live pages carry a banner in plain words when no network takes payments; Going live gives the reasons GET /currencies gives', async () => {
    assert.equal(w.t.kasse.chains.anyAvailable('live'), false);
    const live = new ApiClient(
      w.t.urls.live,
      (await w.t.kasse.merchants.rollKey({ mode: 'live', merchantId: w.m.id }, OPERATOR)).key,
    );
    const reasons = [
      ...new Set(
        ((await live.get('/currencies')).body.data as Array<{ network_status_reason: string }>).map(
          (c) => c.network_status_reason,
        ),
      ),
    ];
    assert.ok(reasons.length > 0 && reasons.every((r) => typeof r === 'string' && r.length > 0));
    /** What merchants and payers should not have to read: commands, settings, files. */
    const OPERATOR_WORDS = /`|kasse |docs\/|\.md\b|networks file|forwarder_factory|rpc_urls|treasury/;
    const { page, context } = await as('member', 'phone');
    for (const path of [
      '/dashboard/live',
      '/dashboard/live/links',
      '/dashboard/live/payments',
      '/dashboard/live/developers',
    ]) {
      await page.goto(base + path);
      const banner = (await page.locator('[data-live-banner]').textContent())!;
      assert.match(banner, /Live mode cannot take payments: no network is running/, path);
      assert.match(banner, /Ethereum, Base, .*, Litecoin: not set up for live payments yet/, path);
      assert.match(banner, /Whoever runs this Kasse finishes the set-up/, path);
      assert.doesNotMatch(banner, OPERATOR_WORDS, path);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `${path} scrolls sideways by ${overflow}px`);
    }
    await page.goto(`${base}/dashboard/test`);
    assert.equal(await page.locator('[data-live-banner]').count(), 0, 'no banner in test mode');
    await page.goto(`${base}/dashboard/live`);
    await page.getByRole('link', { name: /Going live/ }).click();
    await page.getByRole('heading', { name: 'Going live', level: 1 }).waitFor();
    // The operator's reasons, commands included, stay on Going live.
    const missing = (await page.locator('[data-missing]').textContent())!;
    for (const r of reasons) assert.ok(missing.includes(r.replace(/`/g, '')), `Going live: "${r}"`);
    assert.match((await page.locator('main').textContent())!, /Fund the hot wallet/);
    const steps = (await readmeSection('Going live'))!.match(/^\d+\. /gm)!.length;
    assert.ok(steps >= 5);
    assert.equal(await page.locator('.d-doc ol > li').count(), steps, "each of the README's steps an item");
    await context.close();

    // Choosing a coin: the API's 503 says why in plain words; the payer's page says it in the payer's language.
    const p = (await live.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'L-1' })).body;
    const api = await live.post(`/payments/${p.id}/attempts`, { chain: 'ethereum', token: 'ethereum:usdc' });
    assert.equal(api.status, 503);
    assert.equal(
      api.body.error.message,
      'The Ethereum network takes no payments now (not set up for live payments yet); choose another coin.',
    );
    const payer = await fetch(`${base}/p/${p.id}/attempts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base, 'accept-language': 'de' },
      body: JSON.stringify({ token: 'ethereum:usdc' }),
    });
    assert.equal(payer.status, 503);
    const told = ((await payer.json()) as { error: { message: string } }).error.message;
    assert.equal(told, t('de', 'err.chain_paused'));
    assert.doesNotMatch(told, OPERATOR_WORDS);
  });

  test('audit log: refusals and first sign-ins recorded; every family filters; details as labelled values; no broken words', async () => {
    // A member's and a viewer's first sign-in was the set-up link.
    for (const name of ['member', 'viewer'] as const) {
      const rows = (await audit('signin.succeeded')).filter((a) => a.actor.id === users[name].id);
      assert.equal(rows[rows.length - 1]?.details?.method, 'setup_link', name);
    }
    assert.ok(
      (await w.t.kasse.users.team.list(w.m.id)).every((u) => u.last_signin_at !== null),
      'every user shows a last sign-in',
    );
    // A permission refused.
    const viewer = await as('viewer');
    await viewer.page.goto(`${base}/dashboard/test/developers`);
    const denied = await post(viewer.page, `${base}/dashboard/test/developers/keys/roll`, {
      _csrf: await csrfOf(viewer.page),
    });
    assert.equal(denied.status, 403);
    const refusedRow = (await audit('permission.refused')).find((a) => a.actor.id === users.viewer.id)!;
    assert.equal(refusedRow.details?.permission, 'keys.manage');
    await viewer.context.close();
    // A second approval by the same owner, and a release the balance does not cover.
    const ana = await as('ana');
    const id = await createBatch(ana.page);
    await approve(ana.page, id, users.ana);
    const digest = await w.t.kasse.disbursements.digest({ mode: 'test', merchantId: w.m.id }, id);
    const twice = await post(ana.page, `${base}/dashboard/test/disbursements/${id}/approve`, {
      _csrf: await csrfOf(ana.page),
      digest,
      code: totpCode(users.ana.secret!, w.t.clock),
    });
    assert.equal(twice.status, 422);
    const approveRefused = await audit('disbursement.approve_refused');
    assert.equal(approveRefused.length, 1);
    assert.match(String(approveRefused[0]!.details?.reason), /already approved/);
    const bo = await as('bo');
    await approve(bo.page, id, users.bo);
    await bo.page
      .locator('[data-release]')
      .getByLabel('Your current 6-digit code')
      .fill(totpCode(users.bo.secret!, w.t.clock));
    await bo.page.getByRole('button', { name: 'Release' }).click();
    await bo.page.locator('.d-error[role="alert"]').waitFor(); // the refusal, beside the shortfall warning shown before it
    const releaseRefused = await audit('disbursement.release_refused');
    assert.equal(releaseRefused.length, 1);
    assert.equal(releaseRefused[0]!.details?.code, 'insufficient_balance');
    await bo.context.close();

    // Every action recorded belongs to a family of the filter, and each family filters to its own.
    const { page } = ana;
    await page.setViewportSize({ width: 820, height: 900 });
    const recorded = (await w.t.kasse.audit.list(w.m.id, { limit: 1000 })).data.map((a) => a.action);
    for (const action of new Set(recorded))
      assert.ok(
        ACTION_FAMILIES.some((f) => inFamily(action, f)),
        `${action} has a family`,
      );
    await page.goto(`${base}/dashboard/test/audit`);
    const options = await page.getByLabel('What').locator('option').allTextContents();
    for (const label of [
      'Disbursements',
      'Second factor',
      'Tax invoices',
      'Subscriptions',
      'API keys',
      'Team and accounts',
      'Settings and statement emails',
      'Refused and failed',
    ]) {
      assert.ok(options.includes(label), `the filter offers ${label}`);
    }
    for (const family of ACTION_FAMILIES) {
      await page.goto(`${base}/dashboard/test/audit?action=${family.value}`);
      const shown = await page.locator('td[data-label=What] > code').allTextContents();
      assert.deepEqual(shown, recorded.filter((a) => inFamily(a, family)).slice(0, 50), family.value);
    }
    await page.goto(`${base}/dashboard/test/audit?action=refused`);
    const row = page.locator('tr', {
      has: page.locator('td[data-label=What] > code', { hasText: 'disbursement.release_refused' }),
    });
    const what = (await row.locator('td[data-label=What]').textContent())!;
    assert.match(what, /Reason.*The batch needs/);
    assert.match(what, /Error codeinsufficient_balance/);
    assert.doesNotMatch(what, /[{}"]/, 'no JSON');
    // Nothing in the table breaks inside a word: the Mode header, a mode, an address each on one line.
    await page.goto(`${base}/dashboard/test/audit`);
    // (A string: the test runner's transform would name the inner function with a helper the page lacks.)
    const lines = (await page.evaluate(`(() => {
      const count = (el) => {
        const r = document.createRange();
        r.selectNodeContents(el);
        return new Set(Array.from(r.getClientRects()).map((x) => Math.round(x.top))).size;
      };
      return {
        headers: Array.from(document.querySelectorAll('.d-audit th')).map(count),
        cells: Array.from(document.querySelectorAll('.d-audit td[data-label=Mode], .d-audit td[data-label=From]')).map(count),
      };
    })()`)) as { headers: number[]; cells: number[] };
    assert.ok(
      lines.headers.length === 6 && lines.headers.every((n) => n === 1),
      `headers on one line: ${lines.headers}`,
    );
    assert.ok(lines.cells.length > 0 && lines.cells.every((n) => n === 1), `cells on one line: ${lines.cells}`);
    await ana.context.close();
  });

  test('every action the code records belongs to a family of the audit filter', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) files.push(p);
      }
    };
    walk('src');
    const actions = new Set<string>();
    for (const f of files) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/\baction: ([^,}\n]+)/g))
        for (const lit of m[1]!.matchAll(/'([a-z_]+\.[a-z_]+|signout)'/g)) actions.add(lit[1]!);
      for (const m of text.matchAll(/verifySecondFactor\([^)]*'([a-z_.]+)'/g)) actions.add(m[1]!);
      // The audit helper's calls, and entries built by a module's helper, name the action among the call's arguments.
      for (const m of text.matchAll(/\b(?:record|recordAlone|statement<\w+>|writes|audited)\(([^;]*)/g))
        for (const lit of m[1]!.matchAll(/'([a-z_]+\.[a-z_]+|signout)'/g)) actions.add(lit[1]!);
    }
    assert.ok(actions.size > 30, `found ${actions.size}`);
    for (const a of [
      'payment.create',
      'disbursement.approve_refused',
      'permission.refused',
      'second_factor.failed',
      'tax_invoice.create',
      'subscription.cancel',
    ])
      assert.ok(actions.has(a), a);
    for (const a of actions)
      assert.ok(
        ACTION_FAMILIES.some((f) => inFamily(a, f)),
        `${a} has a family`,
      );
  });
});

const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

async function createBatch(page: Page): Promise<string> {
  await page.goto(`${base}/dashboard/test/disbursements`);
  await page.getByLabel('Title').fill('Affiliates');
  await page.locator('textarea[name=csv]').fill(`${addr(1)},2500,Ann\n${addr(2)},2500,Bob\n`);
  await page.getByRole('button', { name: 'Check rows' }).click();
  await page.getByRole('button', { name: /Create disbursement of/ }).click();
  await page.waitForURL(/\/disbursements\/dsb_/);
  return /\/(dsb_[0-9A-Z]{26})/.exec(page.url())![1]!;
}

async function approve(page: Page, id: string, user: DashboardUser): Promise<void> {
  await page.goto(`${base}/dashboard/test/disbursements/${id}`);
  await page.locator('[data-approve]').getByLabel('Your current 6-digit code').fill(totpCode(user.secret!, w.t.clock));
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.getByText('Your approval was recorded.').waitFor();
}
