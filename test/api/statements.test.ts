/**
 * Monthly statements through the public API: a month with every kind of movement (credits in a stablecoin and in
 * another coin, held money, reorg and refund reversals), the next month opening at the previous closing, payouts and
 * a negative balance, the reconciliation gap at 0 and made non-zero by broken postings, month validation, and the
 * CSV and PDF renderings read back as a person would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { DepositObservation } from '../../src/chains/ports.ts';
import { withTx } from '../../src/db/index.ts';
import { accounts, UnbalancedPostingError, USD } from '../../src/modules/ledger/ledger.ts';
import { postPayoutRelease, postPayoutSent } from '../../src/modules/ledger/payouts.ts';
import type { SentPayout } from '../../src/modules/statements/payouts.ts';
import { statementCsv, statementPdf } from '../../src/modules/statements/render.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { ok } from '../harness/expect.ts';
import { readPdf } from '../harness/pdf.ts';
import { startCoinGeckoServer, type PriceServer } from '../harness/price-servers.ts';
import { assertAddsUp, assertStatementsReconcile, csvBalance, pdfBalance } from '../harness/statements.ts';

const REFUND_TO = '0x000000000000000000000000000000000000dEaD';
let t: TestKasse;
let cg: PriceServer;

/** Payouts as the disbursements module will record them (what statements read through `PayoutRecords`). */
const payoutLog: Array<SentPayout & { merchantId: string; releasedAt: Date }> = [];

before(async () => {
  cg = await startCoinGeckoServer({ now: () => t.clock.now() });
  cg.setPrice('ethereum', 2000);
  t = await startTestKasse({ env: { KASSE_COINGECKO_URL: cg.url, KASSE_BINANCE_URL: 'http://127.0.0.1:9' } });
  t.kasse.statements.usePayouts({
    sent: async ({ merchantId }, from, to) =>
      payoutLog.filter((p) => p.merchantId === merchantId && p.sentAt >= from && p.sentAt < to),
    totals: async ({ merchantId }, from, to) => ({
      releasedUsdCents: payoutLog
        .filter((p) => p.merchantId === merchantId && p.releasedAt >= from && p.releasedAt < to)
        .reduce((s, p) => s + BigInt(p.usdCents), 0n),
      failedUsdCents: 0n,
    }),
  });
});
after(async () => {
  await t.close();
  await cg.close();
});

async function pay(m: TestMerchant, cents: number, token: string, outcome: string): Promise<any> {
  const p = await ok(
    m.test.post('/payments', { price_amount: cents, price_currency: 'USD', order_id: `o-${cents}`, token }),
    201,
  );
  return ok(m.test.post(`/test/payments/${p.id}/simulate`, { outcome }));
}

async function refund(m: TestMerchant, id: string): Promise<void> {
  await ok(m.test.post(`/payments/${id}/refund`, { destination: REFUND_TO }), 202);
  await t.kasse.refunds.settleSimulated();
  assert.equal((await ok(m.test.get(`/payments/${id}`))).status, 'refunded');
}

/** A payment paid on Base Sepolia as a watcher reports it, then its block leaves the chain. */
async function paidThenReorged(m: TestMerchant, cents: number): Promise<void> {
  const p = await ok(
    m.test.post('/payments', { price_amount: cents, price_currency: 'USD', order_id: 'reorg', token: 'base:usdc' }),
    201,
  );
  const a = p.attempts[0];
  const o: DepositObservation = {
    chain: 'base',
    address: a.address.toLowerCase(),
    token: 'base:usdc',
    txHash: `0x${'cd'.repeat(32)}`,
    index: 0,
    amount: BigInt(a.pay_amount),
    from: null,
    blockNumber: 5_000n,
    blockHash: `0x${'11'.repeat(32)}`,
  };
  const sink = t.kasse.payments.deposits;
  await sink.recordDeposits('test', [o]);
  await sink.headAdvanced('test', 'base', 5_010n);
  assert.equal((await ok(m.test.get(`/payments/${p.id}`))).status, 'paid');
  await sink.blocksRemoved('test', 'base', 5_000n);
  assert.equal((await ok(m.test.get(`/payments/${p.id}`))).status, 'waiting');
}

