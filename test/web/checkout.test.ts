/**
 * The hosted checkout in real Chromium: coin picker → address, QR code, exact amount and countdown → live status
 * through server-sent events for paid (then success_url), underpaid (the missing amount), expired and an ended coin
 * hold; the payer's JSON endpoint and its Error bodies; nothing loaded from any other host.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
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
    '/thanks': { type: 'text/html', body: '<!doctype html><title>Thanks</title><h1>Thank you for your order</h1>' },
  });
});
after(async () => {
  await b?.close();
  await shop?.close();
  await w?.close();
});

async function createPayment(extra: Record<string, unknown> = {}) {
  const res = await w.m.test.post('/payments', {
    price_amount: 1234,
    price_currency: 'USD',
    order_id: 'order-1',
    description: 'Two flat whites',
    ...extra,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

describe('checkout page', () => {
  test('pick a coin, see address, QR and amount, then paid redirects to success_url', async () => {
    const payment = await createPayment({ success_url: `${shop.url}/thanks`, cancel_url: `${shop.url}/cart` });
    const { page, requests, errors } = await b.open('phone');
    const res = await page.goto(payment.checkout_url);
    assert.equal(res!.status(), 200);
    const csp = res!.headers()['content-security-policy']!;
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /base-uri 'none'/);
    assert.match(csp, /frame-ancestors https: http:/);
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    assert.equal(await page.locator('.k-price').textContent(), '$12.34');
    assert.match(await page.title(), /Corner Café/);
    // Priced coins: stablecoins at the peg and ETH at 3000 USD from the local price servers.
    const coins = await page.locator('button.k-coin').allTextContents();
    assert.ok(
      coins.some((c) => /USDC.*≈ 12\.34/.test(c)),
      coins.join(' | '),
    );
    assert.ok(
      coins.some((c) => /ETH.*≈ 0\.004113/.test(c)),
      coins.join(' | '),
    );
    assert.equal(
      await page.getByRole('link', { name: /Back to Corner Café/ }).getAttribute('href'),
      `${shop.url}/cart`,
    );
    await screenshot(page, 'checkout-picker-phone');

    await page.locator('fieldset', { hasText: 'Base Sepolia' }).getByRole('button', { name: /USDC/ }).click();
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    assert.equal(await page.locator('#k-amount').textContent(), '12.34');
    const address = (await page.locator('#k-address').textContent())!;
    assert.match(address, /^0x[0-9a-fA-F]{40}$/);
    assert.equal(await page.locator('svg.k-qr').count(), 1);
    const deepLink = await page.getByRole('link', { name: 'Open in wallet app' }).getAttribute('href');
    assert.match(deepLink!, /^ethereum:0x[0-9a-fA-F]{40}@84532\/transfer\?address=0x[0-9a-fA-F]{40}&uint256=12340000$/);
    // The countdown runs from the server's (fake) clock: 10 minutes from the choice.
    assert.match((await page.locator('time.k-count').textContent())!, /^(10:00|9:5\d)$/);
    assert.match((await page.locator('#k-status').textContent())!, /Waiting for 12\.34 USDC/);
    await screenshot(page, 'checkout-address-phone');

    const api = await w.m.test.get(`/payments/${payment.id}`);
    assert.equal(api.body.attempts.length, 1);
    assert.equal(api.body.attempts[0].token, 'base:usdc');
    assert.equal(api.body.attempts[0].address, address);

    const sim = await w.m.test.post(`/test/payments/${payment.id}/simulate`, { outcome: 'paid' });
    assert.equal(sim.status, 200);
    await page.getByRole('heading', { name: 'Paid' }).waitFor({ timeout: 10_000 });
    assert.match((await page.locator('#k-status').textContent())!, /Paid/);
    await screenshot(page, 'checkout-paid-phone');
    const beforeRedirect = [...requests];
    await page.waitForURL(`${shop.url}/thanks`, { timeout: 10_000 });
    assert.deepEqual(foreignRequests(beforeRedirect, w.t.urls.checkout), []);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('desktop layout, and a coin given at creation skips the picker', async () => {
    const payment = await createPayment({ chain: 'ethereum', token: 'ethereum:eth' });
    const { page, requests, errors } = await b.open('desktop');
    await page.goto(payment.checkout_url);
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    assert.equal(await page.locator('#k-amount').textContent(), payment.attempts[0].pay_amount_display);
    assert.equal(await page.locator('#k-network').textContent(), 'Ethereum Sepolia');
    // Another coin can still be chosen from the details disclosure.
    await page.getByText('Pay with another coin').click();
    assert.ok((await page.locator('details button.k-coin').count()) > 3);
    await screenshot(page, 'checkout-address-desktop');
    assert.deepEqual(foreignRequests(requests, w.t.urls.checkout), []);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('underpaid shows how much is missing', async () => {
    const payment = await createPayment({ chain: 'base', token: 'base:usdc' });
    const { page, errors } = await b.open('phone');
    await page.goto(payment.checkout_url);
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    await w.m.test.post(`/test/payments/${payment.id}/simulate`, { outcome: 'underpaid' });
    await page.getByRole('heading', { name: 'Part of the payment arrived' }).waitFor({ timeout: 10_000 });
    const text = (await page.locator('main').textContent())!;
    assert.match(text, /Received 6\.17 of 12\.34 USDC/);
    assert.match(text, /6\.17 USDC is missing/);
    assert.equal(await page.locator('#k-amount').textContent(), '6.17');
    assert.match(
      (await page.getByRole('link', { name: 'Open in wallet app' }).getAttribute('href'))!,
      /uint256=6170000$/,
    );
    assert.match((await page.locator('#k-status').textContent())!, /6\.17 USDC is missing/);
    await screenshot(page, 'checkout-underpaid-phone');
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('expired payment', async () => {
    const payment = await createPayment();
    const { page, errors } = await b.open('phone');
    await page.goto(payment.checkout_url);
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    await w.m.test.post(`/test/payments/${payment.id}/simulate`, { outcome: 'expired' });
    await page.getByRole('heading', { name: 'This payment has expired' }).waitFor({ timeout: 10_000 });
    assert.match((await page.locator('#k-status').textContent())!, /expired/);
    await screenshot(page, 'checkout-expired-phone');
    // Reloading shows the same final state, rendered by the server.
    await page.reload();
    await page.getByRole('heading', { name: 'This payment has expired' }).waitFor();
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('an ended coin hold brings the picker back; at most 3 coin choices', async () => {
    const payment = await createPayment({ chain: 'base', token: 'base:usdc' });
    const { page, errors } = await b.open('phone');
    await page.goto(payment.checkout_url);
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    w.t.clock.advance(10 * 60 * 1000 + 1000);
    await w.t.kasse.payments.runDue();
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor({ timeout: 10_000 });
    assert.match((await page.locator('main').textContent())!, /held for 10 minutes and that time has ended/);
    assert.match((await page.locator('.k-pick .k-hint').textContent())!, /2 more choices left/);
    await page.locator('fieldset', { hasText: 'Polygon' }).getByRole('button', { name: /USDT/ }).click();
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    assert.match((await page.locator('.k-network').textContent())!, /Polygon Amoy.*Send USDT on Polygon Amoy only/);
    // The third choice from the disclosure; after it no more choices are offered.
    await page.getByText('Pay with another coin').click();
    await page.locator('details fieldset', { hasText: 'Arbitrum' }).getByRole('button', { name: /USDC/ }).click();
    await page.waitForFunction(() => document.querySelector('#k-network')?.textContent?.includes('Arbitrum'));
    assert.equal(await page.getByText('Pay with another coin').count(), 0);
    const api = await w.m.test.get(`/payments/${payment.id}`);
    assert.deepEqual(
      api.body.attempts.map((a: any) => a.token),
      ['base:usdc', 'polygon:usdt', 'arbitrum:usdc'],
    );
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('the coin endpoint answers JSON with the Error body', async () => {
    const payment = await createPayment();
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${w.t.urls.checkout}/p/${payment.id}/attempts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    let res = await post({ token: 'base:doge' });
    assert.equal(res.status, 400);
    assert.deepEqual((await res.json()).error.param, 'token');
    res = await post({ token: 'base:usdc', extra: 1 });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'extra');
    res = await post({ token: 'base:usdc' }, { origin: 'https://evil.example' });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.param, 'Origin');
    res = await post({ token: 'base:usdc' }, { 'sec-fetch-site': 'cross-site' });
    assert.equal(res.status, 400);
    for (const token of ['base:usdc', 'base:eth', 'solana:usdc']) {
      res = await post({ token });
      assert.equal(res.status, 201);
      const body = await res.json();
      assert.equal(body.attempt.token, token);
      assert.equal(body.metadata, undefined, 'no merchant metadata in public answers');
    }
    res = await post({ token: 'base:usdc' });
    assert.equal(res.status, 409);
    assert.deepEqual(Object.keys((await res.json()).error).sort(), ['code', 'message', 'param']);
    res = await fetch(`${w.t.urls.checkout}/p/pay_${'0'.repeat(36)}/attempts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token":"base:usdc"}',
    });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, 'not_found');
    const page = await fetch(`${w.t.urls.checkout}/p/pay_${'0'.repeat(36)}`);
    assert.equal(page.status, 404);
    assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
  });

  test('without JavaScript the picker is a plain form and the page refreshes itself', async () => {
    const payment = await createPayment();
    const ctx = await b.browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
    const page = await ctx.newPage();
    await page.goto(payment.checkout_url);
    await page.locator('fieldset', { hasText: 'Base Sepolia' }).getByRole('button', { name: /USDC/ }).click();
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    assert.equal(page.url(), payment.checkout_url);
    assert.equal(await page.locator('noscript').count(), 1);
    await ctx.close();
  });
});
