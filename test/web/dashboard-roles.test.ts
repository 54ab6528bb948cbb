/**
 * Roles on the dashboard, enforced on the server: what owners, members and viewers may do — refused by direct POST
 * with a valid CSRF token, not only by hidden buttons; the last owner can be neither removed nor demoted; a user of
 * one merchant never sees or changes another merchant's data; POS terminals need a signed-in user of the merchant.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  launchBrowser,
  screenshot,
  startWebKasse,
  type RecordedPage,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';
import { createUser, csrfOf, get, post, setUpAccount, signIn, type DashboardUser } from '../harness/dashboard.ts';
import type { TestMerchant } from '../harness/app.ts';

let w: WebKasse;
let b: TestBrowser;
let base: string;
let other: TestMerchant;
const users: Record<'owner' | 'member' | 'viewer' | 'stranger', DashboardUser> = {} as never;
const ids: Record<string, string> = {};

before(async () => {
  w = await startWebKasse();
  b = await launchBrowser();
  base = w.t.urls.checkout;
  other = await w.t.merchant({ name: 'Other Shop' });
  for (const [role, merchant] of [
    ['owner', w.m.id],
    ['member', w.m.id],
    ['viewer', w.m.id],
    ['stranger', other.id],
  ] as const) {
    const u = await createUser(w.t.kasse, merchant, `${role}@example.com`, role === 'stranger' ? 'owner' : role);
    const { page, context } = await b.open('desktop');
    users[role] = await setUpAccount(page, u.setupUrl, w.t.clock, { email: `${role}@example.com`, id: u.id });
    await context.close();
  }
  const api = w.m.test;
  ids.waiting = (await api.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: 'R-1' })).body.id;
  ids.paid = (await api.post('/payments', { price_amount: 2000, price_currency: 'USD', order_id: 'R-2' })).body.id;
  await api.post(`/test/payments/${ids.paid}/simulate`, { outcome: 'paid' });
  ids.link = (await api.post('/links', { kind: 'fixed', title: 'Mug', amount_usd_cents: 1500 })).body.id;
  const pos = (await api.post('/links', { kind: 'pos', title: 'Counter' })).body;
  ids.pos = pos.slug;
  ids.event = (await api.get('/events?limit=1')).body.data[0].id;
  ids.otherPayment = (
    await other.test.post('/payments', {
      price_amount: 500,
      price_currency: 'USD',
      order_id: 'THEIRS-1',
      description: 'secret order of another shop',
    })
  ).body.id;
});
after(async () => {
  await b?.close();
  await w?.close();
});

async function as(role: keyof typeof users): Promise<RecordedPage & { token: string }> {
  const rec = await b.open('desktop');
  await signIn(rec.page, base, w.t.clock, users[role]);
  await rec.page.goto(`${base}/dashboard/test`);
  return { ...rec, token: await csrfOf(rec.page) };
}

/** Every action of the dashboard with a form that would succeed for an owner. */
function actions(): Array<{
  name: string;
  path: string;
  form: Record<string, string>;
  allowed: Array<'owner' | 'member' | 'viewer'>;
}> {
  const t = '/dashboard/test';
  return [
    { name: 'cancel a payment', path: `${t}/payments/${ids.waiting}/cancel`, form: {}, allowed: ['owner', 'member'] },
    {
      name: 'refund a payment',
      path: `${t}/payments/${ids.paid}/refund`,
      form: { destination: '0x000000000000000000000000000000000000dEaD' },
      allowed: ['owner', 'member'],
    },
    {
      name: 'create a link',
      path: `${t}/links`,
      form: { kind: 'fixed', title: 'Role test', amount: '5' },
      allowed: ['owner', 'member'],
    },
    { name: 'edit a link', path: `${t}/links/${ids.link}`, form: { active: '0' }, allowed: ['owner', 'member'] },
    {
      name: 'set the webhook URL',
      path: `${t}/developers/webhook-url`,
      form: { webhook_url: 'https://shop.example/hook' },
      allowed: ['owner', 'member'],
    },
    {
      name: 'redeliver an event',
      path: `${t}/developers/events/${ids.event}/redeliver`,
      form: {},
      allowed: ['owner', 'member'],
    },
    { name: 'roll a key', path: `${t}/developers/keys/roll`, form: {}, allowed: ['owner'] },
    {
      name: 'reveal the webhook secret',
      path: `${t}/developers/secret/reveal`,
      form: { code: '000000' },
      allowed: ['owner'],
    },
    {
      name: 'invite a user',
      path: `${t}/team/invite`,
      form: { email: 'someone@example.com', role: 'viewer' },
      allowed: ['owner'],
    },
    { name: 'change a role', path: `${t}/team/${users.viewer.id}/role`, form: { role: 'viewer' }, allowed: ['owner'] },
    {
      name: 'save settings',
      path: `${t}/settings`,
      form: { name: 'Corner Café', payout_token: 'base:usdc', approvals_required: '' },
      allowed: ['owner'],
    },
    {
      name: 'set the tax profile',
      path: `${t}/settings/tax_profile`,
      form: {
        'tax_profile.seller_name': 'Corner Café',
        'tax_profile.tax_id': '27AAPFU0939F1ZV',
        'tax_profile.address': 'Mumbai',
        'tax_profile.state_code': '27',
      },
      allowed: ['owner'],
    },
    { name: 'receive statements by email', path: `${t}/statements/email`, form: { email: 'on' }, allowed: ['owner'] },
  ];
}

