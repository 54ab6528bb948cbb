/**
 * checkout.js on a merchant's page (its own server, a strict CSP of its own): Kasse.open() shows the checkout in a
 * modal iframe and resolves with paid, expired, cancelled (the checkout's back or cancel) or closed (the close
 * button, Escape). Messages from anywhere but the checkout frame are ignored; no host but the two is contacted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  foreignRequests,
  launchBrowser,
  screenshot,
  startMerchantSite,
  startWebKasse,
  type RecordedPage,
  type Size,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';

let w: WebKasse;
let b: TestBrowser;
let shop: Awaited<ReturnType<typeof startMerchantSite>>;

const APP_JS = `
const q = new URLSearchParams(location.search);
document.getElementById('pay').addEventListener('click', () => {
  Kasse.open(q.get('p')).then((r) => { document.getElementById('result').textContent = r.status; },
                              (e) => { document.getElementById('result').textContent = 'error: ' + e.message; });
});`;

before(async () => {
  w = await startWebKasse({ merchantName: 'Bean Shop' });
  b = await launchBrowser();
  const checkout = w.t.urls.checkout;
  shop = await startMerchantSite({
    '/shop': {
      type: 'text/html; charset=utf-8',
      headers: {
        'content-security-policy': `default-src 'self'; script-src 'self' ${checkout}; frame-src ${checkout}`,
      },
      body: `<!doctype html><html lang="en"><head><title>Bean Shop</title><script src="${checkout}/checkout.js"></script><script src="/app.js" defer></script></head>
<body><h1>Bean Shop</h1><button id="pay">Pay with crypto</button><p>Result: <output id="result"></output></p></body></html>`,
    },
    '/app.js': { type: 'text/javascript', body: APP_JS },
  });
});
after(async () => {
  await b?.close();
  await shop?.close();
  await w?.close();
});

async function payment(extra: Record<string, unknown> = {}) {
  const res = await w.m.test.post('/payments', {
    price_amount: 2500,
    price_currency: 'USD',
    order_id: 'cart-7',
    description: 'Coffee beans 1 kg',
    ...extra,
  });
  assert.equal(res.status, 201);
  return res.body;
}

/** Opens the modal for `target`; it is done once the checkout shows in it and the dialog has the name `dialog`. */
async function openModal(target: string, size: Size = 'phone', dialog = 'Checkout'): Promise<RecordedPage> {
  const rec = await b.open(size);
  await rec.page.goto(`${shop.url}/shop?p=${encodeURIComponent(target)}`);
  await rec.page.getByRole('button', { name: 'Pay with crypto' }).click();
  await rec.page.frameLocator('iframe[title=Checkout]').locator('#k-main').waitFor();
  // The dialog opens named in English and takes the payer's language when the checkout in it says which that is:
  // its `lang` shows the checkout's script has run (so the keys it listens for, Escape among them, are heard).
  await rec.page.getByRole('dialog', { name: dialog }).waitFor();
  await rec.page.locator('[role=dialog][lang]').waitFor();
  return rec;
}

async function result(rec: RecordedPage): Promise<string> {
  await rec.page.waitForFunction(() => document.getElementById('result')!.textContent !== '', undefined, {
    timeout: 15_000,
  });
  return (await rec.page.locator('#result').textContent())!;
}

function assertClean(rec: RecordedPage) {
  assert.deepEqual(foreignRequests(rec.requests, w.t.urls.checkout, shop.url), []);
  assert.deepEqual(rec.errors, []);
}

