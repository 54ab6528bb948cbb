/**
 * Merchant-supplied text stays text: titles, descriptions and the merchant's name carrying script and attribute
 * injections render literally and inert on every page (no dialog, no injected element, no request elsewhere), every
 * page carries the Content-Security-Policy, payment metadata never reaches public pages, and framing is allowed only
 * where the modal needs it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createUser, setUpAccount } from '../harness/dashboard.ts';
import { eventually } from '../harness/expect.ts';
import {
  foreignRequests,
  launchBrowser,
  screenshot,
  startWebKasse,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';

const SCRIPT = '<script>alert(1)</script>';
const ATTR = '"><img src=x onerror=alert(1)>';

let w: WebKasse;
let b: TestBrowser;

before(async () => {
  w = await startWebKasse({ merchantName: `Evil ${ATTR} Shop` });
  b = await launchBrowser();
});
after(async () => {
  await b?.close();
  await w?.close();
});

const CSP_PARTS = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
];

function assertCsp(header: string | undefined, ancestors: string) {
  assert.ok(header, 'Content-Security-Policy is present');
  for (const part of CSP_PARTS) assert.ok(header.includes(part), `${part} in ${header}`);
  assert.ok(header.includes(`frame-ancestors ${ancestors}`), header);
}

describe('escaping and the Content-Security-Policy', () => {
  test('injections in link title, description and merchant name render inert on link, checkout and POS pages', async () => {
    const fixed = (
      await w.m.test.post('/links', {
        kind: 'fixed',
        title: `Mug ${SCRIPT}`,
        description: `Nice ${ATTR} mug`,
        amount_usd_cents: 900,
      })
    ).body;
    const pos = (await w.m.test.post('/links', { kind: 'pos', title: `Till ${ATTR}`, description: SCRIPT })).body;
    const payment = (
      await w.m.test.post('/payments', {
        price_amount: 500,
        price_currency: 'USD',
        order_id: 'x',
        description: `${SCRIPT} ${ATTR}`,
        metadata: { secret_note: 'internal-7731' },
      })
    ).body;
    const { page, requests, dialogs } = await b.open('phone');

    let res = await page.goto(fixed.url);
    assertCsp(res!.headers()['content-security-policy'], "'none'");
    await page.getByText(`Mug ${SCRIPT}`, { exact: true }).waitFor();
    await page.getByText(`Nice ${ATTR} mug`, { exact: true }).waitFor();
    await page.getByText(`Evil ${ATTR} Shop`, { exact: true }).waitFor();
    assert.equal(await page.locator('img').count(), 0);
    assert.equal(await page.locator('script:not([src])').count(), 0);
    await screenshot(page, 'xss-link-phone');

    // The link's title becomes the payment's description on the checkout.
    await page.getByRole('button', { name: 'Pay $9.00' }).click();
    await page.getByRole('heading', { name: `Mug ${SCRIPT}` }).waitFor();

    res = await page.goto(payment.checkout_url);
    assertCsp(res!.headers()['content-security-policy'], 'https: http:');
    await page.getByRole('heading', { name: `${SCRIPT} ${ATTR}` }).waitFor();
    assert.equal(await page.locator('img').count(), 0);
    assert.doesNotMatch(await page.content(), /internal-7731/);
    await screenshot(page, 'xss-checkout-phone');

    const staff = await createUser(w.t.kasse, w.m.id, 'till@example.com', 'viewer');
    await setUpAccount(page, staff.setupUrl, w.t.clock, { email: 'till@example.com' });
    res = await page.goto(pos.url);
    assertCsp(res!.headers()['content-security-policy'], "'none'");
    await page.getByText(`Till ${ATTR}`, { exact: true }).waitFor();
    await page.getByText(SCRIPT, { exact: true }).waitFor();
    await page.getByLabel('Amount to charge (US$)').fill('5');
    await page.getByRole('button', { name: /Charge/ }).click();
    await page.getByText('Scan to pay $5.00').waitFor();
    await page.getByText(`Till ${ATTR}`, { exact: true }).waitFor();
    assert.equal(await page.locator('img').count(), 0);

    // Live updates carry the same escaped markup.
    const sale = /\/sale\/(pay_[0-9A-Z]{36})$/.exec(page.url())![1]!;
    await w.m.test.post(`/test/payments/${sale}/simulate`, { outcome: 'paid' });
    await page.locator('.k-paid').waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('img').count(), 0, 'the update added no image');
    assert.equal(await page.locator('script:not([src])').count(), 0, 'the update added no script');
    // An image the test loads after the update: the browser reports requests in the order it sends them, so once this
    // one has failed and been reported, any request the update's markup made has been reported before it.
    const probe = `${w.t.urls.checkout}/assets/probe-after-update`;
    await page.evaluate(
      (src) =>
        new Promise((done) => {
          const img = new Image();
          img.onload = img.onerror = done;
          img.src = src;
        }),
      probe,
    );
    await eventually('the probe request reported', () => requests.includes(probe));
    assert.deepEqual(dialogs, []);
    assert.deepEqual(foreignRequests(requests, w.t.urls.checkout), []);
    assert.ok(!requests.some((u) => /\/x$/.test(u)), 'no request for the injected image');
    await page.context().close();
  });

  test('the server never sends the raw payloads', async () => {
    const l = (
      await w.m.test.post('/links', { kind: 'tip', title: SCRIPT, description: ATTR, presets_usd_cents: [100] })
    ).body;
    const html = await (await fetch(l.url)).text();
    assert.ok(!html.includes(SCRIPT));
    assert.ok(!html.includes('<img src=x'));
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.ok(html.includes('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;'));
  });

  test('live payments may be framed by https sites only; assets and errors carry no framing', async () => {
    const live = (await w.m.live.post('/payments', { price_amount: 500, price_currency: 'USD', order_id: 'live-1' }))
      .body;
    const res = await fetch(live.checkout_url);
    assert.equal(res.status, 200);
    assertCsp(res.headers.get('content-security-policy') ?? undefined, 'https:');
    assert.ok(!res.headers.get('content-security-policy')!.includes('http:'));
    const html = await res.text();
    assert.ok(!html.includes('Test mode'), 'no test banner on live payments');
    const missing = await fetch(`${w.t.urls.checkout}/l/000000000000`, { headers: { accept: 'text/html' } });
    assert.equal(missing.status, 404);
    assertCsp(missing.headers.get('content-security-policy') ?? undefined, "'none'");
    const css = await fetch(`${w.t.urls.checkout}/assets/kasse.css`);
    assert.equal(css.status, 200);
    assert.equal(css.headers.get('x-content-type-options'), 'nosniff');
  });
});
