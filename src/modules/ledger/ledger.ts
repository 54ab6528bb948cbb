/**
 * The double-entry ledger: every money movement is one balanced transaction of entries (debit > 0, credit < 0) per
 * currency — `USD` in cents, coins by token id in smallest units — with a unique dedupe key, so a retried or repeated
 * posting lands once. Balance is checked here and again by the database at commit; entries are append-only and a
 * mistake is undone only by a reversal. Accounts and postings: docs/ledger.md.
 */
import { sql } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import type { Clock } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import { ImpossibleState } from '../../core/errors.ts';
import { bpsOf } from '../../core/money.ts';
import type { Db, DbOrTx, Tx } from '../../db/index.ts';

export const USD = 'USD';

/** Account names. Mode is part of every name: test and live books never mix. */
export const accounts = {
  /** What Kasse owes the merchant (credit-normal): credits less reversals and payouts. */
  merchant: (mode: Mode, merchantId: string) => `${mode}:merchant:${merchantId}`,
  /** Service fees earned (credit-normal). */
  fees: (mode: Mode) => `${mode}:fees`,
  /** USD value of the coins received for credited payments (debit-normal): the asset side of merchant balances. */
  settlement: (mode: Mode) => `${mode}:settlement`,
  /** Coins held in custody for a merchant's credited payments (debit-normal, per token). */
  custody: (mode: Mode, merchantId: string) => `${mode}:custody:${merchantId}`,
  /** Counterpart of coins received from payers (credit-normal, per token). */
  payers: (mode: Mode) => `${mode}:payers`,
  /** Conversion spread earned on credits in coins that are not stablecoins (credit-normal, USD). */
  conversion: (mode: Mode) => `${mode}:conversion`,
  /** Coins received for a merchant's payments but not credited: underpaid, late, wrong asset (debit-normal, per token). */
  suspense: (mode: Mode, merchantId: string) => `${mode}:suspense:${merchantId}`,
  /** US cents value of the suspense coins at their attempt's rate, held until accepted or refunded (credit-normal). */
  held: (mode: Mode, merchantId: string) => `${mode}:held:${merchantId}`,
  /** Payouts taken from merchant balances and not yet sent (credit-normal, USD). */
  payouts: (mode: Mode) => `${mode}:payouts`,
  /** Counterpart of coins sent out by payouts (debit-normal, per token). */
  payees: (mode: Mode) => `${mode}:payees`,
};

/** Ledger transaction kinds that credit a payment, and those that reverse such a credit. */
export const CREDIT_KINDS = ['payment_credit', 'payment_conversion'] as const;
export const REVERSAL_KINDS = ['payment_reorg', 'payment_refund'] as const;

export interface LedgerLine {
  account: string;
  currency: string;
  /** Debit > 0, credit < 0; never 0. */
  amount: bigint;
}

export interface Posting {
  mode: Mode;
  merchantId: string | null;
  kind: string;
  paymentId?: string | null;
  /** Unique per business fact; a second posting with the same key is ignored. */
  dedupeKey: string;
  lines: LedgerLine[];
  reverses?: string | null;
  /** The coin the posting concerns (a credit's token), for statements by coin. */
  token?: string | null;
}

export class UnbalancedPostingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnbalancedPostingError';
  }
}

/** Throws unless `lines` has at least two non-zero lines and sums to zero in every currency. */
export function assertBalanced(lines: LedgerLine[]): void {
  if (lines.length < 2) throw new UnbalancedPostingError('a posting needs at least two lines');
  const sums = new Map<string, bigint>();
  for (const l of lines) {
    if (l.amount === 0n) throw new UnbalancedPostingError(`zero line on ${l.account}`);
    sums.set(l.currency, (sums.get(l.currency) ?? 0n) + l.amount);
  }
  for (const [currency, sum] of sums)
    if (sum !== 0n) throw new UnbalancedPostingError(`posting does not balance in ${currency} (off by ${sum})`);
}