describe('dashboard roles', () => {
  test('members and viewers: refused actions by direct POST change nothing; hidden buttons agree', async () => {
    for (const role of ['viewer', 'member'] as const) {
      const rec = await as(role);
      for (const a of actions().filter((x) => !x.allowed.includes(role))) {
        const res = await post(rec.page, base + a.path, { _csrf: rec.token, ...a.form });
        assert.equal(res.status, 403, `${role} may not ${a.name}`);
        assert.match(res.body, /Your role does not allow this action/);
      }
      // Nothing changed.
      assert.equal((await w.m.test.get(`/payments/${ids.waiting}`)).body.status, 'waiting');
      assert.equal((await w.t.kasse.users.team.list(w.m.id)).length, 3);
      // Owner-only pages.
      assert.equal((await get(rec.page, `${base}/dashboard/test/audit`)).status, 403);
      assert.equal((await get(rec.page, `${base}/dashboard/test/mail`)).status, 403);
      // Buttons are not offered either.
      await rec.page.goto(`${base}/dashboard/test/developers`);
      assert.equal(await rec.page.getByRole('button', { name: 'Roll test key' }).count(), 0);
      assert.equal(await rec.page.getByRole('button', { name: 'Reveal secret' }).count(), 0);
      await rec.page.goto(`${base}/dashboard/test/team`);
      assert.equal(await rec.page.getByRole('button', { name: 'Send invitation' }).count(), 0);
      await rec.page.goto(`${base}/dashboard/test/payments/${ids.waiting}`);
      assert.equal(await rec.page.getByRole('button', { name: 'Cancel payment' }).count(), role === 'member' ? 1 : 0);
      assert.equal(await rec.page.getByRole('link', { name: 'Audit log' }).count(), 0);
      await screenshot(rec.page, `dashboard-payment-${role}-desktop`);
      await rec.context.close();
    }
    assert.equal((await w.m.test.get(`/payments/${ids.waiting}`)).body.status, 'waiting');
    assert.equal((await w.m.test.get(`/links/${ids.link}`)).body.active, true);
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).webhookUrl.test, null);
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).taxProfile.test ?? null, null);
    assert.equal((await w.t.kasse.db.selectFrom('statement_subscribers').selectAll().execute()).length, 0);
  });

  test('allowed actions go through for each role that has them', async () => {
    // Members: refund and link changes.
    const member = await as('member');
    const refund = actions().find((a) => a.name === 'refund a payment')!;
    assert.equal((await post(member.page, base + refund.path, { _csrf: member.token, ...refund.form })).status, 303);
    const link = actions().find((a) => a.name === 'create a link')!;
    assert.equal((await post(member.page, base + link.path, { _csrf: member.token, ...link.form })).status, 303);
    await member.context.close();
    // Viewers read every page.
    const viewer = await as('viewer');
    for (const path of [
      '',
      '/payments',
      `/payments/${ids.paid}`,
      '/links',
      `/links/${ids.link}`,
      '/developers',
      '/developers/events',
      '/team',
      '/settings',
      '/account',
      '/statements',
      '/statements/2026-03',
      '/statements/2026-03/csv',
      '/statements/2026-03/pdf',
    ]) {
      assert.equal((await get(viewer.page, `${base}/dashboard/test${path}`)).status, 200, path);
    }
    await viewer.context.close();
    // Owners: invite and role change.
    const owner = await as('owner');
    for (const name of [
      'invite a user',
      'change a role',
      'save settings',
      'set the tax profile',
      'receive statements by email',
    ]) {
      const a = actions().find((x) => x.name === name)!;
      const res = await post(owner.page, base + a.path, { _csrf: owner.token, ...a.form });
      assert.ok(res.status === 303 || res.status === 200, `${name}: ${res.status}`);
    }
    await owner.context.close();
  });

  test('the last owner can be neither demoted nor removed', async () => {
    const owner = await as('owner');
    const self = users.owner.id;
    const demote = await post(owner.page, `${base}/dashboard/test/team/${self}/role`, {
      _csrf: owner.token,
      role: 'member',
    });
    assert.equal(demote.status, 422);
    assert.match(demote.body, /The last owner cannot be given another role/);
    const remove = await post(owner.page, `${base}/dashboard/test/team/${self}/remove`, { _csrf: owner.token });
    assert.equal(remove.status, 422);
    assert.match(remove.body, /The last owner cannot be removed/);
    assert.equal((await w.t.kasse.users.team.list(w.m.id)).find((u) => u.id === self)!.role, 'owner');
    // With a second owner, the first may step down.
    assert.equal(
      (
        await post(owner.page, `${base}/dashboard/test/team/${users.member.id}/role`, {
          _csrf: owner.token,
          role: 'owner',
        })
      ).status,
      303,
    );
    assert.equal(
      (
        await post(owner.page, `${base}/dashboard/test/team/${users.member.id}/role`, {
          _csrf: owner.token,
          role: 'member',
        })
      ).status,
      303,
    );
    await owner.page.goto(`${base}/dashboard/test/team`);
    await screenshot(owner.page, 'dashboard-team-owner-desktop');
    await owner.context.close();
  });

  test("another merchant's user sees and changes none of this merchant's data", async () => {
    const s = await as('stranger');
    // Their own list has only their own payment.
    await s.page.goto(`${base}/dashboard/test/payments`);
    assert.deepEqual(await s.page.locator('td[data-label=Order]').allTextContents(), ['THEIRS-1']);
    for (const path of [`/payments/${ids.paid}`, `/links/${ids.link}`, `/developers/events/${ids.event}`]) {
      const res = await get(s.page, `${base}/dashboard/test${path}`);
      assert.equal(res.status, 404, path);
    }
    const cancel = await post(s.page, `${base}/dashboard/test/payments/${ids.waiting}/cancel`, { _csrf: s.token });
    assert.equal(cancel.status, 404);
    const role = await post(s.page, `${base}/dashboard/test/team/${users.viewer.id}/role`, {
      _csrf: s.token,
      role: 'owner',
    });
    assert.equal(role.status, 404);
    assert.equal((await w.m.test.get(`/payments/${ids.waiting}`)).body.status, 'waiting');
    assert.equal((await w.t.kasse.users.team.list(w.m.id)).find((u) => u.id === users.viewer.id)!.role, 'viewer');
    // Nor the other way round.
    const o = await as('owner');
    await o.page.goto(`${base}/dashboard/test/payments`);
    assert.ok(!(await o.page.content()).includes('secret order of another shop'));
    assert.equal((await get(o.page, `${base}/dashboard/test/payments/${ids.otherPayment}`)).status, 404);
    // The CSV export is scoped too.
    assert.ok(!(await get(o.page, `${base}/dashboard/test/payments.csv`)).body.includes('THEIRS-1'));
    // A POS terminal of this merchant is refused to them.
    const pos = await get(s.page, `${base}/l/${ids.pos}`);
    assert.equal(pos.status, 403);
    await o.context.close();
    await s.context.close();
  });

  test('a POS terminal needs a signed-in user of the merchant (any role); a leaked URL takes no payment', async () => {
    const anon = await b.open('phone');
    const res = await anon.page.goto(`${base}/l/${ids.pos}`);
    assert.match(anon.page.url(), new RegExp(`/dashboard/signin\\?next=%2Fl%2F${ids.pos}$`));
    assert.equal(res!.status(), 200);
    const json = await fetch(`${base}/l/${ids.pos}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount_usd_cents: 500 }),
    });
    assert.equal(json.status, 401);
    assert.equal((await json.json()).error.code, 'unauthorized');
    const form = await fetch(`${base}/l/${ids.pos}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'amount=5',
      redirect: 'manual',
    });
    assert.equal(form.status, 303);
    assert.equal(
      (await w.m.test.get('/payments?limit=100')).body.data.filter((p: { order_id: string }) =>
        p.order_id.startsWith(ids.pos!),
      ).length,
      0,
    );
    // Signing in from there comes back to the terminal; a viewer may take payments.
    await signIn(anon.page, base, w.t.clock, users.viewer, { next: `/l/${ids.pos}` });
    await anon.page.waitForURL(new RegExp(`/l/${ids.pos}$`));
    await anon.page.getByLabel('Amount to charge (US$)').fill('12.50');
    await anon.page.getByRole('button', { name: /Charge/ }).click();
    await anon.page.getByText('Scan to pay $12.50').waitFor();
    await screenshot(anon.page, 'dashboard-pos-signed-in-phone');
    const sale = (await w.m.test.get('/payments?limit=100')).body.data.find(
      (p: { order_id: string }) => p.order_id === `${ids.pos}-1`,
    );
    assert.ok(sale, 'the sale is an ordinary payment');
    const audit = (await w.t.kasse.audit.list(w.m.id, { action: 'payment.create', actorId: users.viewer.id })).data;
    assert.equal(audit.length, 1, 'the sale is in the audit log under the staff member');
    await anon.context.close();
  });
});
