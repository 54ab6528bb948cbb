/**
 * What payers read, checked in real Chromium the way a newcomer found the faults: the network to send on stands out,
 * the picker's amounts share one format, no state says the same thing twice, a paid page is a receipt, coins without
 * a price are named rather than dropped, a shop whose live mode cannot take payments says so plainly, and link pages
 * and the POS terminal speak to payers in their words.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { DepositObservation } from '../../src/chains/ports.ts';
import { liveNetworksFile, startTestKasse, type TestKasse } from '../harness/app.ts';
import { launchBrowser, screenshot, startWebKasse, type TestBrowser, type WebKasse } from '../harness/browser.ts';
import { createUser, setUpAccount } from '../harness/dashboard.ts';

let w: WebKasse;
let b: TestBrowser;
let txSeq = 0;

before(async () => {
  w = await startWebKasse();
  b = await launchBrowser();
});
after(async () => {
  await b?.close();
  await w?.close();
});

async function createPayment(extra: Record<string, unknown> = {}) {
  const res = await w.m.test.post('/payments', {
    price_amount: 1234,
    price_currency: 'USD',
    order_id: 'order-7',
    description: 'Two flat whites',
    ...extra,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** A transfer to an attempt's address, as a chain watcher reports it. */
function transfer(
  a: { chain: string; address: string; token: string },
  amount: bigint,
  block: bigint,
): DepositObservation {
  return {
    chain: a.chain,
    address: a.address,
    token: a.token,
    txHash: `0x${(++txSeq).toString(16).padStart(64, 'a')}`,
    index: 0,
    amount,
    from: '0x1111111111111111111111111111111111111111',
    blockNumber: block,
    blockHash: `0x${block.toString(16).padStart(64, 'b')}`,
  };
}

let staffSeq = 0;

/** Signs the page's browser in as a member of the shop's staff: POS terminals are for signed-in users. */
async function signInStaff(page: Page): Promise<void> {
  const email = `till${++staffSeq}@example.com`;
  const staff = await createUser(w.t.kasse, w.m.id, email, 'member');
  await setUpAccount(page, staff.setupUrl, w.t.clock, { email });
}

/**
 * Sentences a payer sees more than once on the page (buttons, legends, hidden and screen-reader-only text aside).
 * Compared without case and closing punctuation, so "Paid. Thank you!" and a heading "Paid" with "Thank you!" count.
 * Bare figures (the price in the header and on the receipt) are not sentences.
 */
async function repeated(page: Page): Promise<string[]> {
  const text = await page.evaluate(() => {
    for (const el of Array.from(document.querySelectorAll<HTMLElement>('button, legend, [hidden], .k-sr, noscript')))
      el.style.display = 'none';
    return document.body.innerText;
  });
  const seen = new Map<string, number>();
  for (const s of text.split(/\n+|(?<=[.!?])\s+/)) {
    const key = s
      .trim()
      .replace(/[.!?:]+$/, '')
      .toLowerCase();
    if (key.length >= 4 && /[a-z]/.test(key)) seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([s]) => s);
}