export interface PaymentCredit {
  mode: Mode;
  merchantId: string;
  paymentId: string;
  /** Which time the payment became paid (1, 2, … after reorgs); part of the dedupe key. */
  seq: number;
  priceCents: number;
  feeBps: number;
  token: string;
  /** Coins received on the paid attempt (confirmed), smallest units. */
  amount: bigint;
  /**
   * Present when the coin is not a stablecoin: the credit is a conversion (kind `payment_conversion`) and the
   * spread of `swapFeeBps` of the price is posted to the conversion account.
   */
  conversion?: { swapFeeBps: number } | null;
}

/** A payment's credits less their reversals, in US cents (`LedgerService.paymentCredits`). */
export interface PaymentCreditTotals {
  feeUsdCents: bigint;
  swapFeeUsdCents: bigint;
  netUsdCents: bigint;
}

export interface CustodyLine {
  token: string;
  amount: bigint;
}

export class LedgerService {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** Records a balanced posting in `tx`. Returns the transaction id, or null when `dedupeKey` was already posted. */
  async post(tx: Tx, p: Posting): Promise<string | null> {
    assertBalanced(p.lines);
    assertOwnMerchant(p);
    const id = newId('led');
    const inserted = await tx
      .insertInto('ledger_transactions')
      .values({
        id,
        mode: p.mode,
        merchant_id: p.merchantId,
        kind: p.kind,
        payment_id: p.paymentId ?? null,
        dedupe_key: p.dedupeKey,
        reverses: p.reverses ?? null,
        token: p.token ?? null,
        created_at: this.clock.now(),
      })
      .onConflict((oc) => oc.column('dedupe_key').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return null;
    await tx
      .insertInto('ledger_entries')
      .values(
        p.lines.map((l) => ({
          transaction_id: id,
          account: l.account,
          currency: l.currency,
          amount: l.amount.toString(),
        })),
      )
      .execute();
    return id;
  }

  /** Posts the exact negation of the transaction posted under `originalKey` (null when that is absent or already reversed). */
  async reverse(tx: Tx, originalKey: string, p: { dedupeKey: string; kind: string }): Promise<string | null> {
    const original = await tx
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('dedupe_key', '=', originalKey)
      .executeTakeFirst();
    if (!original) return null;
    const lines = await tx
      .selectFrom('ledger_entries')
      .select(['account', 'currency', 'amount'])
      .where('transaction_id', '=', original.id)
      .orderBy('id')
      .execute();
    return this.post(tx, {
      mode: original.mode,
      merchantId: original.merchant_id,
      kind: p.kind,
      paymentId: original.payment_id,
      dedupeKey: p.dedupeKey,
      reverses: original.id,
      token: original.token,
      lines: lines.map((l) => ({ account: l.account, currency: l.currency, amount: -BigInt(l.amount) })),
    });
  }

  /**
   * Credits a paid payment: the price less the fee (and, for a conversion, the spread) to the merchant, the fee to
   * the fee account, the spread to the conversion account, and the coins into the merchant's custody.
   * Dedupe key `payment:<id>:credit:<seq>`.
   */
  async creditPayment(tx: Tx, c: PaymentCredit): Promise<string | null> {
    if (c.amount <= 0n)
      throw new ImpossibleState(`a credit must take coins into custody, not ${c.amount} ${c.token}`, {
        payment: c.paymentId,
      });
    const price = BigInt(c.priceCents);
    const fee = bpsOf(price, c.feeBps);
    const swapFee = c.conversion ? bpsOf(price, c.conversion.swapFeeBps) : 0n;
    const lines: LedgerLine[] = [
      { account: accounts.settlement(c.mode), currency: USD, amount: price },
      { account: accounts.merchant(c.mode, c.merchantId), currency: USD, amount: fee + swapFee - price },
    ];
    if (fee > 0n) lines.push({ account: accounts.fees(c.mode), currency: USD, amount: -fee });
    if (swapFee > 0n) lines.push({ account: accounts.conversion(c.mode), currency: USD, amount: -swapFee });
    lines.push({ account: accounts.custody(c.mode, c.merchantId), currency: c.token, amount: c.amount });
    lines.push({ account: accounts.payers(c.mode), currency: c.token, amount: -c.amount });
    const kind = c.conversion ? 'payment_conversion' : 'payment_credit';
    return this.post(tx, {
      mode: c.mode,
      merchantId: c.merchantId,
      kind,
      paymentId: c.paymentId,
      token: c.token,
      dedupeKey: creditKey(c.paymentId, c.seq),
      lines: lines.filter((l) => l.amount !== 0n),
    });
  }

  /** Reverses credit number `seq` of a payment (reorg or refund). */
  async reversePaymentCredit(
    tx: Tx,
    paymentId: string,
    seq: number,
    kind: 'payment_reorg' | 'payment_refund',
  ): Promise<string | null> {
    return this.reverse(tx, creditKey(paymentId, seq), { dedupeKey: `payment:${paymentId}:reversal:${seq}`, kind });
  }

  /** Balance of one account in one currency, debit-positive. */
  async accountBalance(db: DbOrTx, account: string, currency: string): Promise<bigint> {
    const row = await db
      .selectFrom('ledger_entries')
      .select(sql<string>`coalesce(sum(amount), 0)`.as('sum'))
      .where('account', '=', account)
      .where('currency', '=', currency)
      .executeTakeFirstOrThrow();
    return BigInt(row.sum);
  }

  /**
   * What each of `paymentIds` (of this merchant and mode) adds to the balance now: its credits less their reversals,
   * as the service fee, the conversion spread and the net to the merchant, in US cents. A payment never credited is
   * absent; a credited one whose credit was reversed (refund, reorg) is present with zeros.
   */
  async paymentCredits({ mode, merchantId }: Tenant, paymentIds: string[]): Promise<Map<string, PaymentCreditTotals>> {
    if (paymentIds.length === 0) return new Map();
    const { rows } = await sql<{ payment_id: string; fee: string; swap_fee: string; net: string }>`
      SELECT t.payment_id,
        -coalesce(sum(e.amount) FILTER (WHERE e.account = ${accounts.fees(mode)}), 0) AS fee,
        -coalesce(sum(e.amount) FILTER (WHERE e.account = ${accounts.conversion(mode)}), 0) AS swap_fee,
        -coalesce(sum(e.amount) FILTER (WHERE e.account = ${accounts.merchant(mode, merchantId)}), 0) AS net
      FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
      WHERE t.mode = ${mode} AND t.merchant_id = ${merchantId} AND t.payment_id = ANY(${paymentIds}::text[])
        AND t.kind = ANY(${[...CREDIT_KINDS, ...REVERSAL_KINDS]}::text[]) AND e.currency = ${USD}
      GROUP BY t.payment_id`.execute(this.db);
    return new Map(
      rows.map((r) => [
        r.payment_id,
        { feeUsdCents: BigInt(r.fee), swapFeeUsdCents: BigInt(r.swap_fee), netUsdCents: BigInt(r.net) },
      ]),
    );
  }

  /** What the merchant is owed in US cents, and the coins held for it by token. */
  async merchantBalance({ mode, merchantId }: Tenant): Promise<{ availableUsdCents: bigint; custody: CustodyLine[] }> {
    const available = -(await this.accountBalance(this.db, accounts.merchant(mode, merchantId), USD));
    const rows = await this.db
      .selectFrom('ledger_entries')
      .select(['currency', sql<string>`sum(amount)`.as('sum')])
      .where('account', '=', accounts.custody(mode, merchantId))
      .groupBy('currency')
      .orderBy('currency')
      .execute();
    return {
      availableUsdCents: available,
      custody: rows.map((r) => ({ token: r.currency, amount: BigInt(r.sum) })).filter((c) => c.amount !== 0n),
    };
  }
}

/**
 * A line on a merchant's balance belongs to a posting made for that merchant in that mode, so statements find every
 * movement of a balance among the merchant's postings.
 */
export function assertOwnMerchant(p: Pick<Posting, 'mode' | 'merchantId' | 'lines'>): void {
  for (const l of p.lines) {
    const m = /^(test|live):merchant:(.+)$/.exec(l.account);
    if (m && (m[1] !== p.mode || m[2] !== p.merchantId))
      throw new UnbalancedPostingError(`a line on ${l.account} needs a ${m[1]} posting for merchant ${m[2]}`);
  }
}

function creditKey(paymentId: string, seq: number): string {
  return `payment:${paymentId}:credit:${seq}`;
}
