/**
 * Payment link pages end to end in real Chromium: fixed, open (bounds), tip (presets and a custom amount), the POS
 * terminal from keypad to PAID and the next sale, collect_email, and links that are used up, expired or turned off
 * (410, nothing created). Order ids are `<slug>-<n>` with n allocated atomically.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createUser, setUpAccount } from '../harness/dashboard.ts';
import {
  foreignRequests,
  launchBrowser,
  screenshot,
  startMerchantSite,
  startWebKasse,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';

let w: WebKasse;
let b: TestBrowser;
let shop: Awaited<ReturnType<typeof startMerchantSite>>;

before(async () => {
  w = await startWebKasse();
  b = await launchBrowser();
  shop = await startMerchantSite({
    '/thanks': { type: 'text/html', body: '<!doctype html><title>Thanks</title><h1>Thanks</h1>' },
  });
});
after(async () => {
  await b?.close();
  await shop?.close();
  await w?.close();
});

async function link(body: Record<string, unknown>) {
  const res = await w.m.test.post('/links', body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** The payment behind a checkout page the browser is on. */
async function paymentOf(url: string) {
  const id = /\/p\/(pay_[0-9A-Z]{36})/.exec(url)![1]!;
  return (await w.m.test.get(`/payments/${id}`)).body;
}