describe('the hosted checkout', () => {
  test('the network to send on stands out above the amount, in bold and large', async () => {
    const p = await createPayment({ token: 'polygon:usdt' });
    const { page } = await b.open('phone');
    await page.goto(p.checkout_url);
    const network = page.locator('#k-network');
    assert.equal(await network.textContent(), 'Polygon Amoy');
    assert.ok(await network.isVisible());
    const style = await network.evaluate((el) => {
      const cs = getComputedStyle(el);
      return {
        weight: Number(cs.fontWeight),
        size: parseFloat(cs.fontSize),
        body: parseFloat(getComputedStyle(document.body).fontSize),
      };
    });
    assert.ok(style.weight >= 700, `font-weight ${style.weight}`);
    assert.ok(style.size >= style.body * 1.2, `font-size ${style.size}px against ${style.body}px`);
    // Read before the amount and the address: the payer picks the network in the wallet first.
    const order = await page.evaluate(() =>
      ['#k-network', '#k-amount', '#k-address'].map((s) => document.querySelector(s)!.getBoundingClientRect().top),
    );
    assert.ok(order[0]! < order[1]! && order[1]! < order[2]!, JSON.stringify(order));
    assert.match(
      (await page.locator('.k-network').textContent())!,
      /Send USDT on Polygon Amoy only\. Money sent on another network or in another coin can be lost\./,
    );
    await screenshot(page, 'payer-network-phone');
    await page.context().close();
  });

  test('every coin in the picker shows its amount the same way: symbol, two decimals or more, four significant digits', async () => {
    const p = await createPayment({ price_amount: 1230 });
    const { page } = await b.open('phone');
    await page.goto(p.checkout_url);
    const rows = await page
      .locator('button.k-coin')
      .evaluateAll((els) =>
        els.map((e) => [e.querySelector('b')!.textContent, e.querySelector('.k-est')!.textContent]),
      );
    assert.ok(rows.length >= 10);
    for (const [symbol, est] of rows) {
      const m = /^≈ (\d+)\.(\d+) ([A-Z]+)$/.exec(est!);
      assert.ok(m, `${symbol}: "${est}"`);
      assert.equal(m[3], symbol);
      assert.ok(m[2]!.length >= 2, `${est}: at least two decimals`);
      assert.ok((m[1] + m[2]).replace(/^0+/, '').length >= 4, `${est}: four significant digits`);
    }
    const est = Object.fromEntries(rows.map(([s, e]) => [s, e]));
    assert.equal(est.USDC, '≈ 12.30 USDC', 'a stablecoin keeps its trailing zero like a price');
    assert.equal(est.ETH, '≈ 0.004100 ETH', '12.30 USD at 3000 USD per ETH');
    assert.equal(est.POL, '≈ 24.60 POL');
    assert.equal(est.SOL, '≈ 0.08200 SOL');
    await page.context().close();
  });

  test('no state of the checkout or the POS sale screen says the same thing twice', async () => {
    const { page } = await b.open('phone');
    const check = async (url: string, state: string) => {
      await page.goto(url);
      assert.deepEqual(await repeated(page), [], `${state} at ${url}`);
    };
    const pick = await createPayment();
    await check(pick.checkout_url, 'pick');
    const pay = await createPayment({ token: 'base:usdc' });
    await check(pay.checkout_url, 'pay');
    const a = pay.attempts[0];
    await w.t.kasse.payments.deposits.recordDeposits('test', [transfer(a, 12_340_000n, 100n)]);
    await w.t.kasse.payments.deposits.headAdvanced('test', 'base', 101n);
    assert.equal((await w.m.test.get(`/payments/${pay.id}`)).body.status, 'confirming');
    await check(pay.checkout_url, 'seen');
    assert.equal(await page.locator('.k-confirms').textContent(), '2 of 5 confirmations');
    for (const outcome of ['paid', 'underpaid', 'expired', 'late'] as const) {
      const p = await createPayment();
      await w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome });
      await check(p.checkout_url, outcome);
    }
    const cancelled = await createPayment();
    await w.m.test.post(`/payments/${cancelled.id}/cancel`);
    await check(cancelled.checkout_url, 'cancelled');
    const refunded = await createPayment();
    await w.m.test.post(`/test/payments/${refunded.id}/simulate`, { outcome: 'paid' });
    assert.equal(
      (
        await w.m.test.post(`/payments/${refunded.id}/refund`, {
          destination: '0x000000000000000000000000000000000000dEaD',
        })
      ).status,
      202,
    );
    await w.t.kasse.refunds.settleSimulated();
    assert.equal((await w.m.test.get(`/payments/${refunded.id}`)).body.status, 'refunded');
    await check(refunded.checkout_url, 'refunded');
    // The POS sale screen: waiting, then paid.
    const till = (await w.m.test.post('/links', { kind: 'pos', title: 'Counter 2' })).body;
    await signInStaff(page);
    await page.goto(till.url);
    for (const k of ['9', '5', '0']) await page.locator(`.k-keypad [data-key="${k}"]`).click();
    await page.getByRole('button', { name: 'Charge $9.50' }).click();
    await page.getByText('Scan to pay $9.50').waitFor();
    const saleUrl = page.url();
    await check(saleUrl, 'pos waiting');
    await w.m.test.post(`/test/payments/${/\/sale\/(pay_[0-9A-Z]{36})$/.exec(saleUrl)![1]}/simulate`, {
      outcome: 'paid',
    });
    await check(saleUrl, 'pos paid');
    await page.context().close();
  });

  test('a paid page is a receipt: amount, coin and network, transaction link, date and reference', async () => {
    const p = await createPayment({ token: 'base:usdc', order_id: 'order-4711' });
    const { page } = await b.open('phone');
    await page.goto(p.checkout_url);
    const deposit = transfer(p.attempts[0], 12_340_000n, 200n);
    await w.t.kasse.payments.deposits.recordDeposits('test', [deposit]);
    await w.t.kasse.payments.deposits.headAdvanced('test', 'base', 210n);
    assert.equal((await w.m.test.get(`/payments/${p.id}`)).body.status, 'paid');
    await page.getByRole('heading', { name: 'Paid' }).waitFor({ timeout: 10_000 });
    const receipt = page.getByRole('definition');
    const rows = await page
      .locator('.k-receipt div')
      .evaluateAll((els) => els.map((e) => [e.querySelector('dt')!.textContent, e.querySelector('dd')!.textContent]));
    assert.deepEqual(Object.fromEntries(rows), {
      Amount: '$12.34',
      'Paid with': '12.34 USDC on Base Sepolia',
      Transaction: `${deposit.txHash.slice(0, 10)}…${deposit.txHash.slice(-6)}`,
      Date: '1 March 2026, 12:00 UTC',
      Reference: 'order-4711',
    });
    assert.ok((await receipt.count()) >= 5);
    const link = page.locator('.k-receipt a');
    assert.equal(await link.getAttribute('href'), `https://sepolia.basescan.org/tx/${deposit.txHash}`);
    assert.equal(await link.getAttribute('title'), deposit.txHash);
    assert.deepEqual(await repeated(page), []);
    await screenshot(page, 'payer-receipt-phone');
    await page.context().close();
  });

  test('coins without a current price are named on the picker, not silently left out', async () => {
    for (const id of ['ethereum', 'solana', 'polygon-ecosystem-token']) w.coingecko.removePrice(id);
    for (const sym of ['ETHUSDT', 'SOLUSDT', 'POLUSDT']) w.binance.removePrice(sym);
    w.t.clock.advance(301_000); // past the maximum age of the cached prices
    try {
      const p = await createPayment();
      const { page } = await b.open('phone');
      await page.goto(p.checkout_url);
      const note = (await page.locator('[data-unpriced]').textContent())!;
      assert.equal(
        note,
        'ETH, POL and SOL cannot be offered right now because their prices cannot be fetched. Please choose another coin or try again in a few minutes.',
      );
      const symbols = await page.locator('button.k-coin b').allTextContents();
      assert.ok(symbols.includes('USDC') && !symbols.includes('ETH'), symbols.join(' '));
      await screenshot(page, 'payer-unpriced-phone');
      await page.context().close();
    } finally {
      for (const [id, usd] of [
        ['ethereum', 3000],
        ['solana', 150],
        ['polygon-ecosystem-token', 0.5],
      ] as const)
        w.coingecko.setPrice(id, usd);
      for (const [sym, usd] of [
        ['ETHUSDT', 3000],
        ['SOLUSDT', 150],
        ['POLUSDT', 0.5],
      ] as const)
        w.binance.setPrice(sym, usd);
    }
  });
});

