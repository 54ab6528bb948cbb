/**
 * The dashboard's Subscriptions pages in real Chromium: the list (status filter) and a subscription's page with its
 * invoices at phone and desktop sizes, markup in customer and title inert, nothing loaded from elsewhere; an owner
 * cancels with the button (the customer is told, the event is sent); a viewer sees no button and a direct POST is
 * refused; another mode and another merchant's subscription are not found. A subscription charged automatically
 * shows its collection, the payer's grant and each charge attempt with its outcome; an owner switches it back to
 * invoices (audited), a viewer and a form without its CSRF token cannot.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  foreignRequests,
  launchBrowser,
  screenshot,
  SIZES,
  startWebKasse,
  type RecordedPage,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';
import { createUser, csrfOf, post, setUpAccount, signIn, type DashboardUser } from '../harness/dashboard.ts';

let w: WebKasse;
let b: TestBrowser;
let base: string;
let owner: DashboardUser;
let viewer: DashboardUser;
const XSS = '<img src=x onerror="alert(1)">';
const ids: Record<string, string> = {};

before(async () => {
  w = await startWebKasse({ merchantName: 'Subs shop' });
  b = await launchBrowser();
  base = w.t.urls.checkout;
  for (const [role, email] of [
    ['owner', 'owner@example.com'],
    ['viewer', 'viewer@example.com'],
  ] as const) {
    const u = await createUser(w.t.kasse, w.m.id, email, role);
    const { page, context } = await b.open('desktop');
    const user = await setUpAccount(page, u.setupUrl, w.t.clock, { email, id: u.id, enrol: role === 'owner' });
    if (role === 'owner') owner = user;
    else viewer = user;
    await context.close();
  }
  const api = w.m.test;
  const make = async (body: Record<string, unknown>) => {
    const res = await api.post('/subscriptions', { amount_usd_cents: 1900, interval: 'month', ...body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const paid = await make({
    customer_email: 'ana@example.com',
    customer_name: `Ana ${XSS}`,
    title: `Beans ${XSS}`,
    grace_days: 3,
  });
  ids.paid = paid.id;
  await api.post(`/test/payments/${paid.invoices[0].payment_id}/simulate`, { outcome: 'paid' });
  ids.open = (
    await make({ customer_email: 'bo@example.com', title: 'Tea club', interval: 'week', interval_count: 2 })
  ).id;
  ids.cancelled = (await make({ customer_email: 'cy@example.com', title: 'Old plan' })).id;
  await api.post(`/subscriptions/${ids.cancelled}/cancel`);
});
after(async () => {
  await b?.close();
  await w?.close();
});

async function signedIn(user: DashboardUser, size: 'phone' | 'desktop' = 'desktop'): Promise<RecordedPage> {
  const rec = await b.open(size);
  await signIn(rec.page, base, w.t.clock, user);
  return rec;
}

describe('dashboard: subscriptions', () => {
  test('list and page at phone and desktop sizes: invoices shown, markup inert, nothing from elsewhere', async () => {
    for (const size of Object.keys(SIZES) as Array<keyof typeof SIZES>) {
      const rec = await signedIn(owner, size);
      const { page } = rec;
      let res = await page.goto(`${base}/dashboard/test/subscriptions`);
      assert.equal(res!.status(), 200);
      assert.equal(await page.getByRole('heading', { level: 1 }).first().textContent(), 'Subscriptions');
      assert.deepEqual(await page.locator('tbody td[data-label=Title]').allTextContents(), [
        'Old plan',
        'Tea club',
        `Beans ${XSS}`,
      ]);
      assert.ok((await page.locator('tbody').textContent())!.includes('$19.00 every 2 weeks'));
      await screenshot(page, `dashboard-subscriptions-${size}`);
      await page.getByRole('link', { name: 'cancelled' }).click();
      await page.waitForURL(/status=cancelled/);
      assert.deepEqual(await page.locator('tbody td[data-label=Title]').allTextContents(), ['Old plan']);
      res = await page.goto(`${base}/dashboard/test/subscriptions/${ids.paid}`);
      assert.equal(res!.status(), 200);
      assert.equal(await page.getByRole('heading', { level: 1 }).first().textContent(), `Beans ${XSS}`);
      assert.ok((await page.locator('main').textContent())!.includes(`Ana ${XSS}`));
      assert.equal(await page.locator('main img').count(), 0);
      assert.deepEqual(await page.locator('tbody td[data-label=Status]').allTextContents(), ['paid']);
      assert.match((await page.locator('main').textContent())!, /1 of 1 invoiced/);
      await screenshot(page, `dashboard-subscription-${size}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 1, `scrolls sideways by ${overflow}px at ${size}`);
      // The invoice links to its payment's page.
      await page.locator('tbody td[data-label=Payment] a').click();
      await page.waitForURL(/\/dashboard\/test\/payments\/pay_/);
      assert.deepEqual(rec.dialogs, []);
      assert.deepEqual(rec.errors, []);
      assert.deepEqual(foreignRequests(rec.requests, base), []);
      await rec.context.close();
    }
  });

  test('an owner cancels with the button; a viewer has no button and a direct POST is refused; other modes and merchants: 404', async () => {
    const v = await signedIn(viewer);
    await v.page.goto(`${base}/dashboard/test/subscriptions/${ids.open}`);
    assert.equal(await v.page.getByRole('button', { name: 'Cancel subscription' }).count(), 0);
    const refused = await post(v.page, `${base}/dashboard/test/subscriptions/${ids.open}/cancel`, {
      _csrf: await csrfOf(v.page),
    });
    assert.equal(refused.status, 403);
    assert.equal((await w.m.test.get(`/subscriptions/${ids.open}`)).body.status, 'active');
    await v.context.close();

    const o = await signedIn(owner);
    assert.equal((await o.page.goto(`${base}/dashboard/live/subscriptions/${ids.open}`))!.status(), 404);
    const other = await w.t.merchant({ name: 'Another shop' });
    const foreign = (
      await other.test.post('/subscriptions', {
        customer_email: 'z@example.com',
        title: 'Theirs',
        amount_usd_cents: 500,
        interval: 'year',
      })
    ).body.id;
    assert.equal((await o.page.goto(`${base}/dashboard/test/subscriptions/${foreign}`))!.status(), 404);
    const forged = await post(o.page, `${base}/dashboard/test/subscriptions/${foreign}/cancel`, {
      _csrf: await csrfOf(o.page),
    });
    assert.equal(forged.status, 404);
    assert.equal((await other.test.get(`/subscriptions/${foreign}`)).body.status, 'active');
    // Without the CSRF token nothing happens.
    const noCsrf = await post(o.page, `${base}/dashboard/test/subscriptions/${ids.open}/cancel`, {});
    assert.equal(noCsrf.status, 403);
    assert.equal((await w.m.test.get(`/subscriptions/${ids.open}`)).body.status, 'active');

    await o.page.goto(`${base}/dashboard/test/subscriptions/${ids.open}`);
    await o.page.getByRole('button', { name: 'Cancel subscription' }).click();
    await o.page.waitForURL(/done=subscription_cancelled/);
    assert.match((await o.page.locator('.d-flash').textContent())!, /The subscription was cancelled/);
    assert.equal(await o.page.getByRole('button', { name: 'Cancel subscription' }).count(), 0);
    const s = (await w.m.test.get(`/subscriptions/${ids.open}`)).body;
    assert.equal(s.status, 'cancelled');
    assert.equal(s.cancellation_reason, 'merchant');
    assert.equal(s.invoices[0].status, 'cancelled');
    // The audit log names the user.
    const audit = await w.t.kasse.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'subscription.cancel')
      .where('actor_type', '=', 'user')
      .execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.actor_id, owner.id);
    await o.context.close();
  });

  test('charged automatically: the grant and each charge attempt with its outcome; an owner switches it back to invoices, a viewer and a form without CSRF cannot', async () => {
    const api = w.m.test;
    const created = await api.post('/subscriptions', {
      customer_email: 'dee@example.com',
      title: 'Charged beans',
      amount_usd_cents: 1900,
      interval: 'month',
      collection: 'charge_automatically',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    assert.equal((await api.post(`/test/subscriptions/${id}/simulate`, { outcome: 'grant' })).status, 200);
    assert.equal((await api.post(`/test/subscriptions/${id}/simulate`, { outcome: 'insufficient_funds' })).status, 200);
    const s = (await api.post(`/test/subscriptions/${id}/advance`)).body;
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.status]),
      [
        [1, 'succeeded'],
        [2, 'failed'],
        [2, 'pending'],
      ],
    );
    const page = `${base}/dashboard/test/subscriptions/${id}`;

    const v = await signedIn(viewer);
    await v.page.goto(page);
    const panel = v.page.locator('section', { has: v.page.getByRole('heading', { name: 'Automatic payment' }) });
    const text = await panel.innerText();
    assert.match(text, /Grant\s+active/);
    assert.match(text, /Amount per period\s+19 USDC on /);
    assert.match(text, /Charges so far\s+1/);
    assert.match(text, /Next charge\s+\S/);
    // Newest first: the retry to come, the failure and its reason, the first period's charge and its transaction.
    const rows = await panel.locator('tbody tr').allInnerTexts();
    assert.equal(rows.length, 3);
    assert.match(rows[0]!, /^2\s+2\s+19 USDC\s+pending/);
    assert.match(rows[1]!, /^2\s+1\s+19 USDC\s+failed\s+insufficient funds: /);
    assert.match(rows[2]!, new RegExp(`^1\\s+1\\s+19 USDC\\s+succeeded\\s+${s.charges[0].transaction}`));
    assert.match(await v.page.locator('.d-facts').first().innerText(), /Collection\s+Charged automatically/);
    assert.equal(await v.page.getByRole('button', { name: 'Switch to invoices' }).count(), 0);
    const refused = await post(v.page, `${page}/invoices`, { _csrf: await csrfOf(v.page) });
    assert.equal(refused.status, 403);
    await v.context.close();

    const o = await signedIn(owner);
    await o.page.goto(page);
    assert.equal((await post(o.page, `${page}/invoices`, {})).status, 403, 'no CSRF token');
    assert.equal((await api.get(`/subscriptions/${id}`)).body.collection, 'charge_automatically');
    await o.page.getByRole('button', { name: 'Switch to invoices' }).click();
    await o.page.waitForURL(/done=subscription_invoiced/);
    assert.match((await o.page.locator('.d-flash').textContent())!, /invoiced by email from now on/);
    assert.match(await o.page.locator('.d-facts').first().innerText(), /Collection\s+Invoiced by email/);
    assert.equal(await o.page.getByRole('button', { name: 'Switch to invoices' }).count(), 0);
    await screenshot(o.page, 'dashboard-subscription-charges-desktop');
    const after = (await api.get(`/subscriptions/${id}`)).body;
    assert.equal(after.collection, 'send_invoice');
    assert.equal(after.charges.at(-1).status, 'cancelled', 'the pending retry is not made');
    const audit = await w.t.kasse.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'subscription.collection')
      .where('target_id', '=', id)
      .execute();
    assert.deepEqual(
      audit.map((a) => [a.actor_type, a.actor_id]),
      [['user', owner.id]],
    );
    // A cancelled subscription is not switched: 422 invalid_state, nothing changed, nothing audited.
    const gone = (
      await api.post('/subscriptions', {
        customer_email: 'ed@example.com',
        title: 'Ended beans',
        amount_usd_cents: 1900,
        interval: 'month',
        collection: 'charge_automatically',
      })
    ).body.id as string;
    assert.equal((await api.post(`/subscriptions/${gone}/cancel`)).status, 200);
    const late = await post(o.page, `${base}/dashboard/test/subscriptions/${gone}/invoices`, {
      _csrf: await csrfOf(o.page),
    });
    assert.equal(late.status, 422);
    assert.equal((await api.get(`/subscriptions/${gone}`)).body.collection, 'charge_automatically');
    const goneAudit = await w.t.kasse.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'subscription.collection')
      .where('target_id', '=', gone)
      .execute();
    assert.equal(goneAudit.length, 0);
    await o.context.close();
  });
});