const payJson = (slug: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${w.t.urls.checkout}/l/${slug}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('link pages', () => {
  test('fixed: pay the price, land on the checkout; order ids count up', async () => {
    const l = await link({
      kind: 'fixed',
      title: 'Espresso beans',
      description: '250 g, freshly roasted',
      amount_usd_cents: 1500,
      success_url: `${shop.url}/thanks`,
    });
    const { page, requests, errors } = await b.open('phone');
    const res = await page.goto(l.url);
    assert.equal(res!.status(), 200);
    assert.match(res!.headers()['content-security-policy']!, /frame-ancestors 'none'/);
    assert.equal(await page.locator('.k-price').textContent(), '$15.00');
    await screenshot(page, 'link-fixed-phone');
    await page.getByRole('button', { name: 'Pay $15.00' }).click();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    const p1 = await paymentOf(page.url());
    assert.equal(p1.price_amount, 1500);
    assert.equal(p1.order_id, `${l.slug}-1`);
    assert.equal(p1.description, 'Espresso beans');
    assert.equal(p1.success_url, `${shop.url}/thanks`);
    assert.equal(p1.cancel_url, l.url);
    assert.deepEqual(p1.metadata, { link_id: l.id });
    // Back on the checkout returns to the link page.
    await page.getByRole('link', { name: /Back to Corner Café/ }).click();
    await page.getByRole('button', { name: 'Pay $15.00' }).click();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    assert.equal((await paymentOf(page.url())).order_id, `${l.slug}-2`);
    assert.equal((await w.m.test.get(`/links/${l.id}`)).body.uses, 2);
    // It is an ordinary payment: listed by order_id.
    const listed = await w.m.test.get(`/payments?order_id=${l.slug}-1`);
    assert.deepEqual(
      listed.body.data.map((p: any) => p.id),
      [p1.id],
    );
    assert.deepEqual(foreignRequests(requests, w.t.urls.checkout), []);
    assert.deepEqual(errors, []);
    const desktop = await b.open('desktop');
    await desktop.page.goto(l.url);
    await screenshot(desktop.page, 'link-fixed-desktop');
    await desktop.context.close();
    await page.context().close();
  });

  test('open: the amount must be within min and max', async () => {
    const l = await link({ kind: 'open', title: 'Donation', min_usd_cents: 500, max_usd_cents: 20000 });
    const { page, errors } = await b.open('phone');
    await page.goto(l.url);
    assert.match((await page.locator('#k-amount-h').textContent())!, /From \$5\.00 to \$200\.00/);
    await page.getByLabel('Amount in US dollars').fill('3');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter an amount from $5.00 to $200.00.' }).waitFor();
    assert.equal(await page.getByLabel('Amount in US dollars').inputValue(), '3');
    await screenshot(page, 'link-open-error-phone');
    await page.getByLabel('Amount in US dollars').fill('250.01');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter an amount from $5.00 to $200.00.' }).waitFor();
    await page.getByLabel('Amount in US dollars').fill('12.5');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    const p = await paymentOf(page.url());
    assert.equal(p.price_amount, 1250);
    assert.equal(p.order_id, `${l.slug}-1`);
    // JSON: bounds answered with the Error body.
    const res = await payJson(l.slug, { amount_usd_cents: 20001 });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'amount_usd_cents');
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
    await page.context().close();
  });

  test('tip: preset buttons and a custom amount', async () => {
    const l = await link({
      kind: 'tip',
      title: 'Tip the barista',
      presets_usd_cents: [300, 500, 800],
      min_usd_cents: 100,
      max_usd_cents: 5000,
    });
    const { page, errors } = await b.open('phone');
    await page.goto(l.url);
    assert.deepEqual(await page.locator('.k-preset').allTextContents(), ['$3.00', '$5.00', '$8.00']);
    await screenshot(page, 'link-tip-phone');
    await page.getByRole('button', { name: '$5.00' }).click();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    assert.equal((await paymentOf(page.url())).price_amount, 500);
    await page.goto(l.url);
    await page.getByLabel('Or another amount in US dollars').fill('7.25');
    await page.getByRole('button', { name: 'Pay this amount' }).click();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    const p = await paymentOf(page.url());
    assert.equal(p.price_amount, 725);
    assert.equal(p.order_id, `${l.slug}-2`);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('pos: keypad → QR of the new payment → PAID → next sale', async () => {
    const l = await link({ kind: 'pos', title: 'Counter 1' });
    const { page, requests, errors } = await b.open('phone');
    // The terminal is for the shop's staff: a signed-in dashboard user of the merchant.
    const staff = await createUser(w.t.kasse, w.m.id, 'till@example.com', 'member');
    await setUpAccount(page, staff.setupUrl, w.t.clock, { email: 'till@example.com' });
    await page.goto(l.url);
    for (const k of ['1', '2', '5', '0']) await page.locator(`.k-keypad [data-key="${k}"]`).click();
    assert.equal(await page.getByLabel('Amount to charge (US$)').inputValue(), '12.50');
    await page.getByRole('button', { name: 'Delete last digit' }).click();
    await page.locator('.k-keypad [data-key="0"]').click();
    await page.locator('.k-keypad [data-key="00"]').click();
    assert.equal(await page.getByLabel('Amount to charge (US$)').inputValue(), '1250.00');
    await page.getByRole('button', { name: 'Delete last digit' }).click();
    await page.getByRole('button', { name: 'Delete last digit' }).click();
    assert.equal(await page.getByRole('button', { name: 'Charge $12.50' }).count(), 1);
    await page.getByRole('button', { name: 'Clear' }).click();
    for (const k of ['1', '2', '5', '0']) await page.locator(`.k-keypad [data-key="${k}"]`).click();
    await screenshot(page, 'pos-keypad-phone');
    await page.getByRole('button', { name: 'Charge $12.50' }).click();
    await page.getByText('Scan to pay $12.50').waitFor();
    const saleUrl = page.url();
    const id = /\/sale\/(pay_[0-9A-Z]{36})$/.exec(saleUrl)![1]!;
    const p = (await w.m.test.get(`/payments/${id}`)).body;
    assert.equal(p.price_amount, 1250);
    assert.equal(p.order_id, `${l.slug}-1`);
    assert.equal(p.cancel_url, null);
    assert.equal(await page.locator('svg.k-qr').count(), 1);
    await screenshot(page, 'pos-qr-phone');
    // The payer's phone opens the QR's checkout; there the payment finishes.
    await w.m.test.post(`/test/payments/${id}/simulate`, { outcome: 'paid' });
    await page.locator('.k-paid').filter({ hasText: 'PAID' }).waitFor({ timeout: 10_000 });
    assert.match((await page.locator('#k-status').textContent())!, /Paid/);
    await screenshot(page, 'pos-paid-phone');
    await page.getByRole('link', { name: 'Next sale' }).click();
    await page.getByLabel('Amount to charge (US$)').waitFor();
    assert.equal(await page.getByLabel('Amount to charge (US$)').inputValue(), '');
    for (const k of ['9', '9', '9']) await page.locator(`.k-keypad [data-key="${k}"]`).click();
    await page.getByRole('button', { name: 'Charge $9.99' }).click();
    await page.getByText('Scan to pay $9.99').waitFor();
    const second = /\/sale\/(pay_[0-9A-Z]{36})$/.exec(page.url())![1]!;
    assert.equal((await w.m.test.get(`/payments/${second}`)).body.order_id, `${l.slug}-2`);
    assert.deepEqual(foreignRequests(requests, w.t.urls.checkout), []);
    assert.deepEqual(errors, []);
    const desktop = await b.open('desktop');
    await desktop.context.addCookies(await page.context().cookies());
    await desktop.page.goto(saleUrl);
    await desktop.page.locator('.k-paid').waitFor();
    await screenshot(desktop.page, 'pos-paid-desktop');
    await desktop.context.close();
    // A sale screen only shows payments of its own link.
    const other = (await w.m.test.post('/payments', { price_amount: 100, price_currency: 'USD', order_id: 'x' })).body;
    assert.equal((await fetch(`${w.t.urls.checkout}/l/${l.slug}/sale/${other.id}`)).status, 404);
    await page.context().close();
  });

  test('collect_email stores the payer email in metadata.payer_email', async () => {
    const l = await link({ kind: 'fixed', title: 'Workshop ticket', amount_usd_cents: 4900, collect_email: true });
    const { page, errors } = await b.open('phone');
    await page.goto(l.url);
    // Without an email the page asks for one.
    await page.getByRole('button', { name: 'Pay $49.00' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter your email address' }).waitFor();
    assert.equal(page.url(), l.url);
    await page.getByLabel('Your email').fill('ada@example.com');
    await screenshot(page, 'link-email-phone');
    await page.getByRole('button', { name: 'Pay $49.00' }).click();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    assert.deepEqual((await paymentOf(page.url())).metadata, { link_id: l.id, payer_email: 'ada@example.com' });
    // The checkout page shows no metadata.
    assert.doesNotMatch(await page.content(), /ada@example\.com/);
    let res = await payJson(l.slug, {});
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'email');
    res = await payJson(l.slug, { email: 'not-an-email' });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'email');
    assert.deepEqual(
      errors.filter((e) => !/status of 400/.test(e)),
      [],
    );
    await page.context().close();
  });

  test('max_uses, expiry and turning a link off are refused with 410 and create nothing', async () => {
    const once = await link({ kind: 'fixed', title: 'One-off invoice', amount_usd_cents: 10000, max_uses: 1 });
    const res = await payJson(once.slug, {});
    assert.equal(res.status, 201);
    const created = await res.json();
    assert.deepEqual(Object.keys(created), ['payment_id', 'checkout_url', 'order_id']);
    assert.equal(created.order_id, `${once.slug}-1`);
    const { page } = await b.open('phone');
    let nav = await page.goto(once.url);
    assert.equal(nav!.status(), 410);
    await page.getByText('This payment link has reached its limit of uses.').waitFor();
    await screenshot(page, 'link-used-up-phone');
    let again = await payJson(once.slug, {});
    assert.equal(again.status, 422);
    assert.equal((await again.json()).error.code, 'invalid_state');

    const soon = await link({
      kind: 'fixed',
      title: 'Early bird',
      amount_usd_cents: 2000,
      expires_at: new Date(w.t.clock.now().getTime() + 3600_000).toISOString(),
    });
    assert.equal((await page.goto(soon.url))!.status(), 200);
    w.t.clock.advance(2 * 3600_000);
    nav = await page.goto(soon.url);
    assert.equal(nav!.status(), 410);
    await page.getByText('This payment link has expired.').waitFor();
    again = await payJson(soon.slug, {});
    assert.equal(again.status, 422);

    const off = await link({ kind: 'open', title: 'Paused' });
    assert.equal((await w.m.test.patch(`/links/${off.id}`, { active: false })).status, 200);
    nav = await page.goto(off.url);
    assert.equal(nav!.status(), 410);
    await page.getByText('This payment link has been turned off by the merchant.').waitFor();
    assert.equal((await payJson(off.slug, { amount_usd_cents: 500 })).status, 422);
    // A form post to a link that became unavailable answers the 410 page.
    const form = await fetch(`${w.t.urls.checkout}/l/${off.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'amount=5',
    });
    assert.equal(form.status, 410);

    for (const l of [once, soon, off]) {
      const now = (await w.m.test.get(`/links/${l.id}`)).body;
      assert.equal(now.uses, l === once ? 1 : 0);
    }
    assert.equal((await w.m.test.get(`/payments?order_id=${soon.slug}-1`)).body.data.length, 0);
    assert.equal((await w.m.test.get(`/payments?order_id=${off.slug}-1`)).body.data.length, 0);
    // Turned back on, it works again.
    await w.m.test.patch(`/links/${off.id}`, { active: true });
    assert.equal((await page.goto(off.url))!.status(), 200);
    assert.equal((await fetch(`${w.t.urls.checkout}/l/zzzzzzzzzzzz`)).status, 404);
    await page.context().close();
  });

  test('racing payers never exceed max_uses and never share an order id', async () => {
    const l = await link({ kind: 'open', title: 'Limited', max_uses: 5 });
    const results = await Promise.all(Array.from({ length: 12 }, () => payJson(l.slug, { amount_usd_cents: 1000 })));
    const ok = results.filter((r) => r.status === 201);
    assert.equal(ok.length, 5);
    const ids = (await Promise.all(ok.map((r) => r.json()))).map((b) => b.order_id).sort();
    assert.deepEqual(
      ids,
      [1, 2, 3, 4, 5].map((n) => `${l.slug}-${n}`),
    );
    assert.ok(results.filter((r) => r.status !== 201).every((r) => r.status === 422));
    assert.equal((await w.m.test.get(`/links/${l.id}`)).body.uses, 5);
  });
});
