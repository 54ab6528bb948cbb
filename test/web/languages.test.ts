/**
 * Every payer page in every language, in real Chromium at phone width (390 px): the checkout's coin picker and
 * payment view, each link kind (fixed, open, tip, POS terminal) and the customer's subscription page carry
 * `<html lang dir>`, a heading in the page's language, no horizontal overflow (German and Vietnamese run long) and no
 * WCAG 2.1 AA violation (axe-core). The language switcher works as a plain form; the whole pay flow works by keyboard
 * alone with visible focus, and status changes are announced in the `aria-live` region.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { LOCALES, type Locale, money, t } from '../../src/core/i18n/index.ts';
import { axeViolations, describeViolations } from '../harness/axe.ts';
import { launchBrowser, type TestBrowser, startWebKasse, type WebKasse } from '../harness/browser.ts';
import { createUser, setUpAccount } from '../harness/dashboard.ts';
import { eventually } from '../harness/expect.ts';

let w: WebKasse;
let b: TestBrowser;

before(async () => {
  w = await startWebKasse({ merchantName: 'Kaffeerösterei Großstadtgeflüster' });
  b = await launchBrowser();
});
after(async () => {
  await b?.close();
  await w?.close();
});

const nbsp = (s: string) => s.replace(/\u00a0/g, ' ');

async function createPayment(extra: Record<string, unknown> = {}) {
  const res = await w.m.test.post('/payments', {
    price_amount: 123456,
    price_currency: 'USD',
    order_id: 'order-lang',
    description: 'Espresso-Bohnen, Jahresabonnement',
    ...extra,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

async function link(body: Record<string, unknown>) {
  const res = await w.m.test.post('/links', { title: 'Spende für das Nachbarschaftsfest', ...body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** What every page must hold in every language. */
async function checkPage(page: Page, url: string, l: Locale, expected: { selector: string; text: string }) {
  await page.goto(url);
  const where = `${url} (${l})`;
  assert.equal(await page.getAttribute('html', 'lang'), l, where);
  assert.equal(await page.getAttribute('html', 'dir'), 'ltr', where);
  const texts = (await page.locator(expected.selector).allTextContents()).map((x) => nbsp(x).trim());
  assert.ok(texts.includes(nbsp(expected.text)), `${where}: ${expected.selector} says ${JSON.stringify(texts)}`);
  const { scroll, inner } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    inner: window.innerWidth,
  }));
  assert.ok(scroll <= inner, `${where}: ${scroll} px wide in a ${inner} px window`);
  const violations = await axeViolations(page);
  assert.equal(violations.length, 0, `${where}\n${describeViolations(violations)}`);
}

