/**
 * Held money: coins received for a payment that are not credited to the merchant (an underpayment not accepted,
 * late money, a wrong asset, a surplus beyond what a credit took). They sit in the merchant's suspense account, and
 * their US cents value at the rate of their attempt in the merchant's held account, until a credit, a refund or a
 * reorg takes them out.
 *
 * The payment side says what should be held now (`HeldLot`s, computed from its deposits, credit and refunds); this
 * posts the difference from what the ledger holds for the payment, so the suspense balance of a payment always equals
 * what is received and not credited or returned. Callers hold the payment's row lock, so two syncs of one payment
 * never race. Posting rules: docs/ledger.md.
 */
import { sql } from 'kysely';
import type { Mode } from '../../core/mode.ts';
import type { Tx } from '../../db/index.ts';
import { accounts, USD, type LedgerLine, type LedgerService } from './ledger.ts';

/** Coins of one token held for a payment, and their value in US cents at the rate of their attempt. */
export interface HeldLot {
  token: string;
  amount: bigint;
  valueCents: bigint;
}

export interface HeldTarget {
  mode: Mode;
  merchantId: string;
  paymentId: string;
  /** What should be held now; tokens absent hold nothing. */
  lots: HeldLot[];
}

/**
 * Posts the change from what the ledger holds for the payment to `target` (kind `payment_hold`, key
 * `payment:<id>:hold:<n>`); returns the transaction id, or null when nothing changed.
 */
export async function syncHeld(ledger: LedgerService, tx: Tx, target: HeldTarget): Promise<string | null> {
  const { mode, merchantId, paymentId } = target;
  const suspense = accounts.suspense(mode, merchantId);
  const held = accounts.held(mode, merchantId);
  // What is held now per account and currency, and (the row without an account) how many hold postings exist.
  const { rows } = await sql<{ account: string | null; currency: string | null; sum: string }>`
    SELECT e.account, e.currency, sum(e.amount)::text AS sum
    FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
    WHERE t.payment_id = ${paymentId} AND t.kind = 'payment_hold'
    GROUP BY 1, 2
    UNION ALL
    SELECT NULL, NULL, count(*)::text FROM ledger_transactions WHERE payment_id = ${paymentId} AND kind = 'payment_hold'`.execute(
    tx,
  );
  const current = new Map(
    rows.filter((r) => r.account !== null).map((r) => [`${r.account} ${r.currency}`, BigInt(r.sum)]),
  );
  const postings = Number(rows.find((r) => r.account === null)?.sum ?? 0);

  const want = new Map<string, bigint>();
  let wantValue = 0n;
  for (const lot of target.lots) {
    want.set(lot.token, (want.get(lot.token) ?? 0n) + lot.amount);
    wantValue += lot.valueCents;
  }
  const tokens = new Set([...want.keys(), ...rows.filter((r) => r.account === suspense).map((r) => r.currency!)]);
  const lines: LedgerLine[] = [];
  for (const token of [...tokens].sort()) {
    const delta = (want.get(token) ?? 0n) - (current.get(`${suspense} ${token}`) ?? 0n);
    if (delta === 0n) continue;
    lines.push({ account: suspense, currency: token, amount: delta });
    lines.push({ account: accounts.payers(mode), currency: token, amount: -delta });
  }
  const valueDelta = wantValue - -(current.get(`${held} ${USD}`) ?? 0n);
  if (valueDelta !== 0n) {
    lines.push({ account: accounts.settlement(mode), currency: USD, amount: valueDelta });
    lines.push({ account: held, currency: USD, amount: -valueDelta });
  }
  if (lines.length === 0) return null;
  const n = postings + 1;
  return ledger.post(tx, {
    mode,
    merchantId,
    kind: 'payment_hold',
    paymentId,
    dedupeKey: `payment:${paymentId}:hold:${n}`,
    lines,
  });
}
