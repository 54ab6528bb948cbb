/**
 * The postings statements rely on, on a real database: a conversion credit with its spread, held money following
 * what the payment side says, the payout rule, a merchant's balance moving only in its own postings, and balances
 * before an instant from checkpoints.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HOUR } from '../../src/core/clock.ts';
import { withTx } from '../../src/db/index.ts';
import { balanceBefore } from '../../src/modules/ledger/checkpoints.ts';
import { syncHeld } from '../../src/modules/ledger/holds.ts';
import { accounts, UnbalancedPostingError, USD, type LedgerService } from '../../src/modules/ledger/ledger.ts';
import { postPayoutFailed, postPayoutRelease, postPayoutSent } from '../../src/modules/ledger/payouts.ts';
import { startTestKasse, type TestKasse } from '../harness/app.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

let t: TestKasse;
let ledger: LedgerService;
let merchantId: string;

before(async () => {
  t = await startTestKasse();
  ledger = t.kasse.ledger;
  merchantId = (await t.merchant()).id;
});
after(() => t.close());

async function newPayment(): Promise<string> {
  return (
    await t.kasse.payments.create(
      { mode: 'test', merchantId },
      { price_amount: 5000, price_currency: 'USD', order_id: 'l' },
      undefined,
      OPERATOR,
    )
  ).payment.id;
}

async function lines(id: string): Promise<Record<string, string>> {
  const rows = await t.kasse.db
    .selectFrom('ledger_entries')
    .select(['account', 'currency', 'amount'])
    .where('transaction_id', '=', id)
    .execute();
  return Object.fromEntries(rows.map((r) => [`${r.account.replace(merchantId, 'M')} ${r.currency}`, r.amount]));
}

describe('postings', () => {
  test('a conversion credits the price less fee and spread, kind payment_conversion, coin on the transaction', async () => {
    const paymentId = await newPayment();
    const id = await withTx(t.kasse.db, (tx) =>
      ledger.creditPayment(tx, {
        mode: 'test',
        merchantId,
        paymentId,
        seq: 1,
        priceCents: 5000,
        feeBps: 100,
        token: 'base:eth',
        amount: 25n * 10n ** 15n,
        conversion: { swapFeeBps: 50 },
      }),
    );
    assert.deepEqual(await lines(id!), {
      'test:settlement USD': '5000',
      'test:merchant:M USD': '-4925',
      'test:fees USD': '-50',
      'test:conversion USD': '-25',
      'test:custody:M base:eth': '25000000000000000',
      'test:payers base:eth': '-25000000000000000',
    });
    const tx = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select(['kind', 'token'])
      .where('id', '=', id!)
      .executeTakeFirstOrThrow();
    assert.deepEqual(tx, { kind: 'payment_conversion', token: 'base:eth' });
    const rev = await withTx(t.kasse.db, (x) => ledger.reversePaymentCredit(x, paymentId, 1, 'payment_refund'));
    assert.equal(
      (
        await t.kasse.db
          .selectFrom('ledger_transactions')
          .select('token')
          .where('id', '=', rev!)
          .executeTakeFirstOrThrow()
      ).token,
      'base:eth',
    );
  });

  test('held money: each sync posts the difference, nothing when nothing changed, and releases to zero', async () => {
    const paymentId = await newPayment();
    const sync = (lots: Array<{ token: string; amount: bigint; valueCents: bigint }>) =>
      withTx(t.kasse.db, (tx) => syncHeld(ledger, tx, { mode: 'test', merchantId, paymentId, lots }));
    const first = await sync([{ token: 'base:usdc', amount: 15_000_000n, valueCents: 1500n }]);
    assert.deepEqual(await lines(first!), {
      'test:suspense:M base:usdc': '15000000',
      'test:payers base:usdc': '-15000000',
      'test:settlement USD': '1500',
      'test:held:M USD': '-1500',
    });
    assert.equal(await sync([{ token: 'base:usdc', amount: 15_000_000n, valueCents: 1500n }]), null);
    const more = await sync([
      { token: 'base:usdc', amount: 20_000_000n, valueCents: 2000n },
      { token: 'base:eth', amount: 4n * 10n ** 14n, valueCents: 80n },
    ]);
    assert.deepEqual(await lines(more!), {
      'test:suspense:M base:usdc': '5000000',
      'test:payers base:usdc': '-5000000',
      'test:suspense:M base:eth': '400000000000000',
      'test:payers base:eth': '-400000000000000',
      'test:settlement USD': '580',
      'test:held:M USD': '-580',
    });
    await sync([]);
    assert.equal(await ledger.accountBalance(t.kasse.db, accounts.held('test', merchantId), USD), 0n);
    assert.equal(await ledger.accountBalance(t.kasse.db, accounts.suspense('test', merchantId), 'base:usdc'), 0n);
    const keys = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select('dedupe_key')
      .where('payment_id', '=', paymentId)
      .orderBy('dedupe_key')
      .execute();
    assert.deepEqual(
      keys.map((k) => k.dedupe_key),
      [1, 2, 3].map((n) => `payment:${paymentId}:hold:${n}`),
    );
  });

  test('payouts: release, sent and failed post once each', async () => {
    const p = { mode: 'test' as const, merchantId, payoutId: 'po_TEST1', usdCents: 1000, token: 'base:usdc' };
    const release = await withTx(t.kasse.db, (tx) => postPayoutRelease(ledger, tx, p));
    assert.deepEqual(await lines(release!), { 'test:merchant:M USD': '1000', 'test:payouts USD': '-1000' });
    assert.equal(await withTx(t.kasse.db, (tx) => postPayoutRelease(ledger, tx, p)), null, 'once');
    const sent = await withTx(t.kasse.db, (tx) => postPayoutSent(ledger, tx, { ...p, amount: 10_000_000n }));
    assert.deepEqual(await lines(sent!), {
      'test:payouts USD': '1000',
      'test:settlement USD': '-1000',
      'test:payees base:usdc': '10000000',
      'test:custody:M base:usdc': '-10000000',
    });
    const q = { ...p, payoutId: 'po_TEST2' };
    await withTx(t.kasse.db, (tx) => postPayoutRelease(ledger, tx, q));
    const failed = await withTx(t.kasse.db, (tx) => postPayoutFailed(ledger, tx, q));
    assert.deepEqual(await lines(failed!), { 'test:payouts USD': '1000', 'test:merchant:M USD': '-1000' });
    assert.equal(await ledger.accountBalance(t.kasse.db, accounts.payouts('test'), USD), 0n);
  });

  test('a line on a merchant balance needs a posting for that merchant and mode', async () => {
    const line = (account: string) => [
      { account, currency: USD, amount: -1n },
      { account: accounts.settlement('test'), currency: USD, amount: 1n },
    ];
    for (const [m, mode, account] of [
      [null, 'test', accounts.merchant('test', merchantId)],
      ['mer_OTHER', 'test', accounts.merchant('test', merchantId)],
      [merchantId, 'live', accounts.merchant('test', merchantId)],
    ] as const) {
      await assert.rejects(
        withTx(t.kasse.db, (tx) =>
          ledger.post(tx, { mode, merchantId: m, kind: 'x', dedupeKey: `own:${m}:${mode}`, lines: line(account) }),
        ),
        UnbalancedPostingError,
      );
    }
  });
});

describe('checkpoints', () => {
  test('the balance before an instant an hour gone is remembered; later postings never change it', async () => {
    const shop = (await t.merchant()).id;
    const account = accounts.merchant('test', shop);
    const post = (key: string, cents: bigint) =>
      withTx(t.kasse.db, (tx) =>
        ledger.post(tx, {
          mode: 'test',
          merchantId: shop,
          kind: 'x',
          dedupeKey: key,
          lines: [
            { account, currency: USD, amount: -cents },
            { account: accounts.settlement('test'), currency: USD, amount: cents },
          ],
        }),
      );
    t.clock.set('2026-05-31T23:00:00Z');
    await post('cp:1', 700n);
    const june = new Date('2026-06-01T00:00:00Z');
    assert.equal(await balanceBefore(t.kasse.db, account, USD, june, t.clock.now()), -700n);
    assert.equal(
      (await t.kasse.db.selectFrom('ledger_checkpoints').selectAll().where('account', '=', account).execute()).length,
      0,
      'not settled yet: no checkpoint',
    );
    t.clock.set(june.getTime() + HOUR);
    await post('cp:2', 50n);
    assert.equal(await balanceBefore(t.kasse.db, account, USD, june, t.clock.now()), -700n);
    const stored = await t.kasse.db
      .selectFrom('ledger_checkpoints')
      .select(['at', 'balance'])
      .where('account', '=', account)
      .execute();
    assert.deepEqual(
      stored.map((s) => [s.at.toISOString(), s.balance]),
      [['2026-06-01T00:00:00.000Z', '-700']],
    );
    t.clock.set('2026-07-01T02:00:00Z');
    assert.equal(
      await balanceBefore(t.kasse.db, account, USD, new Date('2026-07-01T00:00:00Z'), t.clock.now()),
      -750n,
      'checkpoint + postings since',
    );
  });
});
