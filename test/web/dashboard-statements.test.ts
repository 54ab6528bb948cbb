/**
 * Statements and tax invoices on the dashboard, in real Chromium: the months of the account, a month's statement
 * with its CSV and PDF (read back with pdftotext), for every role; the monthly statement emailed to owners who opt
 * in — over real SMTP with the PDF attached, once per month across repeated and concurrent runs and a failed try,
 * on the fake clock's 1st of the month; the tax profile on the Settings page (owners, errors on the field, CSRF);
 * and a paid payment's tax invoice issued from its page and downloaded as PDF.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import { MINUTE } from '../../src/core/clock.ts';
import { gstinCheckChar } from '../../src/modules/invoices/gst.ts';
import { STATEMENT_EMAIL_DELAY_MS } from '../../src/modules/statements/emails.ts';
import { dollars } from '../../src/modules/statements/render.ts';
import {
  foreignRequests,
  launchBrowser,
  screenshot,
  startWebKasse,
  type RecordedPage,
  type TestBrowser,
  type WebKasse,
} from '../harness/browser.ts';
import { createUser, csrfOf, get, post, setUpAccount, signIn, type DashboardUser } from '../harness/dashboard.ts';
import { startFxServer, type FxServer } from '../harness/fx-server.ts';
import { pdfRuns, readPdf } from '../harness/pdf.ts';
import { assertAddsUp, centsOf, csvBalance, pdfBalance, type ReadBalance } from '../harness/statements.ts';
import { linkIn, startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';

const SELLER_GSTIN = '27AAPFU0939F1ZV'; // Maharashtra
const BUYER_GSTIN = `29AAGCB7383J1Z${gstinCheckChar('29AAGCB7383J1Z')}`; // Karnataka
const XSS = '<img src=x onerror="alert(1)">';

let w: WebKasse;
let b: TestBrowser;
let smtp: SmtpReceiver;
let fx: FxServer;
let base: string;
const users: Record<'owner' | 'member' | 'viewer', DashboardUser> = {} as never;

before(async () => {
  smtp = await startSmtpReceiver();
  fx = await startFxServer();
  w = await startWebKasse({
    merchantName: `Chai ${XSS}`,
    env: {
      KASSE_SMTP_URL: smtp.url,
      KASSE_MAIL_FROM: 'Kasse <billing@kasse.test>',
      KASSE_FX_URL: fx.url,
      KASSE_FX_TIMEOUT_MS: '2000',
    },
  });
  b = await launchBrowser();
  base = w.t.urls.checkout;
  for (const role of ['owner', 'member', 'viewer'] as const) {
    const u = await createUser(w.t.kasse, w.m.id, `${role}@example.com`, role);
    const { page, context } = await b.open('desktop');
    users[role] = await setUpAccount(page, u.setupUrl, w.t.clock, { email: `${role}@example.com`, id: u.id });
    await context.close();
  }
});
after(async () => {
  await b?.close();
  await w?.close();
  await smtp?.close();
  await fx?.close();
});

/** A fresh session (the fake clock moves days between tests, past any session's life). */
async function as(role: keyof typeof users, path = '/dashboard/test'): Promise<RecordedPage & { token: string }> {
  const rec = await b.open('desktop');
  await signIn(rec.page, base, w.t.clock, users[role]);
  await rec.page.goto(base + path);
  return { ...rec, token: await csrfOf(rec.page) };
}