describe('every payer page in every language', () => {
  test('checkout (coin picker and payment view), link kinds, POS terminal and subscription page', async () => {
    const rec = await b.open('phone');
    const page = rec.page;
    const staff = await createUser(w.t.kasse, w.m.id, 'till@example.com', 'member');
    await setUpAccount(page, staff.setupUrl, w.t.clock, { email: 'till@example.com' });
    const picker = await createPayment();
    const paying = await createPayment({ token: 'base:usdc' });
    const fixed = await link({ kind: 'fixed', amount_usd_cents: 123456, collect_email: true });
    const open = await link({ kind: 'open', min_usd_cents: 500, max_usd_cents: 250000 });
    const tip = await link({ kind: 'tip', presets_usd_cents: [300, 500, 1000] });
    const pos = await link({ kind: 'pos', title: 'Theke 2' });
    const sub = await w.m.test.post('/subscriptions', {
      customer_email: 'kundin@example.com',
      customer_name: 'Anna-Katharina Müller-Lüdenscheidt',
      title: 'Kaffeeabonnement Premium',
      amount_usd_cents: 4999,
      interval: 'month',
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const subUrl = w.t.kasse.subscriptionLinks.url(sub.body.id, new Date(w.t.clock.now().getTime() + 30 * 86_400_000));
    for (const l of LOCALES) {
      const q = `?lang=${encodeURIComponent(l)}`;
      await checkPage(page, `${picker.checkout_url}${q}`, l, { selector: 'h2', text: t(l, 'pick.heading') });
      await checkPage(page, `${paying.checkout_url}${q}`, l, { selector: 'h2', text: t(l, 'send.heading') });
      await checkPage(page, `${fixed.url}${q}`, l, {
        selector: 'button[type=submit]',
        text: t(l, 'link.pay', { amount: money(l, 123456) }),
      });
      await checkPage(page, `${open.url}${q}`, l, { selector: 'label', text: t(l, 'link.amount') });
      await checkPage(page, `${tip.url}${q}`, l, { selector: 'legend', text: t(l, 'link.choose_amount') });
      await checkPage(page, `${pos.url}${q}`, l, { selector: 'label', text: t(l, 'pos.amount') });
      await checkPage(page, `${subUrl}${q}`, l, { selector: 'button[type=submit]', text: t(l, 'sub.cancel_button') });
    }
    assert.deepEqual(rec.errors, []);
    await rec.context.close();
  });

  test('the language switcher is a plain form: picking a language reloads the page in it', async () => {
    const rec = await b.open('phone');
    const p = await createPayment();
    await rec.page.goto(p.checkout_url);
    assert.equal(await rec.page.getAttribute('html', 'lang'), 'en');
    await rec.page.selectOption('#k-lang', 'vi');
    await rec.page.getByRole('button', { name: 'Change' }).click();
    await rec.page.waitForURL(/lang=vi/);
    assert.equal(await rec.page.getAttribute('html', 'lang'), 'vi');
    assert.equal(await rec.page.locator('h2').first().textContent(), t('vi', 'pick.heading'));
    // The choice survives choosing a coin (the form carries it through the redirect).
    await rec.page.locator('button.k-coin:not([disabled])').first().click();
    await rec.page.locator('h2', { hasText: t('vi', 'send.heading') }).waitFor();
    assert.equal(await rec.page.getAttribute('html', 'lang'), 'vi');
    await rec.context.close();
  });

  test('the browser’s Accept-Language chooses the page’s language when the payment has none', async () => {
    const context = await b.browser.newContext({ locale: 'pt-PT', viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    const p = await createPayment();
    await page.goto(p.checkout_url);
    assert.equal(await page.getAttribute('html', 'lang'), 'pt-BR');
    const es = await createPayment({ locale: 'es' });
    await page.goto(es.checkout_url);
    assert.equal(await page.getAttribute('html', 'lang'), 'es', "the payment's locale comes first");
    await context.close();
  });
});

describe('the pay flow by keyboard alone', () => {
  /** The focused element and whether it shows a focus ring. */
  const focused = (page: Page) =>
    page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const style = getComputedStyle(el);
      return {
        tag: el.tagName,
        cls: el.className,
        ring: style.outlineStyle !== 'none' && style.outlineWidth !== '0px',
      };
    });

  test('Tab to a coin, Enter to choose it, the countdown reads as text, paid and expired are announced', async () => {
    const rec = await b.open('phone');
    const page = rec.page;
    const p = await createPayment({ price_amount: 2500, locale: 'fr' });
    await page.goto(p.checkout_url);
    let f = await focused(page);
    for (let i = 0; i < 10 && !String(f.cls).includes('k-coin'); i++) {
      await page.keyboard.press('Tab');
      f = await focused(page);
    }
    assert.match(String(f.cls), /k-coin/, 'Tab reaches a coin');
    assert.ok(f.ring, 'the focused coin shows a focus ring');
    await page.keyboard.press('Enter');
    await page.locator('h2', { hasText: t('fr', 'send.heading') }).waitFor();
    // The countdown is words and digits, not a colour: its label and the time left read as text.
    const timer = nbsp((await page.locator('.k-timer').textContent()) ?? '');
    assert.match(timer, new RegExp(`^${t('fr', 'send.held_for')} \\d+:\\d\\d$`));
    assert.match((await page.locator('time.k-count').getAttribute('title')) ?? '', /minutes? et \d+ secondes?/);
    // Tab moves through the payment view's controls, each with a visible focus ring.
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press('Tab');
      const now = await focused(page);
      assert.ok(now.ring, `${now.tag}.${now.cls} shows a focus ring`);
    }
    const status = page.locator('#k-status');
    assert.equal(await status.getAttribute('aria-live'), 'polite');
    const before = await status.textContent();
    await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    await eventually(
      'the status region says paid',
      async () => (await status.textContent()) === t('fr', 'status.paid'),
    );
    assert.notEqual(before, t('fr', 'status.paid'));
    await page.locator('h2', { hasText: t('fr', 'paid.heading') }).waitFor();

    const e = await createPayment({ token: 'base:usdc', locale: 'de' });
    await page.goto(e.checkout_url);
    await w.m.test.post(`/test/payments/${e.id}/simulate`, { outcome: 'expired' });
    await eventually(
      'the status region says expired',
      async () => (await status.textContent()) === t('de', 'status.expired'),
    );
    assert.deepEqual(rec.errors, []);
    await rec.context.close();
  });
});
