/**
 * The dashboard for everyone, in real Chromium: axe-core finds no WCAG 2.1 AA violation on the sign-in page and on
 * each main page an owner uses (home, payments and one payment, held payments and one, links and one link,
 * subscriptions and one, disbursements and one waiting for approval, tax invoices, statements and one month,
 * developers, team, settings with a logo, audit, account; live mode's too), at desktop and phone sizes, with a failed
 * form's errors and with the user menu open; the same pages are laid out without a defect axe does not see
 * (test/harness/layout.ts: no word broken in a table cell, buttons and fields at least 8 px apart, no select cutting
 * its text, no text in a stretched SVG, no page wider than the window, every navigation entry in sight); and the pages
 * work by keyboard alone: a skip link leads past the navigation to the content, and every control reached by Tab shows
 * a visible focus ring.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { axeViolations, describeViolations } from '../harness/axe.ts';
import { createUser, startDashboard, type DashboardTeam } from '../harness/dashboard.ts';
import { layoutProblems } from '../harness/layout.ts';

let d: DashboardTeam<'ana'>;
const ids: Record<string, string> = {};

before(async () => {
  d = await startDashboard({ ana: 'owner' });
  const api = d.w.m.test;
  ids.payment = (
    await api.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'A-1', description: 'Two mugs' })
  ).body.id;
  await api.post(`/test/payments/${ids.payment}/simulate`, { outcome: 'paid' });
  ids.held = (
    await api.post('/payments', {
      price_amount: 4000,
      price_currency: 'USD',
      order_id: 'H-1',
      capture_method: 'manual',
    })
  ).body.id;
  await api.post(`/test/payments/${ids.held}/simulate`, { outcome: 'authorized' });
  ids.link = (await api.post('/links', { kind: 'fixed', title: 'Beans', amount_usd_cents: 1500 })).body.id;
  ids.dsb = (
    await api.post('/disbursements', {
      title: 'March affiliates',
      items: [{ destination: `0x${'1'.padStart(40, '0')}`, usd_cents: 1000, label: 'Ann' }],
    })
  ).body.id;
  const logo = await sharp({ create: { width: 60, height: 20, channels: 3, background: '#0b5d3b' } })
    .png()
    .toBuffer();
  await d.w.t.kasse.merchantSettings.setLogo(d.w.m.id, logo, { type: 'operator', id: null, label: 'test', ip: null });
  ids.sub = (
    await api.post('/subscriptions', {
      customer_email: 'ana@example.com',
      title: 'Coffee club',
      amount_usd_cents: 1900,
      interval: 'month',
    })
  ).body.id;
  // A long address, as the team table and the audit log show it.
  await createUser(d.w.t.kasse, d.w.m.id, 'konstantina.papadopoulou-georgiou@example-bakery.com', 'viewer');
  await d.w.t.kasse.webhooks.drain();
});
after(async () => {
  await d?.close();
});

/** Pages under /dashboard/ (`:payment`, `:link`, `:sub` and `:dsb` stand for the ids made in `before`). */
const PAGES = [
  'test',
  'test/payments',
  'test/payments/:payment',
  'test/holds',
  'test/payments/:held',
  'test/links',
  'test/links/:link',
  'test/subscriptions',
  'test/subscriptions/:sub',
  'test/disbursements',
  'test/disbursements/:dsb',
  'test/tax_invoices',
  'test/statements',
  'test/statements/2026-03',
  'test/developers',
  'test/developers/events',
  'test/team',
  'test/settings',
  'test/audit',
  'test/account',
  'live',
  'live/payments',
  'live/going-live',
];

const urlOf = (path: string) =>
  `${d.base}/dashboard/${path.replace(/:(\w+)/g, (_, k: string) => ids[k] ?? assert.fail(`no ${k}`))}`;

async function assertAccessible(page: Page, what: string): Promise<void> {
  const violations = await axeViolations(page);
  assert.deepEqual(violations, [], `${what}:\n${describeViolations(violations)}`);
}