async function paid(cents: number, orderId: string): Promise<string> {
  const p = (
    await w.m.test.post('/payments', {
      price_amount: cents,
      price_currency: 'USD',
      order_id: orderId,
      description: `Tea ${XSS}`,
    })
  ).body;
  assert.equal((await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' })).status, 200);
  return p.id;
}

/** Clicks a download link and returns the file's bytes and suggested name. */
async function download(rec: RecordedPage, name: string | RegExp): Promise<{ bytes: Buffer; filename: string }> {
  const [dl] = await Promise.all([
    rec.page.waitForEvent('download'),
    rec.page.getByRole('link', { name }).first().click(),
  ]);
  return { bytes: readFileSync((await dl.path())!), filename: dl.suggestedFilename() };
}

const statementMails = async () =>
  (
    await sql<{
      to_address: string;
      subject: string;
    }>`SELECT to_address, subject FROM email_outbox WHERE kind = 'statement.monthly' ORDER BY created_at, id`.execute(
      w.t.kasse.db,
    )
  ).rows;

describe('statements on the dashboard', () => {
  test('the months of the account, a month with its figures, CSV and PDF, for every role; other months refused', async () => {
    await paid(2500, 'M-1');
    const refunded = await paid(4000, 'M-2');
    assert.equal(
      (
        await w.m.test.post(`/payments/${refunded}/refund`, {
          destination: '0x000000000000000000000000000000000000dEaD',
        })
      ).status,
      202,
    );
    await w.t.kasse.refunds.settleSimulated();
    w.t.clock.set(new Date('2026-04-02T09:00:00Z'));
    await paid(1000, 'A-1');
    const march = (await w.m.test.get('/statements/2026-03')).body;
    assert.equal(march.credits.count, 2);
    assert.equal(march.reversals.net_usd_cents, 3960);

    const owner = await as('owner', '/dashboard/test/statements');
    assert.equal(await owner.page.getByRole('heading', { level: 1 }).textContent(), 'Statements');
    assert.deepEqual(await owner.page.locator('tbody tr td:first-child').allTextContents(), [
      'April 2026',
      'March 2026',
    ]);
    assert.match((await owner.page.locator('tbody tr').first().textContent())!, /in progress/);
    await owner.page.getByRole('link', { name: 'March 2026' }).click();
    assert.equal(await owner.page.getByRole('heading', { level: 1 }).textContent(), 'Statement — March 2026');
    const balance = (await owner.page.locator('.d-statement').textContent())!;
    assert.match(balance, /Opening balance\s*\$0\.00/);
    assert.ok(balance.includes(`Credits in stablecoins (2 payments)`), balance);
    assert.ok(balance.includes(`+${dollars(march.credits.net_usd_cents)}`), balance);
    assert.ok(balance.includes(`Closing balance${dollars(march.closing_balance_usd_cents)}`), balance);
    assert.match((await owner.page.locator('main').textContent())!, /Reconciliation gap\$0\.00/);
    await screenshot(owner.page, 'dashboard-statement-desktop');
    const page: ReadBalance = { labels: [], cents: [] };
    for (const row of await owner.page.locator('.d-statement tr').all()) {
      page.labels.push((await row.locator('th').evaluate((th) => th.firstChild!.textContent!)).trim());
      page.cents.push(centsOf((await row.locator('td').textContent())!));
    }
    assert.equal(assertAddsUp(page, 'page'), march.closing_balance_usd_cents);
    assert.equal(page.cents[3], -3960, 'the refund takes from the balance');

    const csv = await download(owner, 'Download CSV');
    assert.equal(csv.filename, 'statement-2026-03-test.csv');
    const lines = csv.bytes.toString('utf8').split('\r\n');
    assert.equal(lines[0], 'section,item,count,usd,token,amount,destination,tx_hash,time');
    assert.ok(lines.includes('credits,value,2,65.00'), lines.join('\n'));
    assert.ok(
      lines.includes(`balance,closing,,${(march.closing_balance_usd_cents / 100).toFixed(2)}`),
      lines.join('\n'),
    );
    assert.deepEqual(csvBalance(lines.join('\r\n')).cents, page.cents, "the CSV has the page's signed figures");

    const pdf = await download(owner, 'Download PDF');
    assert.equal(pdf.filename, 'statement-2026-03-test.pdf');
    const read = readPdf(pdf.bytes, 'dashboard-statement-2026-03');
    assert.equal(read.pages, 1);
    assert.match(read.text, /Statement — March 2026/);
    assert.ok(read.text.includes(`Chai ${XSS}`), 'the merchant name as typed');
    assert.match(read.text, /TEST MODE/);
    assert.match(read.text, new RegExp(`Closing balance\\s+${(march.closing_balance_usd_cents / 100).toFixed(2)}`));
    const inPdf = pdfBalance(read.text);
    assert.deepEqual(inPdf.cents, page.cents, "the PDF has the page's signed figures");
    assert.deepEqual(inPdf.labels, page.labels, 'line for line, each label whole on the line of its amount');
    // Each line's make-up is under its label; the opening and closing balances are bold, their movements are not.
    const runs = pdfRuns('dashboard-statement-2026-03');
    const run = (text: string) => runs.find((r) => r.text.trim() === text) ?? assert.fail(`no run "${text}"`);
    for (const label of page.labels) {
      const r = run(label);
      const balance = /^(Opening|Closing) balance$/.test(label);
      assert.equal(r.bold, balance, `${label} ${balance ? 'is' : 'is not'} bold`);
      const amount = runs.find((x) => x.top === r.top && x.left > r.left + 200)!;
      assert.equal(amount.bold, balance, `the amount of ${label}`);
    }
    const credits = run(page.labels[1]!);
    const detail = runs.find((r) => r.text.startsWith('value $65.00'))!;
    assert.ok(detail.top > credits.top && detail.left === credits.left, 'the make-up under its label');

    // The month after is linked; the month in progress runs to now; a month ahead or malformed is refused.
    await owner.page.getByRole('link', { name: 'Next month →' }).click();
    assert.equal(await owner.page.getByRole('heading', { level: 1 }).textContent(), 'Statement — April 2026');
    assert.match((await owner.page.locator('.d-toolbar').textContent())!, /\(in progress\)/);
    assert.deepEqual(owner.errors, []);
    for (const month of ['2026-05', '2026-13', 'latest']) {
      const res = await owner.page.goto(`${base}/dashboard/test/statements/${month}`);
      assert.equal(res!.status(), 400, month);
      assert.match(
        (await owner.page.locator('.d-error').textContent())!,
        /Choose a month from the list[\s\S]*invalid_request on month/,
      );
    }
    assert.equal((await get(owner.page, `${base}/dashboard/test/statements/2026-05/pdf`)).status, 400);
    assert.deepEqual(foreignRequests(owner.requests, base), []);
    await owner.context.close();

    // Every role reads statements; live mode has its own (empty) ones.
    for (const role of ['member', 'viewer'] as const) {
      const rec = await as(role, '/dashboard/test/statements/2026-03');
      assert.equal(await rec.page.getByRole('heading', { level: 1 }).textContent(), 'Statement — March 2026');
      const res = await get(rec.page, `${base}/dashboard/test/statements/2026-03/csv`);
      assert.equal(res.status, 200);
      assert.ok(res.body.includes('credits,value,2,65.00'));
      await rec.context.close();
    }
    const live = await as('viewer', '/dashboard/live/statements/2026-03');
    assert.match((await live.page.locator('.d-statement').textContent())!, /Credits in stablecoins \(0 payments\)/);
    await live.context.close();
  });

  test('monthly statement by email: owners opt in; mailed on the 1st over SMTP with the PDF, once, after a failed try too', async () => {
    // Others may not opt in: no button, and a direct POST is refused.
    for (const role of ['member', 'viewer'] as const) {
      const rec = await as(role, '/dashboard/test/statements');
      assert.equal(await rec.page.getByRole('button', { name: 'Email me monthly statements' }).count(), 0);
      assert.match(
        (await rec.page.locator('#statement-email').textContent())!,
        /Owners can have each month's statement emailed/,
      );
      const res = await post(rec.page, `${base}/dashboard/test/statements/email`, { _csrf: rec.token, email: 'on' });
      assert.equal(res.status, 403);
      await rec.context.close();
    }
    const owner = await as('owner', '/dashboard/test/statements');
    assert.equal(
      (await post(owner.page, `${base}/dashboard/test/statements/email`, { email: 'on' })).status,
      403,
      'no CSRF token',
    );
    assert.equal(await w.t.kasse.statementEmails.subscribed(users.owner.id, 'test'), false);
    await owner.page.getByRole('button', { name: 'Email me monthly statements' }).click();
    await owner.page.waitForURL(/done=statement_email_on/);
    assert.match((await owner.page.locator('.d-flash').textContent())!, /emailed to you on the 1st/);
    assert.match(
      (await owner.page.locator('#statement-email').textContent())!,
      /The next one, for April 2026, goes out 2026-05-01 00:15 UTC|The next one, for April 2026, goes out/,
    );
    await owner.context.close();
    const audit = await w.t.kasse.db
      .selectFrom('audit_log')
      .select(['action', 'actor_id'])
      .where('action', '=', 'statement_email.subscribe')
      .execute();
    assert.deepEqual(audit, [{ action: 'statement_email.subscribe', actor_id: users.owner.id }]);

    // Not before the month has ended (and its last postings committed).
    w.t.clock.set(new Date(Date.parse('2026-05-01T00:00:00Z') + STATEMENT_EMAIL_DELAY_MS - 1));
    assert.equal(await w.t.kasse.statementEmails.runOnce(), 0);
    w.t.clock.advance(1);
    // Two workers at once, then again: one month, one mail.
    const runs = await Promise.all([w.t.kasse.statementEmails.runOnce(), w.t.kasse.statementEmails.runOnce()]);
    assert.equal(runs[0]! + runs[1]!, 1);
    assert.equal(await w.t.kasse.statementEmails.runOnce(), 0);
    assert.deepEqual(await statementMails(), [
      { to_address: 'owner@example.com', subject: `Chai ${XSS}: statement for April 2026 (test mode)` },
    ]);

    await w.t.kasse.email.runOnce();
    const mail = await smtp.waitFor((m) => m.subject.includes('statement for April 2026'));
    assert.equal(mail.to, 'owner@example.com');
    const april = (await w.m.test.get('/statements/2026-04')).body;
    assert.match(
      mail.text,
      new RegExp(`Closing balance: ${dollars(april.closing_balance_usd_cents).replace('$', '\\$')}`),
    );
    assert.match(mail.text, /Reconciliation gap: \$0\.00/);
    assert.ok(mail.html.includes('Chai &lt;img src=x'), 'the merchant name is escaped in HTML');
    assert.equal(mail.parsed.attachments.length, 1);
    const att = mail.parsed.attachments[0]!;
    assert.equal(att.filename, 'statement-2026-04-test.pdf');
    assert.equal(att.contentType, 'application/pdf');
    const pdf = readPdf(att.content, 'emailed-statement-2026-04');
    assert.match(pdf.text, /Statement — April 2026/);
    assert.match(pdf.text, new RegExp(`Closing balance\\s+${(april.closing_balance_usd_cents / 100).toFixed(2)}`));
    // Its link opens the month on the dashboard.
    const link = linkIn(mail.text, '/dashboard/test/statements/2026-04');
    const rec = await as('owner');
    await rec.page.goto(link);
    assert.equal(await rec.page.getByRole('heading', { level: 1 }).textContent(), 'Statement — April 2026');
    await rec.context.close();

    // A failed try writes nothing and is retried; the month still goes out once.
    w.t.clock.set(new Date(Date.parse('2026-06-01T00:00:00Z') + STATEMENT_EMAIL_DELAY_MS));
    const real = w.t.kasse.statements.get.bind(w.t.kasse.statements);
    w.t.kasse.statements.get = async () => {
      throw new Error('database went away');
    };
    try {
      assert.equal(await w.t.kasse.statementEmails.runOnce(), 0);
    } finally {
      w.t.kasse.statements.get = real;
    }
    assert.equal((await statementMails()).length, 1, 'nothing written for May yet');
    const next = await w.t.kasse.statementEmails.next({ mode: 'test', merchantId: w.m.id });
    assert.equal(next!.month, '2026-05');
    assert.equal(await w.t.kasse.statementEmails.runOnce(), 0, 'not before its retry delay');
    w.t.clock.advance(5 * MINUTE);
    assert.equal(await w.t.kasse.statementEmails.runOnce(), 1);
    assert.deepEqual(
      (await statementMails()).map((m) => m.subject),
      [`Chai ${XSS}: statement for April 2026 (test mode)`, `Chai ${XSS}: statement for May 2026 (test mode)`],
    );
    await w.t.kasse.email.runOnce();
    await smtp.waitFor((m) => m.subject.includes('statement for May 2026'));

    // Opted out: June's statement goes to nobody.
    const again = await as('owner', '/dashboard/test/statements');
    await again.page.getByRole('button', { name: 'Stop emailing me statements' }).click();
    await again.page.waitForURL(/done=statement_email_off/);
    await again.context.close();
    w.t.clock.set(new Date(Date.parse('2026-07-01T00:00:00Z') + STATEMENT_EMAIL_DELAY_MS));
    assert.equal(await w.t.kasse.statementEmails.runOnce(), 1);
    assert.equal((await statementMails()).length, 2);
    assert.equal((await w.t.kasse.statementEmails.next({ mode: 'test', merchantId: w.m.id }))!.month, '2026-07');
  });

  test('coin amounts read rounded in lists, on the payment, the statement and its PDF; exact a click away and in the CSV', async () => {
    const p = (await w.m.test.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'ETH-9' })).body;
    assert.equal((await w.m.test.post(`/payments/${p.id}/attempts`, { chain: 'base', token: 'base:eth' })).status, 201);
    const paid = (await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' })).body;
    const exact: string = paid.attempts[0].received_amount_display;
    assert.match(exact, /^0\.\d{16,18}$/, 'ETH has 18 decimals');
    const read = `≈${Number(exact).toPrecision(6)}`; // 6 significant digits
    assert.ok(read.length < 12, read);
    const month = w.t.clock.now().toISOString().slice(0, 7);
    const owner = await as('owner', '/dashboard/test/payments');
    const { page } = owner;
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'ETH-9' }) });
    const coin = row.locator('td[data-label=Coin]');
    assert.equal((await coin.innerText()).trim(), `${read} ETH on Base Sepolia`);
    assert.equal(await coin.locator('summary').getAttribute('title'), `Exactly ${exact} ETH on Base Sepolia`);
    await coin.locator('summary').click();
    assert.match(
      await coin.innerText(),
      new RegExp(`exactly ${exact.replace('.', '\\.')}`),
      'a click shows it exactly',
    );

    await page.goto(`${base}/dashboard/test/payments/${p.id}`);
    for (const cell of ['Asked', 'Received'])
      assert.equal((await page.locator(`td[data-label=${cell}]`).innerText()).trim(), read, cell);
    assert.equal(await page.getByRole('button', { name: /^Refund / }).innerText(), `Refund ${read} ETH`);
    await page.goto(`${base}/dashboard/test`);
    assert.match(
      await page
        .locator('td[data-label=Held]')
        .allInnerTexts()
        .then((t) => t.join('|')),
      new RegExp(read),
    );

    await page.goto(`${base}/dashboard/test/statements/${month}`);
    const eth = page.locator('tr', { has: page.locator('td[data-label=Coin]', { hasText: /^ETH$/ }) });
    assert.equal((await eth.locator('td[data-label=Received]').innerText()).trim(), read);
    assert.ok(!(await page.locator('main').innerText()).includes(exact), 'no 18 decimals on the page');
    const csv = (await get(page, `${base}/dashboard/test/statements/${month}/csv`)).body;
    assert.ok(csv.includes(`coin,ETH on Base Sepolia,1,25.00,base:eth,${exact}\r\n`), csv);
    const pdfFile = await owner.context.request.get(`${base}/dashboard/test/statements/${month}/pdf`);
    const pdf = readPdf(await pdfFile.body(), 'dashboard-statement-eth');
    assert.ok(pdf.text.includes(`ETH on Base Sepolia — 1 payment, ${read} ETH received`), pdf.text);
    assert.ok(!pdf.text.includes(exact), 'no 18 decimals in the PDF');
    assert.match(pdf.text, /≈ Coin amounts rounded to 6 significant digits; the CSV download gives them exactly\./);
    await owner.context.close();
  });
});

