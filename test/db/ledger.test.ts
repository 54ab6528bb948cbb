/**
 * The ledger on a real database: postings must balance per currency (checked in code and by the database at
 * commit), a payment credit lands exactly once per dedupe key, reversals negate exactly, entries are append-only.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import { withTx } from '../../src/db/index.ts';
import {
  accounts,
  assertBalanced,
  USD,
  UnbalancedPostingError,
  type LedgerService,
} from '../../src/modules/ledger/ledger.ts';
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
  const { payment } = await t.kasse.payments.create(
    { mode: 'test', merchantId },
    { price_amount: 1234, price_currency: 'USD', order_id: 'l' },
    undefined,
    OPERATOR,
  );
  return payment.id;
}

const merchantBalance = async () => (await ledger.merchantBalance({ mode: 'test', merchantId })).availableUsdCents;

describe('balance rules', () => {
  test('assertBalanced refuses single, zero and unbalanced lines per currency', () => {
    assert.throws(() => assertBalanced([{ account: 'a', currency: USD, amount: 1n }]), UnbalancedPostingError);
    assert.throws(
      () =>
        assertBalanced([
          { account: 'a', currency: USD, amount: 0n },
          { account: 'b', currency: USD, amount: 0n },
        ]),
      UnbalancedPostingError,
    );
    assert.throws(
      () =>
        assertBalanced([
          { account: 'a', currency: USD, amount: 5n },
          { account: 'b', currency: 'base:usdc', amount: -5n },
        ]),
      /does not balance in USD/,
    );
    assert.doesNotThrow(() =>
      assertBalanced([
        { account: 'a', currency: USD, amount: 5n },
        { account: 'b', currency: USD, amount: -5n },
        { account: 'c', currency: 'base:usdc', amount: 7n },
        { account: 'd', currency: 'base:usdc', amount: -7n },
      ]),
    );
  });

  test('post() rejects an unbalanced posting and writes nothing', async () => {
    await assert.rejects(
      withTx(t.kasse.db, (tx) =>
        ledger.post(tx, {
          mode: 'test',
          merchantId,
          kind: 'x',
          dedupeKey: 'unbalanced',
          lines: [
            { account: 'a', currency: USD, amount: 1n },
            { account: 'b', currency: USD, amount: -2n },
          ],
        }),
      ),
      UnbalancedPostingError,
    );
    const row = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('dedupe_key', '=', 'unbalanced')
      .executeTakeFirst();
    assert.equal(row, undefined);
  });

  test('the database refuses to commit an unbalanced transaction written around the code', async () => {
    await assert.rejects(
      withTx(t.kasse.db, async (tx) => {
        await sql`INSERT INTO ledger_transactions (id, mode, kind, dedupe_key, created_at) VALUES ('led_RAW', 'test', 'raw', 'raw', now())`.execute(
          tx,
        );
        await sql`INSERT INTO ledger_entries (transaction_id, account, currency, amount) VALUES ('led_RAW', 'a', 'USD', 10), ('led_RAW', 'b', 'USD', -9)`.execute(
          tx,
        );
      }),
      /does not balance/,
    );
  });

  test('entries are append-only', async () => {
    await withTx(t.kasse.db, (tx) =>
      ledger.post(tx, {
        mode: 'test',
        merchantId: null,
        kind: 'x',
        dedupeKey: 'fixed',
        lines: [
          { account: 'a', currency: USD, amount: 3n },
          { account: 'b', currency: USD, amount: -3n },
        ],
      }),
    );
    await assert.rejects(
      sql`UPDATE ledger_entries SET amount = 4 WHERE account = 'a'`.execute(t.kasse.db),
      /append-only/,
    );
    await assert.rejects(sql`DELETE FROM ledger_entries WHERE account = 'a'`.execute(t.kasse.db), /append-only/);
  });
});

describe('payment credits', () => {
  test('a credit splits price into merchant net and fee, holds the coins, and lands exactly once', async () => {
    const paymentId = await newPayment();
    const credit = {
      mode: 'test' as const,
      merchantId,
      paymentId,
      seq: 1,
      priceCents: 1234,
      feeBps: 100,
      token: 'base:usdc',
      amount: 12_340_000n,
    };
    const before = await merchantBalance();
    const id = await withTx(t.kasse.db, (tx) => ledger.creditPayment(tx, credit));
    assert.ok(id);
    assert.equal(await withTx(t.kasse.db, (tx) => ledger.creditPayment(tx, credit)), null, 'same dedupe key: ignored');
    assert.equal((await merchantBalance()) - before, 1222n);
    const entries = await t.kasse.db
      .selectFrom('ledger_entries')
      .select(['account', 'currency', 'amount'])
      .where('transaction_id', '=', id!)
      .orderBy('id')
      .execute();
    assert.deepEqual(entries, [
      { account: accounts.settlement('test'), currency: USD, amount: '1234' },
      { account: accounts.merchant('test', merchantId), currency: USD, amount: '-1222' },
      { account: accounts.fees('test'), currency: USD, amount: '-12' },
      { account: accounts.custody('test', merchantId), currency: 'base:usdc', amount: '12340000' },
      { account: accounts.payers('test'), currency: 'base:usdc', amount: '-12340000' },
    ]);
    const { custody } = await ledger.merchantBalance({ mode: 'test', merchantId });
    assert.ok(custody.some((c) => c.token === 'base:usdc' && c.amount >= 12_340_000n));
  });

  test('a credit without coins is refused naming its payment, and posts nothing', async () => {
    const paymentId = await newPayment();
    const before = await merchantBalance();
    for (const amount of [0n, -1n]) {
      await assert.rejects(
        withTx(t.kasse.db, (tx) =>
          ledger.creditPayment(tx, {
            mode: 'test',
            merchantId,
            paymentId,
            seq: 1,
            priceCents: 1234,
            feeBps: 100,
            token: 'base:usdc',
            amount,
          }),
        ),
        (err: Error) => err.name === 'ImpossibleState' && err.message.includes(`payment ${paymentId}`),
      );
    }
    assert.equal(await merchantBalance(), before);
    const posted = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('payment_id', '=', paymentId)
      .execute();
    assert.deepEqual(posted, []);
  });

  test('concurrent credits with one dedupe key post once', async () => {
    const paymentId = await newPayment();
    const credit = {
      mode: 'test' as const,
      merchantId,
      paymentId,
      seq: 1,
      priceCents: 500,
      feeBps: 0,
      token: 'base:usdc',
      amount: 5_000_000n,
    };
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => withTx(t.kasse.db, (tx) => ledger.creditPayment(tx, credit))),
    );
    const posted = results.filter((r) => r.status === 'fulfilled' && r.value !== null);
    assert.equal(posted.length, 1);
    const rows = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select('id')
      .where('payment_id', '=', paymentId)
      .execute();
    assert.equal(rows.length, 1);
  });

  test('a reversal negates the credit exactly, once; a later credit (seq 2) is a new posting', async () => {
    const paymentId = await newPayment();
    const before = await merchantBalance();
    const credit = {
      mode: 'test' as const,
      merchantId,
      paymentId,
      seq: 1,
      priceCents: 10_000,
      feeBps: 250,
      token: 'ethereum:eth',
      amount: 5n * 10n ** 18n,
    };
    await withTx(t.kasse.db, (tx) => ledger.creditPayment(tx, credit));
    assert.equal((await merchantBalance()) - before, 9750n);
    const rev = await withTx(t.kasse.db, (tx) => ledger.reversePaymentCredit(tx, paymentId, 1, 'payment_reorg'));
    assert.ok(rev);
    assert.equal(
      await withTx(t.kasse.db, (tx) => ledger.reversePaymentCredit(tx, paymentId, 1, 'payment_reorg')),
      null,
    );
    assert.equal(await merchantBalance(), before);
    const original = await t.kasse.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('dedupe_key', '=', `payment:${paymentId}:credit:1`)
      .executeTakeFirstOrThrow();
    const reversal = await t.kasse.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('id', '=', rev!)
      .executeTakeFirstOrThrow();
    assert.equal(reversal.reverses, original.id);
    const sums = await sql<{ account: string; currency: string; sum: string }>`
      SELECT account, currency, sum(amount) AS sum FROM ledger_entries WHERE transaction_id IN (${original.id}, ${rev}) GROUP BY 1, 2`.execute(
      t.kasse.db,
    );
    assert.ok(sums.rows.every((r) => r.sum === '0'));
    await withTx(t.kasse.db, (tx) => ledger.creditPayment(tx, { ...credit, seq: 2 }));
    assert.equal((await merchantBalance()) - before, 9750n);
    assert.equal(
      await withTx(t.kasse.db, (tx) => ledger.reversePaymentCredit(tx, paymentId, 3, 'payment_refund')),
      null,
      'nothing to reverse',
    );
  });
});