describe('dashboard accessibility', () => {
  test('the sign-in page has no WCAG 2.1 AA violation', async () => {
    const { page, context } = await d.b.open('desktop');
    const res = await page.goto(`${d.base}/dashboard/signin`);
    assert.equal(res?.status(), 200);
    await assertAccessible(page, 'sign-in');
    // And with its error shown.
    await page.getByLabel('Email').fill('ana@example.com');
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    await assertAccessible(page, 'sign-in with an error');
    await context.close();
  });

  test('a failed form, with its errors beside the fields, has no WCAG 2.1 AA violation', async () => {
    const { page, context } = await d.as('ana');
    await page.goto(urlOf('test/links'));
    // Sent as a browser that does not check `required` would send it, so the server's answer is shown.
    await page.locator('form:has(input[name=title])').evaluate((f: HTMLFormElement) => {
      f.noValidate = true;
      f.requestSubmit();
    });
    await page.getByRole('alert').first().waitFor();
    await assertAccessible(page, 'links with a failed form');
    // The open user menu too.
    await page.locator('.d-user summary').click();
    await assertAccessible(page, 'user menu open');
    await context.close();
  });

  for (const size of ['desktop', 'phone'] as const) {
    test(`each main page has no WCAG 2.1 AA violation and no layout defect (${size})`, async () => {
      const { page, context } = await d.as('ana', size);
      const failures: string[] = [];
      const defects: string[] = [];
      for (const path of PAGES) {
        const res = await page.goto(urlOf(path));
        assert.equal(res?.status(), 200, path);
        const violations = await axeViolations(page);
        if (violations.length) failures.push(`${path}:\n${describeViolations(violations)}`);
        defects.push(...(await layoutProblems(page)).map((p) => `${path}: ${p}`));
      }
      assert.deepEqual(failures, [], failures.join('\n'));
      assert.deepEqual(defects, [], defects.join('\n'));
      await context.close();
    });
  }

  test('by keyboard: a skip link reaches the content, and every control reached by Tab shows its focus', async () => {
    const { page, context } = await d.as('ana');
    await page.goto(urlOf('test/payments'));
    await page.keyboard.press('Tab');
    const first = page.locator(':focus');
    assert.equal((await first.textContent())?.trim(), 'Skip to content', 'the first Tab stop is the skip link');
    assert.ok(await first.isVisible(), 'the skip link is visible once focused');
    await page.keyboard.press('Enter');
    await page.waitForURL(/#main$/); // the skip link moves to the content (a timeout fails the test)
    // Walk the page by Tab: each stop is a visible control with a focus ring (an outline of 2px or more).
    const unringed: string[] = [];
    let stops = 0;
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      const seen = await page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        if (!el || el === document.body) return null;
        const s = getComputedStyle(el);
        const ring = s.outlineStyle !== 'none' && Number.parseFloat(s.outlineWidth) >= 2;
        const box = el.getBoundingClientRect();
        return {
          ring,
          visible: box.width > 0 && box.height > 0,
          name: `${el.tagName}[${el.getAttribute('type') ?? ''}][${el.getAttribute('name') ?? ''}] ${el.textContent?.trim().slice(0, 30)} (outline ${s.outlineStyle} ${s.outlineWidth}, focus ${el.matches(':focus')})`,
        };
      });
      if (!seen) break;
      stops++;
      if (!seen.ring || !seen.visible) unringed.push(seen.name);
    }
    assert.ok(stops > 5, `Tab reached ${stops} controls`);
    assert.deepEqual(unringed, [], 'controls without a visible focus ring');
    await context.close();
  });

  test('by keyboard: a payment is found and opened from the list without a mouse', async () => {
    const { page, context } = await d.as('ana');
    await page.goto(urlOf('test/payments'));
    const link = page.locator(`a[href$="/payments/${ids.payment}"]`).first();
    await link.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/payments/${ids.payment}$`));
    await page.getByRole('heading', { level: 1 }).waitFor();
    await context.close();
  });
});
