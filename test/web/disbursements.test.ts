/**
 * Disbursements on the dashboard in real Chromium: an owner creates a batch from CSV text with every bad row shown
 * before anything is created; a member and a viewer see the batch but are refused approval and release (by direct
 * POST too); two owners approve it, each after a TOTP check, each once, having seen its fingerprint; an owner
 * releases it and the simulated payouts are sent; a batch changed in the database after approval is refused at
 * release and audited; a batch larger than the available balance shows its shortfall when it is checked, created and
 * while it waits (before any code is spent), and its release is still refused with insufficient_balance. Coins are
 * named as people read them, the CSV check shows dollars and the total, a file that is not CSV is explained by line,
 * a completed batch says when and how its payouts ended, and payout cards carry their labels at phone width.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { fingerprint } from '../../src/modules/disbursements/approval.ts';
import { screenshot, type TestBrowser, type WebKasse } from '../harness/browser.ts';
import {
  csrfOf,
  get,
  post,
  totpCode,
  type DashboardUser,
  startDashboard,
  TEAM,
  type DashboardTeam,
} from '../harness/dashboard.ts';

let w: WebKasse;
let b: TestBrowser;
let base: string;
let users: Record<keyof typeof TEAM, DashboardUser>;
let as: DashboardTeam<keyof typeof TEAM>['as'];

before(async () => {
  ({ w, b, base, users, as } = await startDashboard(TEAM));
  // $300 of credited payments to pay out from.
  for (let i = 0; i < 3; i++) {
    const p = (
      await w.m.test.post('/payments', {
        price_amount: 10_000,
        price_currency: 'USD',
        order_id: `F-${i}`,
        token: 'base:usdc',
      })
    ).body;
    await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
  }
});
after(async () => {
  await b?.close();
  await w?.close();
});

const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;

async function createByCsv(page: Page, title: string, csv: string): Promise<string> {
  await page.goto(`${base}/dashboard/test/disbursements`);
  await page.getByLabel('Title').fill(title);
  await page.locator('textarea[name=csv]').fill(csv);
  await page.getByRole('button', { name: 'Check rows' }).click();
  await page.getByRole('button', { name: /Create disbursement of/ }).click();
  await page.waitForURL(/\/disbursements\/dsb_/);
  return /\/(dsb_[0-9A-Z]{26})/.exec(page.url())![1]!;
}

async function approveIn(page: Page, id: string, user: DashboardUser) {
  await page.goto(`${base}/dashboard/test/disbursements/${id}`);
  await page.locator('[data-approve]').getByLabel('Your current 6-digit code').fill(totpCode(user.secret!, w.t.clock));
  await page.getByRole('button', { name: 'Approve' }).click();
  await page.waitForLoadState('domcontentloaded');
}

describe('disbursements on the dashboard', () => {
  let id: string;

  test('an owner creates a batch from CSV; every bad row is shown before anything is created', async () => {
    const ana = await as('ana');
    const { page } = ana;
    await page.goto(`${base}/dashboard/test`);
    await page.getByRole('link', { name: 'Disbursements' }).click();
    await page.getByLabel('Title').fill('March <affiliates>');
    await page
      .locator('textarea[name=csv]')
      .fill(
        `destination,usd_cents,label\n${addr(1)},2500,"Ann, the designer"\n0x123,2500,Bob\n${addr(3)},99,\n${addr(4)},1000,Dee\n`,
      );
    await page.getByRole('button', { name: 'Check rows' }).click();
    await page.locator('[data-csv-check]').waitFor();
    assert.match(await page.locator('[data-csv-check]').innerText(), /4 rows, 2 with problems/);
    assert.match(await page.locator('main').innerText(), /paid in USDC on Base Sepolia/, 'the payout coin by name');
    assert.doesNotMatch(await page.locator('main').innerText(), /base:usdc/);
    const bad = await page.locator('tr.d-badrow').allInnerTexts();
    assert.equal(bad.length, 2);
    assert.match(bad[0]!, /^3\s[\s\S]*destination must be 0x and 40 hex digits/);
    assert.match(bad[1]!, /^4\s[\s\S]*usd_cents must be a whole number of cents from 100 to 500000/);
    assert.equal(
      await page.getByRole('button', { name: /Create disbursement/ }).count(),
      0,
      'no Create button while rows are bad',
    );
    await screenshot(page, 'dashboard-disbursement-csv-errors-desktop');
    assert.equal((await w.m.test.get('/disbursements')).body.data.length, 0, 'nothing was created');

    await page
      .locator('textarea[name=csv]')
      .fill(`${addr(1)},2500,"Ann, the designer"\n${addr(2)},2500,Bob\n${addr(4)},1000,Dee\n`);
    await page.getByRole('button', { name: 'Check rows' }).click();
    assert.match(
      await page.locator('[data-csv-check]').innerText(),
      /3 rows, 0 with problems\. Total \$60\.00 in USDC on Base Sepolia/,
    );
    assert.deepEqual(
      await page.locator('[data-csv-check] tbody td[data-label=Amount]').allInnerTexts(),
      ['$25.00', '$25.00', '$10.00'],
      'amounts in dollars',
    );
    assert.equal(await page.locator('[data-shortfall]').count(), 0, 'the $300 balance covers $60');
    await page.getByRole('button', { name: 'Create disbursement of 3 payouts' }).click();
    await page.waitForURL(/\/disbursements\/dsb_/);
    id = /\/(dsb_[0-9A-Z]{26})/.exec(page.url())![1]!;
    await page.getByText('The disbursement was created').waitFor();
    const d = (await w.m.test.get(`/disbursements/${id}`)).body;
    assert.equal(d.title, 'March <affiliates>');
    assert.equal(d.created_by, users.ana.id);
    assert.equal(d.total_usd_cents, 6000);
    assert.deepEqual(
      d.items.map((i: any) => i.label),
      ['Ann, the designer', 'Bob', 'Dee'],
    );
    assert.equal(d.approvals_required, 2);
    assert.equal(await page.locator('h1').innerText(), 'March <affiliates>', 'the title is shown as text');
    const digest = await w.t.kasse.disbursements.digest({ mode: 'test', merchantId: w.m.id }, id);
    assert.equal(await page.locator('[data-fingerprint]').innerText(), fingerprint(digest));
    assert.equal(await page.locator('table.d-table tbody tr').count(), 3, 'every item is listed');
    assert.match(await page.locator('.d-facts').innerText(), /\$60\.00 in USDC on Base Sepolia/);
    // The owners' mail names the coin as the page does (kept on the Mail page: this app has no SMTP server).
    await page.goto(`${base}/dashboard/test/mail`);
    await page.getByRole('link', { name: 'Approve disbursement: March <affiliates>' }).first().click();
    const mail = await page.locator('.d-mailtext').innerText();
    assert.match(mail, /pays 3 addresses \$60\.00 in USDC on Base Sepolia\./);
    assert.doesNotMatch(mail, /on base\b/);
    await ana.context.close();
  });

  test('a file that is not readable CSV is explained by its line, in words', async () => {
    const { page, context } = await as('ana');
    await page.goto(`${base}/dashboard/test/disbursements`);
    await page.getByLabel('Title').fill('Broken');
    for (const [csv, expected] of [
      [
        `${addr(1)},2500,Ann\n${addr(2)},2500,"Bob\n${addr(3)},100,Cy\n`,
        /^Line 2: a quote \("\) opens a field that is never closed/,
      ],
      [
        `${addr(1)},2500,Ann\n\n${addr(2)},25"00,Bob\n`,
        /^Line 3: a quote \("\) is inside a field that does not start with one/,
      ],
      [`${addr(1)},2500,"Ann" the designer\n`, /^Line 1: text follows the closing quote of a field/],
    ] as const) {
      await page.locator('textarea[name=csv]').fill(csv);
      await page.getByRole('button', { name: 'Check rows' }).click();
      await page.locator('[data-csv-check]').waitFor();
      const told = await page.locator('[data-csv-check] p.d-error').innerText();
      assert.match(told, expected);
      assert.doesNotMatch(told, /Invalid|CSV_|quote is found on field/, 'no parser jargon');
      assert.equal(await page.getByRole('button', { name: /Create disbursement/ }).count(), 0);
    }
    // A row after blank lines is named by its line in the file.
    await page
      .locator('textarea[name=csv]')
      .fill(`destination,usd_cents,label\n\n${addr(1)},2500,Ann\n\n${addr(2)},50,Bob\n`);
    await page.getByRole('button', { name: 'Check rows' }).click();
    assert.match(await page.locator('tr.d-badrow').innerText(), /^5\s/);
    assert.equal((await w.m.test.get('/disbursements')).body.data.length, 1, 'nothing more was created');
    await context.close();
  });

  test('members and viewers see the batch but cannot approve, release or cancel it', async () => {
    for (const name of ['member', 'viewer'] as const) {
      const rec = await as(name);
      await rec.page.goto(`${base}/dashboard/test/disbursements/${id}`);
      assert.equal(await rec.page.locator('h1').innerText(), 'March <affiliates>');
      assert.equal(await rec.page.getByRole('button', { name: 'Approve' }).count(), 0);
      assert.equal(await rec.page.getByRole('button', { name: 'Cancel batch' }).count(), 0);
      const token = await csrfOf(rec.page);
      const digest = await w.t.kasse.disbursements.digest({ mode: 'test', merchantId: w.m.id }, id);
      for (const [path, form] of [
        ['approve', { digest, code: '123456' }],
        ['release', { release_code: '123456' }],
        ['cancel', {}],
      ] as const) {
        const res = await post(rec.page, `${base}/dashboard/test/disbursements/${id}/${path}`, {
          _csrf: token,
          ...form,
        });
        assert.equal(res.status, 403, `${name} may not ${path}`);
      }
      assert.equal((await get(rec.page, `${base}/dashboard/test/disbursements`)).status, 200);
      await rec.context.close();
    }
    const d = (await w.m.test.get(`/disbursements/${id}`)).body;
    assert.deepEqual([d.status, d.approvals.length], ['pending_approval', 0]);
  });

  test('two owners approve after a TOTP check, each once; an owner releases; the payouts are sent', async () => {
    const ana = await as('ana');
    await ana.page.goto(`${base}/dashboard/test/disbursements/${id}`);
    await ana.page.locator('[data-approve]').getByLabel('Your current 6-digit code').fill('000000');
    await ana.page.getByRole('button', { name: 'Approve' }).click();
    await ana.page.locator('.d-error').waitFor();
    assert.equal(
      (await w.m.test.get(`/disbursements/${id}`)).body.approvals.length,
      0,
      'a wrong code approves nothing',
    );
    await approveIn(ana.page, id, users.ana);
    await ana.page.getByText('Your approval was recorded').waitFor();
    assert.match(await ana.page.locator('main').innerText(), /You approved this batch. It needs 1 more owner approval/);
    assert.equal(await ana.page.getByRole('button', { name: 'Approve' }).count(), 0);
    // A second approval by the same owner, posted directly, is refused.
    const again = await post(ana.page, `${base}/dashboard/test/disbursements/${id}/approve`, {
      _csrf: await csrfOf(ana.page),
      digest: await w.t.kasse.disbursements.digest({ mode: 'test', merchantId: w.m.id }, id),
      code: totpCode(users.ana.secret!, w.t.clock),
    });
    assert.equal(again.status, 422);
    assert.match(again.body, /already approved/);
    await ana.context.close();

    const bo = await as('bo');
    await approveIn(bo.page, id, users.bo);
    await bo.page.getByRole('button', { name: 'Release' }).waitFor();
    const approved = (await w.m.test.get(`/disbursements/${id}`)).body;
    assert.equal(approved.status, 'approved');
    assert.deepEqual(
      approved.approvals.map((a: any) => a.user_id),
      [users.ana.id, users.bo.id],
    );
    assert.match(approved.approval_mac, /^[0-9a-f]{64}$/);
    const before = (await w.m.test.get('/balance')).body.available_usd_cents;
    await bo.page
      .locator('[data-release]')
      .getByLabel('Your current 6-digit code')
      .fill(totpCode(users.bo.secret!, w.t.clock));
    await bo.page.getByRole('button', { name: 'Release' }).click();
    await bo.page.getByText('The disbursement was released').waitFor();
    assert.equal((await w.m.test.get('/balance')).body.available_usd_cents, before - 6000);
    assert.equal(await bo.page.locator('[data-completed]').count(), 0, 'not completed before the payouts are sent');
    assert.equal(await bo.page.locator('[data-progress]').innerText(), '0 sent · 0 failed · 3 open');
    assert.equal((await w.t.kasse.disbursements.runDue()).simulated, 3);
    const [completed] = (
      await w.t.kasse.webhooks.list({ mode: 'test', merchantId: w.m.id }, { type: 'disbursement.completed' })
    ).data;
    assert.ok(completed, 'disbursement.completed was published');
    await bo.page.reload();
    assert.equal(await bo.page.locator('[data-progress]').innerText(), 'completed: 3 sent · 0 failed');
    assert.equal(
      await bo.page.locator('[data-completed] time').getAttribute('datetime'),
      new Date(completed.created_at).toISOString(),
      'when it completed',
    );
    assert.match(await bo.page.locator('.d-facts').innerText(), /Status\s+released\s+completed/);
    await screenshot(bo.page, 'dashboard-disbursement-released-desktop');
    await bo.page.goto(`${base}/dashboard/test/disbursements`);
    assert.match(await bo.page.locator('table.d-table').innerText(), /completed: 3 sent · 0 failed/);
    // The month's statement counts one release of three payouts.
    await bo.page.goto(`${base}/dashboard/test/statements/${w.t.clock.now().toISOString().slice(0, 7)}`);
    assert.match(await bo.page.locator('.d-statement').innerText(), /Payouts \(3 payouts released\)/);
    const audit = (await w.t.kasse.audit.list(w.m.id, { action: 'disbursement.release' })).data.filter(
      (a) => a.action === 'disbursement.release',
    );
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.actor.id, users.bo.id);
    await bo.context.close();
  });

  test('a batch changed after approval is refused at release and the attempt is audited', async () => {
    const ana = await as('ana');
    const tampered = await createByCsv(ana.page, 'To be changed', `${addr(10)},1000,\n${addr(11)},1000,\n`);
    await approveIn(ana.page, tampered, users.ana);
    await ana.context.close();
    const bo = await as('bo');
    await approveIn(bo.page, tampered, users.bo);
    await w.t.kasse.db
      .updateTable('disbursement_items')
      .set({ destination: addr(0x666) })
      .where('disbursement_id', '=', tampered)
      .where('item_no', '=', 1)
      .execute();
    await bo.page.goto(`${base}/dashboard/test/disbursements/${tampered}`);
    await bo.page
      .locator('[data-release]')
      .getByLabel('Your current 6-digit code')
      .fill(totpCode(users.bo.secret!, w.t.clock));
    await bo.page.getByRole('button', { name: 'Release' }).click();
    await bo.page.locator('.d-error').waitFor();
    assert.match(await bo.page.locator('.d-error').innerText(), /changed after it was approved/);
    assert.equal((await w.m.test.get(`/disbursements/${tampered}`)).body.status, 'approved');
    const audit = (await w.t.kasse.audit.list(w.m.id, { action: 'disbursement.release_refused' })).data;
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.actor.id, users.bo.id);
    await bo.context.close();
  });

  test('payout cards carry their labels at phone width', async () => {
    const { page, context } = await as('viewer', 'phone');
    await page.goto(`${base}/dashboard/test/disbursements/${id}`);
    const card = page.locator('section.d-panel:has(h2:text("Payouts")) tbody tr').first();
    for (const [label, cell] of [
      ['#', '1'],
      ['Destination', addr(1)],
      ['Label', 'Ann, the designer'],
      ['USD', '$25.00'],
      ['USDC', '25'],
      ['Payout', 'sent'],
    ]) {
      const td = card.locator(`td[data-label="${label}"]`);
      assert.equal(
        await td.evaluate((el) => getComputedStyle(el, '::before').content),
        `"${label}"`,
        `the ${label} cell is labelled`,
      );
      assert.match(await td.innerText(), new RegExp(cell.replace(/[$.]/g, '\\$&')));
    }
    await screenshot(page, 'dashboard-disbursement-payouts-phone');
    await context.close();
  });

  test('a batch above the available balance shows its shortfall before any code is spent; release is still refused', async () => {
    const ana = await as('ana');
    const available = (await w.m.test.get('/balance')).body.available_usd_cents;
    const short = `$${((500_000 - available) / 100).toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;
    await ana.page.goto(`${base}/dashboard/test/disbursements`);
    await ana.page.getByLabel('Title').fill('Too big');
    await ana.page.locator('textarea[name=csv]').fill(`${addr(20)},500000,\n`);
    await ana.page.getByRole('button', { name: 'Check rows' }).click();
    assert.match(
      await ana.page.locator('[data-shortfall]').innerText(),
      new RegExp(`needs \\$5,000\\.00 but the available balance is [\\s\\S]*${short.replace(/[$.]/g, '\\$&')} short`),
    );
    await ana.page.getByRole('button', { name: 'Create disbursement of 1 payout' }).click();
    await ana.page.waitForURL(/\/disbursements\/dsb_/);
    const big = /\/(dsb_[0-9A-Z]{26})/.exec(ana.page.url())![1]!;
    assert.match(
      await ana.page.locator('[data-shortfall]').innerText(),
      /short[\s\S]*It can still be approved, but releasing it will be refused/,
      'on its page, above the approval form',
    );
    await approveIn(ana.page, big, users.ana);
    await ana.context.close();
    const bo = await as('bo');
    await bo.page.goto(`${base}/dashboard/test/disbursements/${big}`);
    assert.match(
      await bo.page.locator('[data-shortfall]').innerText(),
      new RegExp(`${short.replace(/[$.]/g, '\\$&')} short`),
      'the second owner sees it before approving',
    );
    await approveIn(bo.page, big, users.bo);
    assert.match(
      await bo.page.locator('[data-shortfall]').innerText(),
      /Releasing it will be refused/,
      'and before releasing',
    );
    const before = (await w.m.test.get('/balance')).body.available_usd_cents;
    await bo.page
      .locator('[data-release]')
      .getByLabel('Your current 6-digit code')
      .fill(totpCode(users.bo.secret!, w.t.clock));
    await bo.page.getByRole('button', { name: 'Release' }).click();
    await bo.page.locator('.d-error').waitFor();
    const error = await bo.page.locator('.d-error').innerText();
    assert.match(error, /insufficient_balance/);
    assert.match(error, /needs \$5,000\.00 but the available balance is/);
    assert.equal((await w.m.test.get(`/disbursements/${big}`)).body.status, 'approved');
    assert.equal((await w.m.test.get('/balance')).body.available_usd_cents, before);
    await bo.context.close();
  });
});
