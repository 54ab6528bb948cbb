/**
 * The dashboard's pages in real Chromium, as an owner runs the business from them: every page at phone and desktop
 * sizes (screenshots kept in test-results/screenshots), nothing loaded from elsewhere, markup in merchant and payer
 * strings inert; payments filtered, paged and exported to CSV, accepted, cancelled and refunded; links of every kind
 * created, edited and turned off; keys rolled and revoked; the webhook secret revealed and rolled with a second-
 * factor check (deliveries then carry both signatures); the event log and redelivery; settings; the audit log with
 * its filters; and the test-mode Mail page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HOUR } from '../../src/core/clock.ts';
import { WEBHOOK_SECRET_OVERLAP_MS } from '../../src/modules/merchants/service.ts';
import { ApiClient } from '../harness/app.ts';
import {
  foreignRequests,
  screenshot,
  SIZES,
  type RecordedPage,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';
import {
  csrfOf,
  get,
  post,
  signIn,
  totpCode,
  type DashboardUser,
  startDashboard,
  type DashboardTeam,
} from '../harness/dashboard.ts';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../harness/webhook-receiver.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

let w: WebKasse;
let b: TestBrowser;
let base: string;
let owner: DashboardUser;
let as: DashboardTeam<'owner'>['as'];
let hook: WebhookReceiver;
const XSS = '<img src=x onerror="alert(1)">';
const ids: Record<string, string> = {};

before(async () => {
  let team: DashboardTeam<'owner'>['users'];
  ({ w, b, base, as, users: team } = await startDashboard({ owner: 'owner' }, { merchantName: `Café ${XSS}` }));
  owner = team.owner;
  hook = await startWebhookReceiver({ secret: w.m.webhookSecret, now: () => w.t.clock.now() });
  await w.t.kasse.merchants.update(w.m.id, { webhookUrlTest: hook.url }, OPERATOR);
  // Payments with markup where merchants and payers can put text.
  const api = w.m.test;
  const make = async (body: Record<string, unknown>) =>
    (await api.post('/payments', { price_currency: 'USD', ...body })).body;
  ids.paid = (
    await make({ price_amount: 2500, order_id: `A-1 ${XSS}`, description: `Two mugs ${XSS}`, metadata: { note: XSS } })
  ).id;
  await api.post(`/test/payments/${ids.paid}/simulate`, { outcome: 'paid' });
  ids.under = (await make({ price_amount: 1200, order_id: 'A-2', description: 'Underpaid order' })).id;
  await api.post(`/test/payments/${ids.under}/simulate`, { outcome: 'underpaid' });
  ids.waiting = (
    await make({ price_amount: 990, order_id: 'A-3', description: 'Still waiting', chain: 'base', token: 'base:usdc' })
  ).id;
  ids.formula = (
    await make({ price_amount: 100, order_id: '=HYPERLINK("http://evil.example")', description: '+1 555' })
  ).id;
  await w.t.kasse.webhooks.drain();
  ids.link = (
    await api.post('/links', { kind: 'fixed', title: `Beans ${XSS}`, description: XSS, amount_usd_cents: 1500 })
  ).body.id;
});
after(async () => {
  await b?.close();
  await hook?.close();
  await w?.close();
});

const signedIn = (size: 'phone' | 'desktop' = 'desktop'): Promise<RecordedPage> => as('owner', size);

describe('dashboard pages', () => {
  test('every page at phone and desktop sizes: nothing from elsewhere, markup inert', async () => {
    const event = (await w.m.test.get('/events?limit=1')).body.data[0];
    const pages: Array<[string, string, string]> = [
      ['home', '/dashboard/test', 'Home'],
      ['payments', '/dashboard/test/payments', 'Payments'],
      ['payment', `/dashboard/test/payments/${ids.paid}`, `Payment A-1 ${XSS}`],
      ['links', '/dashboard/test/links', 'Payment links'],
      ['link', `/dashboard/test/links/${ids.link}`, `Beans ${XSS}`],
      ['developers', '/dashboard/test/developers', 'Developers'],
      ['events', '/dashboard/test/developers/events', 'Events'],
      ['event', `/dashboard/test/developers/events/${event.id}`, event.type],
      ['team', '/dashboard/test/team', 'Team'],
      ['settings', '/dashboard/test/settings', 'Settings'],
      ['statements', '/dashboard/test/statements', 'Statements'],
      ['statement', '/dashboard/test/statements/2026-03', 'Statement — March 2026'],
      ['audit', '/dashboard/test/audit', 'Audit log'],
      ['mail', '/dashboard/test/mail', 'Mail'],
      ['account', '/dashboard/test/account', 'Account'],
      ['home-live', '/dashboard/live', 'Home'],
    ];
    for (const size of Object.keys(SIZES) as Array<keyof typeof SIZES>) {
      const rec = await signedIn(size);
      for (const [name, path, heading] of pages) {
        const res = await rec.page.goto(base + path);
        assert.equal(res!.status(), 200, path);
        assert.match(res!.headers()['content-security-policy']!, /default-src 'none'; script-src 'self'/);
        assert.equal(await rec.page.getByRole('heading', { level: 1 }).first().textContent(), heading, path);
        await screenshot(rec.page, `dashboard-${name}-${size}`);
        // The layout fits the screen: no sideways scrolling on a phone.
        const overflow = await rec.page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 1, `${path} scrolls sideways by ${overflow}px at ${size}`);
      }
      // Merchant and payer text shows as typed and runs nothing.
      await rec.page.goto(`${base}/dashboard/test/payments/${ids.paid}`);
      assert.ok((await rec.page.locator('main').textContent())!.includes(`Two mugs ${XSS}`));
      assert.equal(await rec.page.locator('main img').count(), 0);
      assert.ok((await rec.page.locator('.d-merchant').textContent())!.includes(XSS));
      assert.deepEqual(rec.dialogs, []);
      assert.deepEqual(rec.errors, []);
      assert.deepEqual(foreignRequests(rec.requests, base), []);
      await rec.context.close();
    }
    // Test mode is marked; live mode is not.
    const rec = await signedIn('phone');
    await rec.page.goto(`${base}/dashboard/test`);
    assert.equal(await rec.page.locator('.d-testbar').textContent(), 'Test mode: test data only, no real money moves');
    await rec.page.getByRole('link', { name: 'Live' }).click();
    await rec.page.waitForURL(/\/dashboard\/live$/);
    assert.equal(await rec.page.locator('.d-testbar').count(), 0);
    assert.match((await rec.page.locator('main').textContent())!, /No payments yet/);
    await rec.context.close();
  });

  test('payments: filters, cursor paging and CSV export of the filtered list', async () => {
    for (let i = 0; i < 30; i++)
      await w.m.test.post('/payments', { price_amount: 100 + i, price_currency: 'USD', order_id: `bulk-${i}` });
    const { page, context } = await signedIn('desktop');
    await page.goto(`${base}/dashboard/test/payments`);
    assert.equal(await page.locator('tbody tr').count(), 25);
    await page.getByRole('link', { name: 'Older payments →' }).click();
    const second = await page.locator('tbody tr').count();
    assert.equal(second, 34 - 25);
    await page.getByLabel('Status').selectOption('paid');
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.deepEqual(await page.locator('tbody td[data-label=Order]').allTextContents(), [`A-1 ${XSS}`]);
    await page.goto(`${base}/dashboard/test/payments?order_id=A-2`);
    assert.deepEqual(await page.locator('tbody td[data-label=Order]').allTextContents(), ['A-2']);
    await page.goto(`${base}/dashboard/test/payments?token=base%3Ausdc`);
    const withUsdc = await page.locator('tbody td[data-label=Order]').allTextContents();
    assert.deepEqual(withUsdc.sort(), ['A-2', 'A-3', `A-1 ${XSS}`].sort());
    await page.goto(`${base}/dashboard/test/payments?from=2026-03-02`);
    assert.equal(await page.locator('tbody tr').count(), 0);
    await page.goto(`${base}/dashboard/test/payments?to=2026-03-01&from=2026-03-01&status=waiting`);
    assert.equal(await page.locator('tbody tr').count(), 25);
    const bad = await page.goto(`${base}/dashboard/test/payments?from=yesterday`);
    assert.equal(bad!.status(), 400);
    await page.getByRole('alert').filter({ hasText: 'Use a date like 2026-03-01.' }).waitFor();
    await screenshot(page, 'dashboard-payments-filter-error-desktop');
    // CSV of a filter, and of everything.
    const csv = await get(page, `${base}/dashboard/test/payments.csv?status=paid`);
    assert.equal(csv.status, 200);
    assert.equal(
      csv.headers['content-disposition'],
      'attachment; filename="payments-test-status-paid-2026-03-01.csv"',
      'the file name names the filter',
    );
    const lines = csv.body.trim().split('\r\n');
    assert.equal(
      lines[0],
      'id,created_at,status,price_usd,price_amount,order_id,description,token,coin,pay_amount,received_amount,paid_at,fee_usd,swap_fee_usd,net_usd,tx_hashes',
    );
    assert.equal(lines.length, 2);
    assert.match(
      lines[1]!,
      new RegExp(`^"${ids.paid}",".+","paid","25.00","2500","A-1 <img src=x onerror=""alert\\(1\\)"">"`),
    );
    assert.match(lines[1]!, /,"base:usdc","USDC on Base Sepolia","25","25",/, 'the coin by id and by name');
    assert.match(lines[1]!, /,"0\.25","0\.00","24\.75","0x/, 'the fee (1 %) and the net credited');
    const filtered = await get(
      page,
      `${base}/dashboard/test/payments.csv?token=base%3Ausdc&from=2026-03-01&to=2026-03-01&order_id=A%2F3%20x`,
    );
    assert.equal(
      filtered.headers['content-disposition'],
      'attachment; filename="payments-test-order-a-3-x-token-base-usdc-from-2026-03-01-to-2026-03-01-2026-03-01.csv"',
    );
    const allCsv = await get(page, `${base}/dashboard/test/payments.csv`);
    assert.equal(allCsv.headers['content-disposition'], 'attachment; filename="payments-test-2026-03-01.csv"');
    const all = allCsv.body.trim().split('\r\n');
    assert.match(
      all.find((l) => l.startsWith(`"${ids.formula}"`))!,
      /,"","","","[^"]*"$/,
      'no fee or net for a payment never credited',
    );
    assert.equal(all.length, 35);
    const formula = all.find((l) => l.startsWith(`"${ids.formula}"`))!;
    assert.ok(formula.includes(`"'=HYPERLINK(""http://evil.example"")"`), 'a formula is defused');
    assert.ok(formula.includes(`"'+1 555"`));
    await context.close();
  });

  test('payment actions: accept an underpaid payment, cancel a waiting one, refund a paid one', async () => {
    const { page, context } = await signedIn('phone');
    await page.goto(`${base}/dashboard/test/payments/${ids.under}`);
    await page.getByRole('button', { name: 'Accept as paid' }).click();
    await page.getByText('The payment was accepted as paid.').waitFor();
    assert.equal((await w.m.test.get(`/payments/${ids.under}`)).body.status, 'paid');
    await page.goto(`${base}/dashboard/test/payments/${ids.waiting}`);
    await page.getByRole('button', { name: 'Cancel payment' }).click();
    await page.getByText('The payment was cancelled.').waitFor();
    assert.equal((await w.m.test.get(`/payments/${ids.waiting}`)).body.status, 'cancelled');
    // Accepting it now is not possible: the API's code, our words.
    await page.goto(`${base}/dashboard/test/payments/${ids.waiting}`);
    const token = await csrfOf(page);
    const late = await post(page, `${base}/dashboard/test/payments/${ids.waiting}/accept`, { _csrf: token });
    assert.equal(late.status, 422);
    assert.match(late.body, /Only an underpaid or late payment can be accepted\./);
    assert.match(late.body, /<code>invalid_state<\/code>/);
    assert.doesNotMatch(late.body, /Transition|not allowed from/i);
    // Refund: the amount is shown; a bad address is refused with the field marked.
    await page.goto(`${base}/dashboard/test/payments/${ids.paid}`);
    assert.equal(await page.locator('[data-fee]').innerText(), '$0.25');
    assert.equal(await page.locator('[data-net]').innerText(), '$24.75');
    assert.match(await page.locator('.d-facts').innerText(), /Metadata/, 'metadata that is there is shown');
    assert.match(await page.locator('main').innerText(), /USDC on Base Sepolia/, 'the coin by name');
    assert.doesNotMatch(await page.locator('main').innerText(), /base:usdc/);
    await page.getByText(/Returns 25 USDC on Base Sepolia to an address on Base Sepolia/).waitFor();
    await page.getByLabel('Destination address on Base Sepolia').fill('not-an-address');
    await page.getByRole('button', { name: 'Refund 25 USDC' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Enter a valid address on the network the money came in on.' })
      .waitFor();
    assert.equal(await page.locator('#f-destination[aria-invalid=true]').count(), 1);
    await screenshot(page, 'dashboard-refund-error-phone');
    await page.getByLabel('Destination address on Base Sepolia').fill('0x000000000000000000000000000000000000dEaD');
    await page.getByLabel('Note (optional)').fill('Customer returned the mugs');
    await page.getByRole('button', { name: 'Refund 25 USDC' }).click();
    await page.getByText('The refund was requested.').waitFor();
    await w.t.kasse.refunds.settleSimulated();
    await page.reload();
    await page.locator('.d-facts .d-s-refunded').waitFor();
    assert.equal((await w.m.test.get(`/payments/${ids.paid}`)).body.status, 'refunded');
    assert.equal(await page.locator('[data-net]').innerText(), '$0.00 the credit was reversed (refund or reorg)');
    // A payment with no metadata has no empty metadata box, and no fee until it is credited.
    await page.goto(`${base}/dashboard/test/payments/${ids.waiting}`);
    assert.doesNotMatch(await page.locator('.d-facts').innerText(), /Metadata|\{\}/);
    assert.equal(await page.locator('.d-pre').count(), 0);
    assert.equal(await page.locator('[data-net]').innerText(), '— not credited');
    await context.close();
  });

  test('held payments: listed with what can be captured and until when; capture an amount and void, each confirmed, CSRF-checked and audited', async () => {
    const api = w.m.test;
    const held = (
      await api.post('/payments', {
        price_amount: 5000,
        price_currency: 'USD',
        order_id: `H-1 ${XSS}`,
        capture_method: 'manual',
      })
    ).body;
    await api.post(`/test/payments/${held.id}/simulate`, { outcome: 'authorized' });
    const { page, context } = await signedIn('desktop');
    // Reached from the navigation, right after Payments, and marked there as the current page.
    await page.goto(`${base}/dashboard/test/payments`);
    const nav = page.getByRole('navigation', { name: 'Dashboard' });
    const entries = await nav.getByRole('link').allTextContents();
    assert.equal(entries[entries.indexOf('Payments') + 1], 'Holds');
    await nav.getByRole('link', { name: 'Holds' }).click();
    await page.getByRole('heading', { level: 1, name: 'Authorized payments' }).waitFor();
    assert.equal(await nav.locator('[aria-current="page"]').innerText(), 'Holds');
    const row = page.locator('tbody tr', { hasText: 'H-1' });
    assert.equal(await row.locator('td').nth(1).innerText(), '$50.00');
    assert.equal(
      await row.locator('td').nth(3).locator('time').getAttribute('datetime'),
      held.authorization.capture_before,
    );
    assert.equal(await page.locator('main img').count(), 0, 'the order id is escaped');
    await screenshot(page, 'dashboard-holds-desktop');
    await row.getByRole('link').click();
    await page.locator('[data-capturable]').getByText('$50.00').waitFor();

    // Unconfirmed or forged, nothing happens.
    const token = await csrfOf(page);
    const forged = await post(page, `${base}/dashboard/test/payments/${held.id}/capture`, {
      amount_usd: '10.00',
      confirm: 'yes',
    });
    assert.equal(forged.status, 403);
    const unconfirmed = await post(page, `${base}/dashboard/test/payments/${held.id}/capture`, {
      _csrf: token,
      amount_usd: '10.00',
    });
    assert.equal(unconfirmed.status, 400);
    const tooMuch = await post(page, `${base}/dashboard/test/payments/${held.id}/capture`, {
      _csrf: token,
      amount_usd: '50.01',
      confirm: 'yes',
    });
    assert.equal(tooMuch.status, 422);
    assert.match(tooMuch.body, /Only 5000 US cents remain to capture/);
    assert.equal((await api.get(`/payments/${held.id}`)).body.authorization.pending_usd_cents, 0);

    // Each rendered form carries its own key: the same form posted again (a double click) captures or voids once.
    const onceOf = (action: string) => page.locator(`form[action$="/${action}"] input[name=once]`).inputValue();
    const operations = async () =>
      (await w.t.kasse.db.selectFrom('hold_operations').select('kind').where('payment_id', '=', held.id).execute()).map(
        (o) => o.kind,
      );
    await page.goto(`${base}/dashboard/test/payments/${held.id}`);
    const captureOnce = await onceOf('capture');
    await page.getByLabel(/Amount to capture in USD/).fill('12.50');
    await page.getByLabel('I confirm: this moves the amount from the payer to me.').check();
    await page.getByRole('button', { name: 'Capture' }).click();
    await page.getByText('The capture was asked for.').waitFor();
    const resent = await post(page, `${base}/dashboard/test/payments/${held.id}/capture`, {
      _csrf: token,
      once: captureOnce,
      amount_usd: '12.50',
      confirm: 'yes',
    });
    assert.equal(resent.status, 303, resent.body);
    assert.equal((await api.get(`/payments/${held.id}`)).body.authorization.pending_usd_cents, 1250);
    assert.deepEqual(await operations(), ['capture'], 'the form posted twice captured once');
    await w.t.kasse.capture.settleSimulated();
    await page.reload();
    await page.locator('[data-capturable]').getByText('$37.50').waitFor();
    const voidOnce = await onceOf('void');
    assert.notEqual(voidOnce, captureOnce);
    await page.getByLabel(/I confirm: what is not captured goes back/).check();
    await page.getByRole('button', { name: 'Void the rest' }).click();
    await page.getByText('The void was asked for.').waitFor();
    const voidAgain = await post(page, `${base}/dashboard/test/payments/${held.id}/void`, {
      _csrf: token,
      once: voidOnce,
      confirm: 'yes',
    });
    assert.equal(voidAgain.status, 303, voidAgain.body);
    assert.deepEqual(await operations(), ['capture', 'void'], 'the void form posted twice voided once');
    await w.t.kasse.capture.settleSimulated();
    const after = (await api.get(`/payments/${held.id}`)).body;
    assert.equal(after.status, 'paid');
    assert.equal(after.authorization.captured_usd_cents, 1250);
    assert.equal(after.authorization.voided, true);
    const audit = await w.t.kasse.db
      .selectFrom('audit_log')
      .select(['action', 'actor_label'])
      .where('target_id', '=', held.id)
      .where('action', 'in', ['payment.capture', 'payment.void'])
      // In the order written: both carry the same time on the test's fake clock.
      .orderBy('seq')
      .execute();
    assert.deepEqual(audit, [
      { action: 'payment.capture', actor_label: 'owner@example.com' },
      { action: 'payment.void', actor_label: 'owner@example.com' },
    ]);

    // Refunded after a capture, the page offers no capture but still voids the rest back to the payer.
    const refunded = (
      await api.post('/payments', {
        price_amount: 2000,
        price_currency: 'USD',
        order_id: 'H-2',
        capture_method: 'manual',
      })
    ).body;
    await api.post(`/test/payments/${refunded.id}/simulate`, { outcome: 'authorized' });
    assert.equal((await api.post(`/payments/${refunded.id}/capture`, { amount_usd_cents: 500 })).status, 200);
    await w.t.kasse.capture.settleSimulated();
    const refund = await api.post(`/payments/${refunded.id}/refund`, {
      destination: '0x000000000000000000000000000000000000dEaD',
    });
    assert.equal(refund.status, 202);
    await w.t.kasse.refunds.settleSimulated();
    await page.goto(`${base}/dashboard/test/payments/${refunded.id}`);
    await page.locator('[data-capturable]').getByText('$0.00').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Capture', exact: true }).count(), 0);
    await page.getByLabel(/I confirm: what is not captured goes back/).check();
    await page.getByRole('button', { name: 'Void the rest' }).click();
    await page.getByText('The void was asked for.').waitFor();
    await w.t.kasse.capture.settleSimulated();
    const back = (await api.get(`/payments/${refunded.id}`)).body;
    assert.equal(back.status, 'refunded');
    assert.equal(back.authorization.voided, true);
    await context.close();
  });

  test('a failed refund is listed with its reason on the payment page, and the merchant can request it again', async () => {
    const api = w.m.test;
    const p = (await api.post('/payments', { price_currency: 'USD', price_amount: 700, order_id: 'R-1' })).body;
    await api.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    const first = await api.post(`/payments/${p.id}/refund`, {
      destination: '0x000000000000000000000000000000000000dEaD',
    });
    assert.equal(first.status, 202);
    // The network's sender reports that it can never be sent (the reason is a node's text: shown inert).
    await w.t.kasse.transfers.transferSettled('test', {
      transferId: first.body.id,
      status: 'failed',
      txHash: null,
      error: `the destination refused it ${XSS}`,
    });
    const { page, context } = await signedIn('desktop');
    await page.goto(`${base}/dashboard/test/payments/${p.id}`);
    const row = page.locator('#refunds tbody tr').first();
    await row.locator('.d-s-failed').waitFor();
    assert.equal(await row.locator('.d-refund-error').textContent(), `the destination refused it ${XSS}`);
    assert.equal(await page.locator('#refunds img').count(), 0, 'the reason is escaped');
    await page.getByLabel('Destination address on base').fill('0x000000000000000000000000000000000000bEEF');
    await page.getByRole('button', { name: /^Refund / }).click();
    await page.getByText('The refund was requested.').waitFor();
    await page.locator('#refunds tbody tr').nth(1).locator('.d-s-pending').waitFor();
    await context.close();
  });

  test('links: create every kind, edit, turn off; QR code; POS terminal opens for the signed-in user', async () => {
    const { page, context } = await signedIn('desktop');
    await page.goto(`${base}/dashboard/test/links`);
    const create = async (kind: string, fill: Record<string, string>) => {
      await page.goto(`${base}/dashboard/test/links`);
      await page.getByLabel('Kind').selectOption(kind);
      for (const [label, value] of Object.entries(fill)) await page.getByLabel(label, { exact: true }).fill(value);
      await page.getByRole('button', { name: 'Create link' }).click();
    };
    await create('fixed', { Title: 'Espresso beans', 'Price in US dollars (fixed)': '15.50' });
    await page.getByText('The payment link was created.').waitFor();
    assert.equal(await page.locator('svg.k-qr').count(), 1);
    await create('open', {
      Title: 'Donation',
      'Lowest amount, dollars (optional)': '5',
      'Highest amount, dollars (optional)': '200',
    });
    await page.getByText('The payment link was created.').waitFor();
    // A tip link without presets: the field is marked, nothing is created.
    const before = (await w.m.test.get('/links')).body.data.length;
    await create('tip', { Title: 'Tips' });
    await page.getByRole('alert').filter({ hasText: 'A tip link needs 1 to 6 different preset amounts' }).waitFor();
    assert.equal((await w.m.test.get('/links')).body.data.length, before);
    await screenshot(page, 'dashboard-link-error-desktop');
    await page.getByLabel('Preset amounts, dollars (tip)').fill('3, 5, 8');
    await page.getByRole('button', { name: 'Create link' }).click();
    await page.getByText('The payment link was created.').waitFor();
    await create('pos', { Title: 'Counter 1' });
    await page.getByText('The payment link was created.').waitFor();
    const links = (await w.m.test.get('/links')).body.data as Array<{
      id: string;
      kind: string;
      title: string;
      url: string;
      amount_usd_cents: number | null;
      presets_usd_cents: number[];
      min_usd_cents: number | null;
    }>;
    const byTitle = Object.fromEntries(links.map((l) => [l.title, l]));
    assert.equal(byTitle['Espresso beans']!.amount_usd_cents, 1550);
    assert.equal(byTitle.Donation!.min_usd_cents, 500);
    assert.deepEqual(byTitle.Tips!.presets_usd_cents, [300, 500, 800]);
    assert.equal(byTitle['Counter 1']!.kind, 'pos');
    // Edit and turn off.
    await page.goto(`${base}/dashboard/test/links/${byTitle['Espresso beans']!.id}`);
    await page.getByLabel('Title').fill('Espresso beans 1 kg');
    await page.getByLabel('Most payments').fill('10');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('The link was saved.').waitFor();
    let l = (await w.m.test.get(`/links/${byTitle['Espresso beans']!.id}`)).body;
    assert.equal(l.title, 'Espresso beans 1 kg');
    assert.equal(l.max_uses, 10);
    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByText('The link was turned off').waitFor();
    l = (await w.m.test.get(`/links/${l.id}`)).body;
    assert.equal(l.active, false);
    assert.equal((await fetch(l.url, { headers: { accept: 'text/html' } })).status, 410);
    // The POS terminal opens from the links list for the signed-in user.
    await page.goto(`${base}/dashboard/test/links`);
    const [terminal] = await Promise.all([
      context.waitForEvent('page'),
      page.getByRole('link', { name: 'Open terminal' }).click(),
    ]);
    await terminal.waitForLoadState();
    await terminal.getByRole('button', { name: /Charge/ }).waitFor();
    await context.close();
  });

  test('developers: roll and revoke keys; reveal and roll the webhook secret after a TOTP check (two signatures during the overlap); events and redelivery', async () => {
    const { page, context } = await signedIn('desktop');
    await page.goto(`${base}/dashboard/test/developers`);
    await page.getByRole('button', { name: 'Roll test key' }).click();
    const key = (await page.locator('#new-key').textContent())!;
    assert.match(key, /^kasse_test_[A-Za-z0-9_-]{32}$/);
    await screenshot(page, 'dashboard-key-rolled-desktop');
    assert.equal((await w.m.test.get('/account')).status, 401, 'the old key stopped working');
    const api = new ApiClient(w.t.urls.test, key);
    assert.equal((await api.get('/account')).status, 200);
    // Shown once: the page again shows only its last characters.
    await page.goto(`${base}/dashboard/test/developers`);
    assert.ok(!(await page.content()).includes(key));
    const keyId = (await w.t.kasse.merchants.listKeys(w.m.id)).find((k) => k.mode === 'test' && !k.revoked_at)!.id;
    await page.locator(`form[action$="/keys/${keyId}/revoke"] button`).click();
    await page.getByText('The key was revoked').waitFor();
    assert.equal((await api.get('/account')).status, 401);
    await page.getByRole('button', { name: 'Roll test key' }).click();
    const api2 = new ApiClient(w.t.urls.test, (await page.locator('#new-key').textContent())!);

    // Reveal needs a fresh code: one field for revealing and rolling.
    await page.goto(`${base}/dashboard/test/developers`);
    assert.equal(await page.getByLabel('Your current 6-digit code').count(), 1, 'one code field');
    await page.getByLabel('Your current 6-digit code').fill('123456');
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    await page.getByRole('alert').filter({ hasText: 'That code is not valid' }).waitFor();
    assert.equal(await page.locator('#webhook-secret').count(), 0);
    await page.getByLabel('Your current 6-digit code').fill(totpCode(owner.secret!, w.t.clock));
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    assert.equal(await page.locator('#webhook-secret').textContent(), w.m.webhookSecret);
    // Roll: deliveries carry both signatures until the overlap ends.
    await page.getByLabel('Your current 6-digit code').fill(totpCode(owner.secret!, w.t.clock));
    await page.getByRole('button', { name: 'Roll secret' }).click();
    const fresh = (await page.locator('#webhook-secret').textContent())!;
    assert.match(fresh, /^whsec_/);
    assert.notEqual(fresh, w.m.webhookSecret);
    await screenshot(page, 'dashboard-secret-rolled-desktop');
    const p = (await api2.post('/payments', { price_amount: 700, price_currency: 'USD', order_id: 'after-roll' })).body;
    await api2.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    await w.t.kasse.webhooks.drain();
    const req = hook.requests[hook.requests.length - 1]!;
    const header = String(req.headers['service-signature']);
    assert.equal(header.match(/v1=/g)!.length, 2);
    assert.ok('t' in verifySignature(header, req.rawBody, fresh, req.at), 'the new secret verifies');
    assert.ok('t' in verifySignature(header, req.rawBody, w.m.webhookSecret, req.at), 'the old secret still verifies');
    w.t.clock.advance(WEBHOOK_SECRET_OVERLAP_MS + HOUR);
    w.t.kasse.webhooks.delivery.forgetSecrets();
    const p2 = (await api2.post('/payments', { price_amount: 800, price_currency: 'USD', order_id: 'after-overlap' }))
      .body;
    await api2.post(`/test/payments/${p2.id}/simulate`, { outcome: 'paid' });
    hook.setSecret(fresh);
    await w.t.kasse.webhooks.drain();
    const last = hook.requests[hook.requests.length - 1]!;
    assert.equal(String(last.headers['service-signature']).match(/v1=/g)!.length, 1);
    assert.equal(last.rejected, null);

    // Event log → event → redeliver (a new session: the clock moved a day).
    await signIn(page, base, w.t.clock, owner);
    await page.goto(`${base}/dashboard/test/developers/events`);
    await page.getByRole('link', { name: p2.id }).first().waitFor();
    const evt = (await api2.get('/events?limit=1')).body.data[0];
    await page.goto(`${base}/dashboard/test/developers/events/${evt.id}`);
    await page.locator('.d-delivery .d-s-delivered').first().waitFor();
    await page.getByRole('button', { name: 'Redeliver' }).click();
    await page.getByText('A new delivery of the event was queued.').waitFor();
    await w.t.kasse.webhooks.drain();
    await page.reload();
    assert.equal(await page.locator('.d-delivery').count(), 2);
    // The webhook URL of live mode must be https.
    await page.goto(`${base}/dashboard/live/developers`);
    await page.getByLabel('Events are POSTed here').fill('http://shop.example/hook');
    await page.getByRole('button', { name: 'Save URL' }).click();
    await page.getByRole('alert').filter({ hasText: 'https://' }).waitFor();
    await page.getByLabel('Events are POSTed here').fill('https://shop.example/hook');
    await page.getByRole('button', { name: 'Save URL' }).click();
    await page.getByText('The webhook URL was saved.').waitFor();
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).webhookUrl.live, 'https://shop.example/hook');
    await context.close();
  });

  test('settings: name, payout coin and quorum; a quorum above the number of owners is refused', async () => {
    const { page, context } = await signedIn('phone');
    // The payout coin is named as each mode names it: after its testnet in test mode.
    for (const [mode, name] of [
      ['live', 'USDC on Base'],
      ['test', 'USDC on Base Sepolia'],
    ] as const) {
      await page.goto(`${base}/dashboard/${mode}/settings`);
      assert.equal(await page.getByLabel('Payout coin').locator('option:checked').textContent(), name, mode);
    }
    assert.equal(await page.locator('#tax-profile').count(), 1);
    await page.getByLabel('Approvals a disbursement needs').selectOption('1');
    await page.getByLabel('Payout coin').selectOption({ index: 0 });
    await page.getByLabel('Merchant name (shown to payers)').fill('Corner Café');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings were saved.').waitFor();
    const m = await w.t.kasse.merchants.get(w.m.id);
    assert.equal(m.name, 'Corner Café');
    assert.equal(m.approvalsRequired, 1);
    assert.match(m.payoutToken, /^[a-z0-9-]+:[a-z0-9]+$/);
    const res = await post(page, `${base}/dashboard/test/settings`, {
      _csrf: await csrfOf(page),
      name: 'Corner Café',
      payout_token: m.payoutToken,
      approvals_required: '2',
    });
    assert.equal(res.status, 400);
    assert.match(res.body, /a disbursement cannot need more approvals than that/);
    const sol = await post(page, `${base}/dashboard/test/settings`, {
      _csrf: await csrfOf(page),
      name: 'Corner Café',
      payout_token: 'solana:usdc',
      approvals_required: '',
    });
    assert.equal(sol.status, 400);
    assert.match(sol.body, /Choose a coin from the list\./);
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).approvalsRequired, 1);
    await context.close();
  });

  test('audit log: sign-ins, changes by key and from the dashboard, with filters', async () => {
    const { page, context } = await signedIn('desktop');
    await page.goto(`${base}/dashboard/test/audit`);
    const rows = page.locator('tbody tr');
    assert.ok((await rows.count()) > 10);
    await page.getByLabel('What').selectOption('payment');
    await page.getByRole('button', { name: 'Filter' }).click();
    const actions = await page.locator('td[data-label=What] > code').allTextContents();
    assert.ok(actions.length > 0 && actions.every((a) => a.startsWith('payment.')));
    const who = await page.locator('td[data-label=Who]').allTextContents();
    assert.ok(
      who.some((x) => /^API key key_/.test(x)),
      'payments created by key',
    );
    assert.ok(who.includes('owner@example.com'), 'the refund made from the dashboard');
    // Coins by name, as everywhere else; never a token id.
    const what = (await page.locator('td[data-label=What]').allInnerTexts()).join('\n');
    assert.match(what, /Coin\s+USDC on Base Sepolia/);
    assert.doesNotMatch(what, /\b[a-z]+:(usdc|usdt|eth|sol)\b/, 'no token id');
    await page.getByLabel('What').selectOption('signin');
    await page.getByLabel('Who').selectOption({ label: 'owner@example.com' });
    await page.getByRole('button', { name: 'Filter' }).click();
    assert.ok(
      (await page.locator('td[data-label=What] > code').allTextContents()).every(
        (a) => a === 'signin.succeeded' || a === 'signin.failed' || a === 'signout',
      ),
    );
    assert.ok((await page.locator('td[data-label=From]').allTextContents()).every((ip) => ip === '127.0.0.1'));
    await screenshot(page, 'dashboard-audit-filtered-desktop');
    await context.close();
  });

  test('the test-mode Mail page keeps mail when no SMTP server is set; sign-in links are not shown', async () => {
    const { page, context } = await signedIn('desktop');
    await page.goto(`${base}/dashboard/test/team`);
    await page.getByLabel('Email').fill(`viewer+${Date.now()}@example.com`);
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('The invitation was sent.').waitFor();
    await w.t.kasse.email.runOnce();
    await page.goto(`${base}/dashboard/test/mail`);
    await page
      .getByRole('link', { name: /You are invited to Corner Café on Kasse/ })
      .first()
      .click();
    await page.locator('.d-s-kept').waitFor();
    assert.match((await page.locator('main').textContent())!, /carries a sign-in link/);
    assert.ok(!(await page.content()).includes('/dashboard/setup/'));
    assert.equal((await get(page, `${base}/dashboard/live/mail`)).status, 404);
    await context.close();
  });
});