describe('tax invoices on the dashboard', () => {
  const PROFILE = {
    'tax_profile.seller_name': `Chai ${XSS}`,
    'tax_profile.legal_name': 'Chai and Company Private Limited',
    'tax_profile.tax_id': SELLER_GSTIN,
    'tax_profile.address': '12 Marine Drive, Mumbai 400002',
  };

  test('the tax profile on Settings: owners save it, mistakes are shown on their field, others only read it', async () => {
    const owner = await as('owner', '/dashboard/test/settings');
    assert.match(
      (await owner.page.locator('#tax-profile').textContent())!,
      /Tax profile \(test mode\)[\s\S]*Not set yet/,
    );
    const form = owner.page.locator('#tax-profile');
    await form.getByLabel('Seller name (trade name)').fill(PROFILE['tax_profile.seller_name']);
    await form.getByLabel('Legal name, if different (optional)').fill(PROFILE['tax_profile.legal_name']);
    await form.getByLabel('GSTIN', { exact: true }).fill('27AAPFU0939F1ZA'); // wrong check character
    await form.getByLabel('Address').fill(PROFILE['tax_profile.address']);
    await form.getByLabel('State', { exact: true }).selectOption('27');
    await form.getByLabel('Invoice number prefix').fill('KS');
    assert.equal(await form.getByLabel('SAC (services accounting code)').inputValue(), '997158');
    assert.equal(await form.getByLabel('GST rate').inputValue(), '1800');
    assert.equal(await form.getByLabel('Prices').inputValue(), 'true');
    const [res] = await Promise.all([
      owner.page.waitForResponse((r) => /\/settings\?form=/.test(r.url())),
      form.getByRole('button', { name: 'Save tax profile' }).click(),
    ]);
    assert.equal(res.status(), 400);
    const told = (await owner.page.locator('.d-error').textContent())!;
    assert.match(
      told,
      /The last character of the GSTIN is its check character, and A does not match the first 14 characters\. Look for a typing mistake\.[\s\S]*invalid_request on tax_profile\.tax_id/,
    );
    assert.doesNotMatch(told, /15 characters/, 'a GSTIN of the right length is not told its length');
    assert.equal(await owner.page.locator('[name="tax_profile.tax_id"]').getAttribute('aria-invalid'), 'true');
    assert.equal(
      await owner.page.locator('[name="tax_profile.address"]').inputValue(),
      PROFILE['tax_profile.address'],
      'what was typed stays',
    );
    assert.equal((await w.m.test.get('/account')).body.tax_profile, null, 'nothing saved');
    // The API says the same in its message; a GSTIN of the wrong length is told its shape.
    const api = await w.m.test.patch('/account', {
      tax_profile: {
        ...Object.fromEntries(
          Object.entries(PROFILE)
            .filter(([k]) => k.startsWith('tax_profile.'))
            .map(([k, v]) => [k.slice(12), v]),
        ),
        tax_id: '27AAPFU0939F1ZA',
        state_code: '27',
      },
    });
    assert.equal(api.status, 400);
    assert.deepEqual([api.body.error.code, api.body.error.param], ['invalid_request', 'tax_profile.tax_id']);
    assert.match(
      api.body.error.message,
      /^tax_profile\.tax_id has a wrong check character: its last character, A, does not match the first 14/,
    );
    assert.doesNotMatch(api.body.error.message, /15 characters/);
    await form.getByLabel('GSTIN', { exact: true }).fill('27AAPFU0939F1');
    await Promise.all([
      owner.page.waitForResponse((r) => r.url().endsWith('/settings/tax_profile')),
      form.getByRole('button', { name: 'Save tax profile' }).click(),
    ]);
    await owner.page.waitForLoadState('domcontentloaded');
    assert.match((await owner.page.locator('.d-error').textContent())!, /Enter the GSTIN as registered: 15 characters/);
    await screenshot(owner.page, 'dashboard-tax-profile-error-desktop');
    // A state that differs from the GSTIN's.
    await form.getByLabel('GSTIN', { exact: true }).fill(SELLER_GSTIN);
    await form.getByLabel('State', { exact: true }).selectOption('29');
    const [mismatch] = await Promise.all([
      owner.page.waitForResponse((r) => /\/settings\?form=/.test(r.url())),
      form.getByRole('button', { name: 'Save tax profile' }).click(),
    ]);
    assert.equal(mismatch.status(), 400);
    await owner.page.waitForLoadState('domcontentloaded');
    assert.match((await owner.page.locator('.d-error').textContent())!, /on tax_profile\.state_code/);
    await form.getByLabel('State', { exact: true }).selectOption('27');
    await form.getByRole('button', { name: 'Save tax profile' }).click();
    await owner.page.waitForURL(/done=tax_profile/);
    assert.equal(await owner.page.locator('.d-flash').textContent(), 'The tax profile was saved.');
    assert.deepEqual((await w.m.test.get('/account')).body.tax_profile, {
      seller_name: `Chai ${XSS}`,
      legal_name: 'Chai and Company Private Limited',
      tax_id: SELLER_GSTIN,
      address: '12 Marine Drive, Mumbai 400002',
      state_code: '27',
      invoice_prefix: 'KS',
      sac: '997158',
      tax_rate_bps: 1800,
      tax_inclusive: true,
    });
    assert.equal((await w.m.live.get('/account')).body.tax_profile, null, 'live mode has its own');
    const audit = await w.t.kasse.db
      .selectFrom('audit_log')
      .select(['actor_id', 'mode', 'details'])
      .where('action', '=', 'settings.tax_profile')
      .execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.actor_id, users.owner.id);
    assert.deepEqual((audit[0]!.details as Record<string, { to: unknown }>).tax_id?.to, SELLER_GSTIN);
    // Without the session's CSRF token nothing changes.
    const forged = await post(owner.page, `${base}/dashboard/test/settings/tax_profile`, {
      ...PROFILE,
      'tax_profile.invoice_prefix': 'ZZ',
    });
    assert.equal(forged.status, 403);
    await owner.context.close();

    for (const role of ['member', 'viewer'] as const) {
      const rec = await as(role, '/dashboard/test/settings');
      assert.equal(await rec.page.locator('#tax-profile fieldset').getAttribute('disabled'), '');
      assert.equal(await rec.page.locator('[name="tax_profile.tax_id"]').inputValue(), SELLER_GSTIN);
      assert.equal(await rec.page.getByRole('button', { name: 'Save tax profile' }).count(), 0);
      const res = await post(rec.page, `${base}/dashboard/test/settings/tax_profile`, {
        _csrf: rec.token,
        ...PROFILE,
        'tax_profile.invoice_prefix': 'ZZ',
      });
      assert.equal(res.status, 403);
      await rec.context.close();
    }
    assert.equal((await w.m.test.get('/account')).body.tax_profile.invoice_prefix, 'KS');
  });

  test("a paid payment's tax invoice: issued from its page by staff, figures and PDF; refused twice; viewers read it", async () => {
    const id = await paid(1000, 'INV-1');
    const waiting = (await w.m.test.post('/payments', { price_amount: 500, price_currency: 'USD', order_id: 'INV-W' }))
      .body.id;
    const member = await as('member', `/dashboard/test/payments/${id}`);
    const section = member.page.locator('#tax-invoice');
    assert.match((await section.textContent())!, /as Chai <img src=x onerror="alert\(1\)"> \(GSTIN 27AAPFU0939F1ZV\)/);
    // Inter-state with no place of supply: refused on the field, nothing issued.
    await section.getByLabel('Supply', { exact: true }).selectOption('inter');
    await section.getByLabel('Rupees per US dollar (optional)').fill('83.25');
    const [refusedInter] = await Promise.all([
      member.page.waitForResponse((r) => /\/payments\/pay_[0-9A-Z]+\?form=/.test(r.url())),
      section.getByRole('button', { name: 'Issue tax invoice' }).click(),
    ]);
    assert.equal(refusedInter.status(), 400);
    await member.page.waitForLoadState('domcontentloaded');
    assert.match(
      (await member.page.locator('.d-error').textContent())!,
      /Choose the customer’s state[\s\S]*on customer_state_code/,
    );
    assert.equal(await member.page.locator('[name="fx_rate"]').inputValue(), '83.25');
    assert.equal((await w.m.test.get('/tax_invoices')).body.data.length, 0);
    // Intra-state at 83.25: the figures of the worked example.
    await member.page.locator('#tax-invoice').getByLabel('Supply', { exact: true }).selectOption('intra');
    await member.page.locator('#tax-invoice').getByLabel('Customer name (optional)').fill(`Ravi ${XSS}`);
    await member.page.locator('#tax-invoice').getByRole('button', { name: 'Issue tax invoice' }).click();
    await member.page.waitForURL(/done=invoiced/);
    const facts = (await member.page.locator('#tax-invoice').textContent())!;
    assert.match(facts, /Tax invoice KS\/26-27\/000001/);
    assert.ok(facts.includes(`Ravi ${XSS}`));
    assert.match(facts, /Taxable value₹705\.51CGST₹63\.49SGST₹63\.50Total₹832\.50/);
    assert.match(facts, /₹83\.25 per US dollar \(entered/);
    await screenshot(member.page, 'dashboard-tax-invoice-desktop');
    const api = (await w.m.test.get(`/tax_invoices?payment_id=${id}`)).body.data[0];
    assert.deepEqual(
      [api.number, api.total, api.taxable, api.cgst, api.sgst, api.igst, api.fx.source],
      ['KS/26-27/000001', '832.50', '705.51', '63.49', '63.50', '0.00', 'manual'],
    );
    const pdf = await download(member, 'Download PDF');
    assert.equal(pdf.filename, 'KS-26-27-000001.pdf');
    const read = readPdf(pdf.bytes, 'dashboard-tax-invoice');
    assert.match(read.text, /KS\/26-27\/000001/);
    assert.match(read.text, /27AAPFU0939F1ZV/);
    assert.match(read.text, /832\.50/);
    // A second invoice for the payment is refused with the API's code; a waiting payment offers none.
    const twice = await post(member.page, `${base}/dashboard/test/payments/${id}/tax_invoice`, {
      _csrf: member.token,
      place_of_supply: 'intra',
      fx_rate: '83.25',
    });
    assert.equal(twice.status, 409);
    assert.match(twice.body, /already has a tax invoice[\s\S]*already_invoiced/);
    await member.page.goto(`${base}/dashboard/test/payments/${waiting}`);
    assert.equal(await member.page.locator('#tax-invoice').count(), 0);
    const early = await post(member.page, `${base}/dashboard/test/payments/${waiting}/tax_invoice`, {
      _csrf: member.token,
      place_of_supply: 'intra',
      fx_rate: '83.25',
    });
    assert.equal(early.status, 422);
    assert.deepEqual(member.dialogs, []);
    await member.context.close();

    // The reference rate of the day of payment, to a Karnataka business: IGST.
    fx.setRate('2026-07-01', '86.10');
    const other = await paid(2000, 'INV-2');
    const owner = await as('owner', `/dashboard/test/payments/${other}`);
    await owner.page.locator('#tax-invoice').getByLabel('Customer GSTIN (optional)').fill(BUYER_GSTIN);
    await owner.page.locator('#tax-invoice').getByLabel('Supply', { exact: true }).selectOption('inter');
    await owner.page.locator('#tax-invoice').getByRole('button', { name: 'Issue tax invoice' }).click();
    await owner.page.waitForURL(/done=invoiced/);
    const inter = (await owner.page.locator('#tax-invoice').textContent())!;
    assert.match(inter, /KS\/26-27\/000002/);
    assert.match(inter, /29 — Karnataka \(inter-state\)/);
    assert.match(inter, /IGST₹262\.68/);
    assert.match(inter, /Total₹1,722\.00/);
    assert.match(inter, /reference rate/);

    // A customer GSTIN with a wrong check character is told so.
    const fourth = await paid(400, 'INV-4');
    await owner.page.goto(`${base}/dashboard/test/payments/${fourth}`);
    const wrong = BUYER_GSTIN.slice(0, 14) + (BUYER_GSTIN[14] === 'A' ? 'B' : 'A');
    await owner.page.locator('#tax-invoice').getByLabel('Customer GSTIN (optional)').fill(wrong);
    await owner.page.locator('#tax-invoice').getByLabel('Supply', { exact: true }).selectOption('inter');
    await owner.page.locator('#tax-invoice').getByRole('button', { name: 'Issue tax invoice' }).click();
    await owner.page.locator('.d-error').waitFor();
    assert.match(
      (await owner.page.locator('.d-error').textContent())!,
      new RegExp(
        `The last character of the customer’s GSTIN is its check character, and ${wrong[14]} does not match[\\s\\S]*on customer_tax_id`,
      ),
    );
    await owner.context.close();

    // The Tax invoices page: the month's invoices, each with its PDF; another month has none.
    const list = await as('viewer', '/dashboard/test');
    await list.page.getByRole('link', { name: 'Tax invoices' }).click();
    assert.equal(await list.page.getByRole('heading', { level: 1 }).textContent(), 'Tax invoices');
    const month = await list.page.getByLabel('Month').inputValue();
    assert.match(month, /^2026-\d\d$/);
    assert.deepEqual(await list.page.locator('tbody td[data-label=Number]').allTextContents(), [
      'KS/26-27/000002',
      'KS/26-27/000001',
    ]);
    assert.match((await list.page.locator('tbody tr').first().textContent())!, /\$20\.00[\s\S]*₹1,722\.00/);
    const first = await (async () => {
      const [dl] = await Promise.all([
        list.page.waitForEvent('download'),
        list.page.locator('tbody tr').nth(1).getByRole('link', { name: 'Download PDF' }).click(),
      ]);
      return { bytes: readFileSync((await dl.path())!), filename: dl.suggestedFilename() };
    })();
    assert.equal(first.filename, 'KS-26-27-000001.pdf');
    assert.match(readPdf(first.bytes, 'dashboard-tax-invoice-list').text, /KS\/26-27\/000001/);
    await screenshot(list.page, 'dashboard-tax-invoices-desktop');
    await list.page.getByLabel('Month').fill('2026-03');
    await list.page.getByRole('button', { name: 'Show' }).click();
    await list.page.waitForURL(/month=2026-03/);
    assert.equal(await list.page.locator('tbody tr').count(), 0);
    assert.match((await list.page.locator('main').textContent())!, /No tax invoices issued in 2026-03/);
    const bad = await list.page.goto(`${base}/dashboard/test/tax_invoices?month=2026-13`);
    assert.equal(bad!.status(), 400);
    assert.match((await list.page.locator('.d-error').textContent())!, /Choose a month, like 2026-04\.[\s\S]*on month/);
    assert.equal(
      (await get(list.page, `${base}/dashboard/live/tax_invoices?month=${month}`)).body.includes('KS/26-27'),
      false,
      'live mode has its own',
    );
    await list.context.close();

    // Viewers see the invoice and download it, but cannot issue one.
    const third = await paid(300, 'INV-3');
    const viewer = await as('viewer', `/dashboard/test/payments/${id}`);
    assert.match((await viewer.page.locator('#tax-invoice').textContent())!, /KS\/26-27\/000001/);
    const res = await viewer.page.context().request.get(`${base}/dashboard/test/tax_invoices/${api.id}/pdf`);
    assert.equal(res.status(), 200);
    assert.equal(res.headers()['content-type'], 'application/pdf');
    await viewer.page.goto(`${base}/dashboard/test/payments/${third}`);
    assert.equal(await viewer.page.getByRole('button', { name: 'Issue tax invoice' }).count(), 0);
    const refused = await post(viewer.page, `${base}/dashboard/test/payments/${third}/tax_invoice`, {
      _csrf: viewer.token,
      place_of_supply: 'intra',
      fx_rate: '83.25',
    });
    assert.equal(refused.status, 403);
    assert.equal((await w.m.test.get(`/tax_invoices?payment_id=${third}`)).body.data.length, 0);
    // Another mode's or an unknown invoice is not found.
    assert.equal((await get(viewer.page, `${base}/dashboard/live/tax_invoices/${api.id}/pdf`)).status, 404);
    await viewer.context.close();
  });
});