describe('statements', () => {
  let m: TestMerchant;
  let march: any;
  let may: any;
  let underpaidId: string;

  test('a month with every kind of movement, figure by figure', async () => {
    m = await t.merchant({ name: 'Chai & Co', rateLimit: 100_000 });
    await pay(m, 2000, 'base:usdc', 'paid'); // credit: 2000 − fee 20 = 1980
    await pay(m, 5000, 'base:eth', 'paid'); // conversion: 5000 − spread 25 − fee 50 = 4925; 0.025 ETH
    underpaidId = (await pay(m, 3000, 'base:usdc', 'underpaid')).id; // held: 15 USDC = 1500
    await pay(m, 1000, 'base:usdc', 'late'); // held: 10 USDC = 1000
    await pay(m, 1000, 'base:usdc', 'wrong_asset'); // held: 0.0004 ETH at 2000 = 80
    const refunded = await pay(m, 4000, 'base:usdc', 'paid'); // credit 3960, then reversed by the refund
    await refund(m, refunded.id);
    await paidThenReorged(m, 2500); // credit 2475, then reversed by the reorg

    march = await ok(m.test.get('/statements/2026-03'));
    const now = t.clock.now().toISOString();
    assert.deepEqual(march, {
      month: '2026-03',
      from: '2026-03-01T00:00:00.000Z',
      to: now,
      opening_balance_usd_cents: 0,
      closing_balance_usd_cents: 1980 + 4925,
      clawback_change_usd_cents: 0,
      reconciliation_gap_usd_cents: 0,
      payments: { count: 4, gross_usd_cents: 2000 + 5000 + 4000 + 2500 },
      credits: { count: 3, value_usd_cents: 8500, fee_usd_cents: 85, net_usd_cents: 8415 },
      held: { count: 3, value_usd_cents: 1500 + 1000 + 80 },
      conversions: { count: 1, value_usd_cents: 5000, swap_fee_usd_cents: 25, fee_usd_cents: 50, net_usd_cents: 4925 },
      reversals: { count: 2, net_usd_cents: 3960 + 2475 },
      payouts: { count: 0, usd_cents: 0, requested_count: 0, requested_usd_cents: 0, items: [] },
      by_coin: [
        {
          token: 'base:eth',
          symbol: 'ETH',
          chain: 'base',
          payments: 1,
          received_display: '0.025',
          value_usd_cents: 5000,
        },
        {
          token: 'base:usdc',
          symbol: 'USDC',
          chain: 'base',
          payments: 3,
          received_display: '85',
          value_usd_cents: 8500,
        },
      ],
    });
    const balance = await ok(m.test.get('/balance'));
    assert.equal(
      balance.available_usd_cents,
      march.closing_balance_usd_cents,
      'the closing of the month in progress is the balance',
    );
    const live = await ok(m.live.get('/statements/2026-03'));
    assert.equal(live.payments.count, 0, 'test money is not on the live statement');
    assert.equal(live.held.count, 0);
  });

  test('the next month opens at the previous closing; accepting held money credits it; past months do not change', async () => {
    t.clock.set('2026-04-02T09:00:00Z');
    await ok(m.test.post(`/payments/${underpaidId}/accept`));
    const april = await ok(m.test.get('/statements/2026-04'));
    assert.equal(april.opening_balance_usd_cents, march.closing_balance_usd_cents);
    assert.deepEqual(april.credits, { count: 1, value_usd_cents: 3000, fee_usd_cents: 30, net_usd_cents: 2970 });
    assert.deepEqual(april.held, { count: 2, value_usd_cents: 1080 });
    assert.equal(april.closing_balance_usd_cents, march.closing_balance_usd_cents + 2970);
    assert.equal(april.reconciliation_gap_usd_cents, 0);
    const again = await ok(m.test.get('/statements/2026-03'));
    assert.deepEqual({ ...again, to: march.to }, march, 'March is what it was (its end is fixed now)');
    assert.equal(again.to, '2026-04-01T00:00:00.000Z');
    await assertStatementsReconcile(t.kasse, 'test', m.id);
  });

  test('payouts: released and sent in the month, then a refund after the payout leaves the balance below zero', async () => {
    t.clock.set('2026-05-03T10:00:00Z');
    const shop = await t.merchant({ name: 'Payout shop', rateLimit: 100_000 });
    const paid = await pay(shop, 2000, 'base:usdc', 'paid');
    const releasedAt = t.clock.now();
    const payout = {
      mode: 'test' as const,
      merchantId: shop.id,
      payoutId: 'po_01K0000000000000000000PAY1',
      usdCents: 1980,
      token: 'base:usdc',
    };
    await withTx(t.kasse.db, (tx) => postPayoutRelease(t.kasse.ledger, tx, payout));
    t.clock.advance(60_000);
    await withTx(t.kasse.db, (tx) => postPayoutSent(t.kasse.ledger, tx, { ...payout, amount: 19_800_000n }));
    payoutLog.push({
      id: payout.payoutId,
      merchantId: shop.id,
      releasedAt,
      sentAt: t.clock.now(),
      usdCents: 1980,
      token: 'base:usdc',
      amount: 19_800_000n,
      destination: '0x00000000000000000000000000000000000000b0',
      txHash: `0x${'ef'.repeat(32)}`,
    });
    await refund(shop, paid.id);

    may = await ok(shop.test.get('/statements/2026-05'));
    assert.deepEqual(may.payouts, {
      count: 1,
      usd_cents: 1980,
      requested_count: 1,
      requested_usd_cents: 1980,
      items: [
        {
          id: payout.payoutId,
          sent_at: t.clock.now().toISOString(),
          usd_cents: 1980,
          token: 'base:usdc',
          symbol: 'USDC',
          amount_display: '19.8',
          destination: '0x00000000000000000000000000000000000000b0',
          tx_hash: `0x${'ef'.repeat(32)}`,
        },
      ],
    });
    assert.deepEqual(may.reversals, { count: 1, net_usd_cents: 1980 });
    assert.equal(may.closing_balance_usd_cents, -1980, 'the refund came after the money was paid out');
    assert.equal(may.clawback_change_usd_cents, 1980);
    assert.equal(may.reconciliation_gap_usd_cents, 0);
    assert.equal((await ok(shop.test.get('/balance'))).available_usd_cents, -1980);
    await assertStatementsReconcile(t.kasse, 'test', shop.id, {
      payoutsTaken: (month) => (month === '2026-05' ? 1980 : 0),
    });
  });

  test('the PDF and CSV balance add up to the closing: reversals and payouts are signed, from the same lines', async () => {
    // May of the payouts test: +19.80 credited, −19.80 refunded, −19.80 paid out, closing −19.80.
    // A month of five releases of 25.00, one failed and given back: payouts took 100.00, not the 125.00 released.
    const failed = {
      ...march,
      payouts: { count: 4, usd_cents: 10_000, requested_count: 5, requested_usd_cents: 12_500, items: [] },
      closing_balance_usd_cents: march.closing_balance_usd_cents - 10_000,
      clawback_change_usd_cents: 10_000 - march.closing_balance_usd_cents,
    };
    for (const [name, s, payouts] of [
      ['may', may, -1980],
      ['failed-payout', failed, -10_000],
    ] as const) {
      const pdf = pdfBalance(
        readPdf(
          await statementPdf(s, { merchantName: 'Payout shop', mode: 'test', chains: t.kasse.chains }),
          `statement-signs-${name}`,
        ).text,
      );
      assert.deepEqual(
        pdf.labels.map((l) => l.split(/[:(]/)[0]!.trim()),
        [
          'Opening balance',
          'Credits in stablecoins',
          'Conversions from other coins',
          'Reversals',
          'Payouts',
          'Closing balance',
        ],
        name,
      );
      assert.equal(assertAddsUp(pdf, `${name} PDF`), s.closing_balance_usd_cents);
      assert.equal(pdf.cents[3], -s.reversals.net_usd_cents, `${name}: reversals take from the balance`);
      assert.equal(pdf.cents[4], payouts, `${name}: payouts take what they took (releases less failures)`);
      const csv = csvBalance(statementCsv(s, { chains: t.kasse.chains, mode: 'test' }));
      assert.deepEqual(csv.labels, ['opening', 'credits', 'conversions', 'reversals', 'payouts', 'closing']);
      assert.deepEqual(csv.cents, pdf.cents, `${name}: the CSV has the PDF's signed figures`);
    }
  });

  test('a payment paid short within the tolerance counts at the value credited, paid and refunded', async () => {
    const shop = await t.merchant({ rateLimit: 100_000 });
    await ok(shop.test.patch('/account', { underpayment_tolerance_bps: 100 }));
    const short = async () => {
      const p = await ok(
        shop.test.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: 'tol', token: 'base:usdc' }),
        201,
      );
      // 100 bps of 25 000 000 allows 250 000 short: credited at floor(2500 × 24 750 000 / 25 000 000) = 2475.
      const paid = await ok(shop.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid', amount: '24750000' }));
      assert.equal(paid.underpaid_within_tolerance, true);
      return paid;
    };
    await short();
    const refunded = await short();
    await refund(shop, refunded.id);
    const month = t.clock.now().toISOString().slice(0, 7);
    const s = await ok(shop.test.get(`/statements/${month}`));
    assert.equal(s.reconciliation_gap_usd_cents, 0);
    assert.deepEqual(s.credits, { count: 2, value_usd_cents: 4950, fee_usd_cents: 50, net_usd_cents: 4900 });
    assert.deepEqual(s.reversals, { count: 1, net_usd_cents: 2450 });
    assert.equal(s.closing_balance_usd_cents, 2450);
    assert.equal((await ok(shop.test.get('/balance'))).available_usd_cents, 2450);
  });

  test('a broken posting shows as a reconciliation gap', async () => {
    const shop = await t.merchant({ rateLimit: 100_000 });
    await pay(shop, 2000, 'base:usdc', 'paid');
    const month = t.clock.now().toISOString().slice(0, 7);
    assert.equal((await ok(shop.test.get(`/statements/${month}`))).reconciliation_gap_usd_cents, 0);
    const merchant = accounts.merchant('test', shop.id);
    const settlement = accounts.settlement('test');
    // A second credit of a payment with no payment behind it.
    await withTx(t.kasse.db, (tx) =>
      t.kasse.ledger.post(tx, {
        mode: 'test',
        merchantId: shop.id,
        kind: 'payment_credit',
        dedupeKey: 'broken:1',
        lines: [
          { account: settlement, currency: USD, amount: 500n },
          { account: merchant, currency: USD, amount: -500n },
        ],
      }),
    );
    assert.equal((await ok(shop.test.get(`/statements/${month}`))).reconciliation_gap_usd_cents, 500);
    // A posting of a kind no operation explains moves the balance and shows.
    await withTx(t.kasse.db, (tx) =>
      t.kasse.ledger.post(tx, {
        mode: 'test',
        merchantId: shop.id,
        kind: 'adjustment',
        dedupeKey: 'broken:2',
        lines: [
          { account: settlement, currency: USD, amount: 100n },
          { account: merchant, currency: USD, amount: -100n },
        ],
      }),
    );
    // A line on a merchant's balance outside that merchant's postings is refused, so none escapes the statement.
    await assert.rejects(
      withTx(t.kasse.db, (tx) =>
        t.kasse.ledger.post(tx, {
          mode: 'test',
          merchantId: null,
          kind: 'adjustment',
          dedupeKey: 'broken:3',
          lines: [
            { account: settlement, currency: USD, amount: 100n },
            { account: merchant, currency: USD, amount: -100n },
          ],
        }),
      ),
      UnbalancedPostingError,
    );
    const s = await ok(shop.test.get(`/statements/${month}`));
    assert.equal(s.reconciliation_gap_usd_cents, 600);
    assert.equal(s.closing_balance_usd_cents, 1980 + 500 + 100);
  });

  test('month: malformed or in the future is 400 on month; the month in progress runs to now', async () => {
    for (const bad of ['2026-3', '2026-13', '2026-00', 'march', '1969-12']) {
      const r = await m.test.get(`/statements/${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, 'month', bad);
    }
    const next = new Date(t.clock.now());
    next.setUTCMonth(next.getUTCMonth() + 1, 1);
    const future = await m.test.get(`/statements/${next.toISOString().slice(0, 7)}`);
    assert.equal(future.status, 400);
    assert.equal(future.body.error.param, 'month');
    const current = await ok(m.test.get(`/statements/${t.clock.now().toISOString().slice(0, 7)}`));
    assert.equal(current.to, t.clock.now().toISOString());
    assert.equal((await new (m.test.constructor as any)(t.urls.test, null).get('/statements/2026-03')).status, 401);
  });

  test('CSV and PDF of a statement say what the statement says', async () => {
    const csv = statementCsv(march, { chains: t.kasse.chains, mode: 'test' });
    const lines = csv.trimEnd().split('\r\n');
    assert.equal(lines[0], 'section,item,count,usd,token,amount,destination,tx_hash,time');
    for (const row of [
      'balance,opening,,0.00',
      'balance,credits,3,84.15',
      'balance,conversions,1,49.25',
      'balance,reversals,2,-64.35',
      'balance,payouts,0,0.00',
      'balance,closing,,69.05',
      'credits,value,3,85.00',
      'credits,fee,,0.85',
      'conversions,swap_fee,,0.25',
      'reversals,net,2,64.35',
      'clawback,change,,0.00',
      'held,value,3,25.80',
      'coin,ETH on Base Sepolia,1,50.00,base:eth,0.025',
      'reconciliation,gap,,0.00',
    ]) {
      assert.ok(lines.includes(row), `CSV has ${row}`);
    }
    const pdf = readPdf(
      await statementPdf(march, { merchantName: 'Chai & Co', mode: 'test', chains: t.kasse.chains }),
      'statement-2026-03',
    );
    assert.equal(pdf.pages, 1);
    assert.match(pdf.pageSize, /A4/);
    for (const text of [
      'Statement — March 2026',
      'Chai & Co',
      'TEST MODE',
      'Opening balance',
      'Closing balance',
      '69.05',
      'Conversions from other coins (1 payment)',
      '+49.25',
      'Reversals (2 refunds and reorgs)',
      '−64.35',
      'Held at the end of the period',
      '25.80',
      'ETH on Base Sepolia — 1 payment',
      '0.025 ETH received',
    ]) {
      assert.ok(pdf.text.includes(text), `PDF shows ${text}\n${pdf.text}`);
    }
  });
});