describe('checkout.js modal', () => {
  test('paid', async () => {
    const p = await payment();
    const rec = await openModal(p.id);
    const frame = rec.page.frameLocator('iframe[title=Checkout]');
    await frame.locator('fieldset', { hasText: 'Base Sepolia' }).getByRole('button', { name: /USDC/ }).click();
    await frame.getByRole('heading', { name: 'Send exactly' }).waitFor();
    await screenshot(rec.page, 'modal-open-phone');
    await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    await frame.getByRole('heading', { name: 'Paid' }).waitFor({ timeout: 10_000 });
    assert.equal(await result(rec), 'paid');
    assert.equal(await rec.page.getByRole('dialog').count(), 0, 'the modal is gone');
    assert.equal(rec.page.url(), `${shop.url}/shop?p=${p.id}`, 'the merchant page stays');
    assertClean(rec);
    await rec.context.close();
  });

  test('expired (opened by checkout URL, desktop)', async () => {
    const p = await payment();
    const rec = await openModal(p.checkout_url, 'desktop');
    await screenshot(rec.page, 'modal-open-desktop');
    await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'expired' });
    assert.equal(await result(rec), 'expired');
    assertClean(rec);
    await rec.context.close();
  });

  test('cancelled through the back link to cancel_url, which the modal does not follow', async () => {
    const p = await payment({ cancel_url: `${shop.url}/cart` });
    const rec = await openModal(p.id);
    await rec.page
      .frameLocator('iframe[title=Checkout]')
      .getByRole('link', { name: /Back to Bean Shop/ })
      .click();
    assert.equal(await result(rec), 'cancelled');
    assert.equal(rec.page.url(), `${shop.url}/shop?p=${p.id}`);
    assertClean(rec);
    await rec.context.close();
  });

  test('cancelled through the cancel button when there is no cancel_url', async () => {
    const p = await payment();
    const rec = await openModal(p.id);
    await rec.page.frameLocator('iframe[title=Checkout]').getByRole('button', { name: 'Cancel' }).click();
    assert.equal(await result(rec), 'cancelled');
    assertClean(rec);
    await rec.context.close();
  });

  test('closed by the close button; forged messages are ignored', async () => {
    const p = await payment();
    const rec = await openModal(p.id);
    // A message from the merchant page itself (not the checkout frame) must not settle the promise. A second
    // message posted after it arrives once every listener has handled the first (the modal's, registered earlier,
    // included) and any promise it settled has run its callbacks.
    await rec.page.evaluate(
      () =>
        new Promise<void>((handled) => {
          window.addEventListener('message', (e) => e.data === 'after-forged' && handled());
          window.postMessage({ kasse: 1, status: 'paid' }, '*');
          window.postMessage('after-forged', '*');
        }),
    );
    assert.equal(await rec.page.locator('#result').textContent(), '');
    // Focus stays inside the dialog: tabbing past its close button returns to the checkout frame.
    await rec.page.getByRole('button', { name: 'Close checkout' }).focus();
    await rec.page.keyboard.press('Tab');
    assert.equal(await rec.page.evaluate(() => document.activeElement?.tagName), 'IFRAME');
    await rec.page.getByRole('button', { name: 'Close checkout' }).click();
    assert.equal(await result(rec), 'closed');
    assert.equal(await rec.page.getByRole('dialog').count(), 0);
    // Focus returns to the button that opened it.
    assert.equal(await rec.page.evaluate(() => document.activeElement?.id), 'pay');
    assertClean(rec);
    await rec.context.close();
  });

  test('a checkout in another language names the dialog and its close button in it', async () => {
    const p = await payment({ locale: 'es' });
    const rec = await openModal(p.id, 'phone', 'Pago');
    const close = rec.page.getByRole('button', { name: 'Cerrar el pago' });
    await close.waitFor();
    assert.equal(await close.getAttribute('lang'), 'es');
    assert.equal(await rec.page.getByRole('dialog').getAttribute('aria-label'), 'Pago');
    await close.click();
    assert.equal(await result(rec), 'closed');
    await rec.context.close();
  });

  test('Escape closes it too', async () => {
    const p = await payment();
    const rec = await openModal(p.id);
    await rec.page.keyboard.press('Escape');
    assert.equal(await result(rec), 'closed');
    await rec.context.close();
  });

  test('Kasse.open refuses addresses that are not a checkout of this host', async () => {
    const rec = await b.open('phone');
    await rec.page.goto(`${shop.url}/shop?p=${encodeURIComponent(`https://evil.example/p/pay_${'0'.repeat(36)}`)}`);
    await rec.page.getByRole('button', { name: 'Pay with crypto' }).click();
    assert.match(await result(rec), /^error: Kasse\.open: expected a payment id or a checkout URL/);
    assert.equal(await rec.page.getByRole('dialog').count(), 0);
    await rec.context.close();
  });

  test('checkout.js is served for other sites to load', async () => {
    const res = await fetch(`${w.t.urls.checkout}/checkout.js`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/javascript/);
    assert.equal(res.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.match(res.headers.get('cache-control')!, /max-age=300/);
    const etag = res.headers.get('etag')!;
    assert.match(await res.text(), /Kasse\.open|w\.Kasse = \{ open: open \}/);
    const again = await fetch(`${w.t.urls.checkout}/checkout.js`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });
});