describe('a live mode that cannot take payments yet', () => {
  test('the checkout and link pages tell the payer plainly; the API says why per network', async () => {
    const p = (await w.m.live.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'live-1' }))
      .body;
    const { page } = await b.open('phone');
    await page.goto(p.checkout_url);
    await page.getByRole('heading', { name: 'This shop cannot take crypto payments yet' }).waitFor();
    assert.match(
      (await page.locator('main').textContent())!,
      /Corner Café has not finished setting up crypto payments/,
    );
    assert.equal(await page.locator('button.k-coin').count(), 0);
    assert.doesNotMatch(await page.content(), /try again in a minute/);
    assert.deepEqual(await repeated(page), []);
    await screenshot(page, 'payer-live-closed-phone');
    // Choosing a coin anyway is refused in the payer's words.
    const chosen = await fetch(`${w.t.urls.checkout}/p/${p.id}/attempts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token":"base:usdc"}',
    });
    assert.equal(chosen.status, 503);
    const err = (await chosen.json()).error;
    assert.equal(err.code, 'chain_paused');
    assert.equal(err.message, 'That network cannot take payments right now. Please choose another coin.');

    const l = (await w.m.live.post('/links', { kind: 'open', title: 'Donation' })).body;
    await page.goto(l.url);
    await page.getByRole('heading', { name: 'This shop cannot take crypto payments yet' }).waitFor();
    assert.equal(await page.locator('form[method=post]').count(), 0, 'no payment form');
    const json = await fetch(l.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"amount_usd_cents":1000}',
    });
    assert.equal(json.status, 503);
    assert.equal((await json.json()).error.code, 'chain_paused');
    assert.equal((await w.m.live.get(`/links/${l.id}`)).body.uses, 0, 'nothing was created');

    const live = (await w.m.live.get('/currencies')).body.data;
    for (const c of live) {
      assert.equal(c.paused, true);
      assert.equal(c.network_status, 'paused');
      assert.match(
        c.network_status_reason,
        c.chain === 'solana'
          ? /no treasury for sweeps .*solana\.treasury/
          : ['bitcoin', 'litecoin'].includes(c.chain)
            ? /no "rpc_urls": point it at a Bitcoin Core or Litecoin Core node you run/
            : /no forwarder factory configured .*kasse evm deploy-factory/,
      );
    }
    const testModes = (await w.m.test.get('/currencies')).body.data;
    assert.ok(
      testModes.every(
        (c: any) =>
          c.network_status === 'simulated' && c.paused === false && typeof c.network_status_reason === 'string',
      ),
    );
    await page.context().close();
  });

  test('with a network set up, live runs it and offers its coins; the others stay paused and say why', async () => {
    const t: TestKasse = await startTestKasse({
      env: {
        KASSE_LIVE_NETWORKS_FILE: liveNetworksFile(['base']),
        KASSE_COINGECKO_URL: w.coingecko.url,
        KASSE_BINANCE_URL: w.binance.url,
      },
    });
    try {
      const m = await t.merchant({ name: 'Live Shop' });
      assert.match(
        t.kasse.chains.describe('live'),
        /^live mode: running: base; paused: ethereum, polygon, arbitrum, solana, bitcoin, litecoin\. Why: ethereum, polygon, arbitrum: no forwarder factory configured/,
      );
      const currencies = (await m.live.get('/currencies')).body.data;
      const base = currencies.filter((c: any) => c.chain === 'base');
      assert.ok(
        base.length > 0 &&
          base.every((c: any) => c.network_status === 'running' && c.network_status_reason === null && !c.paused),
      );
      assert.ok(currencies.filter((c: any) => c.chain !== 'base').every((c: any) => c.network_status === 'paused'));
      const p = (await m.live.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'live-2' }))
        .body;
      const { page } = await b.open('phone');
      await page.goto(p.checkout_url);
      await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
      assert.deepEqual(await page.locator('legend').allTextContents(), ['Base']);
      await page.context().close();
    } finally {
      await t.close();
    }
  });
});

describe('link pages and the POS terminal', () => {
  const SNAKE = /\b[a-z]+_[a-z_]+\b/;

  test('amount errors are written for payers and name the bounds in dollars', async () => {
    const l = (
      await w.m.test.post('/links', { kind: 'open', title: 'Donation', min_usd_cents: 500, max_usd_cents: 50000 })
    ).body;
    const { page } = await b.open('phone');
    const cases: Array<[string, string]> = [
      ['2', 'Enter an amount from $5.00 to $500.00.'],
      ['500.01', 'Enter an amount from $5.00 to $500.00.'],
      ['0', 'Enter an amount from $5.00 to $500.00.'],
      ['abc', 'Enter an amount in dollars, like 12.50.'],
      ['', 'Enter an amount.'],
    ];
    for (const [typed, says] of cases) {
      await page.goto(l.url);
      await page.getByLabel('Amount in US dollars').fill(typed);
      await page.getByRole('button', { name: 'Continue to payment' }).click();
      const alert = page.getByRole('alert');
      await alert.filter({ hasText: says }).waitFor();
      const text = (await alert.textContent())!;
      assert.equal(text, says, `typed "${typed}"`);
      assert.doesNotMatch(text, SNAKE);
    }
    await screenshot(page, 'payer-link-error-phone');
    const email = (
      await w.m.test.post('/links', { kind: 'fixed', title: 'Ticket', amount_usd_cents: 900, collect_email: true })
    ).body;
    await page.goto(email.url);
    await page.getByLabel('Your email').fill('not-an-email');
    await page.getByRole('button', { name: 'Pay $9.00' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter your email address, like name@example.com.' }).waitFor();
    await page.context().close();
  });

  test('tip and POS links without bounds do not quote the system limits', async () => {
    const tip = (await w.m.test.post('/links', { kind: 'tip', title: 'Tips', presets_usd_cents: [200, 500] })).body;
    const pos = (await w.m.test.post('/links', { kind: 'pos', title: 'Till' })).body;
    const capped = (await w.m.test.post('/links', { kind: 'pos', title: 'Small till', max_usd_cents: 10000 })).body;
    const floor = (await w.m.test.post('/links', { kind: 'open', title: 'Pledge', min_usd_cents: 2500 })).body;
    const { page } = await b.open('phone');
    await signInStaff(page);
    for (const [l, hint] of [
      [tip, 'Any amount of $1.00 or more.'],
      [pos, 'Any amount of $1.00 or more.'],
      [capped, 'Up to $100.00.'],
      [floor, '$25.00 or more.'],
    ] as const) {
      await page.goto(l.url);
      assert.equal(await page.locator('#k-amount-h').textContent(), hint);
      assert.doesNotMatch(await page.locator('main').innerText(), /1,000,000/);
    }
    await page.context().close();
  });

  test('charging $0.00 on the POS terminal says what to do, with and without JavaScript', async () => {
    const pos = (await w.m.test.post('/links', { kind: 'pos', title: 'Counter 3' })).body;
    const { page } = await b.open('phone');
    await signInStaff(page);
    const cookies = await page.context().cookies();
    await page.goto(pos.url);
    await page.getByRole('button', { name: 'Charge' }).click();
    await page.getByRole('alert').filter({ hasText: 'Enter the amount to charge first.' }).waitFor();
    assert.equal(page.url(), pos.url);
    // It still charges once an amount is typed.
    for (const k of ['5', '0', '0']) await page.locator(`.k-keypad [data-key="${k}"]`).click();
    await page.getByRole('button', { name: 'Charge $5.00' }).click();
    await page.getByText('Scan to pay $5.00').waitFor();
    await page.context().close();

    const ctx = await b.browser.newContext({ javaScriptEnabled: false, viewport: { width: 390, height: 844 } });
    await ctx.addCookies(cookies);
    const plain = await ctx.newPage();
    await plain.goto(pos.url);
    await plain.getByRole('button', { name: 'Charge' }).click();
    await plain.getByRole('alert').filter({ hasText: 'Enter an amount.' }).waitFor();
    await plain.getByLabel('Amount to charge (US$)').fill('0.00');
    await plain.getByRole('button', { name: 'Charge' }).click();
    await plain.getByRole('alert').filter({ hasText: 'Enter an amount of $1.00 or more.' }).waitFor();
    await ctx.close();
    assert.equal((await w.m.test.get(`/links/${pos.id}`)).body.uses, 1);
  });
});
