/**
 * Statement checks any suite can run on a merchant: for every month from the merchant's first posting or event to
 * now, the reconciliation gap is 0, the balance identity holds, and each month opens at the previous one's closing.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Mode } from '../../src/chains/types.ts';
import type { Kasse } from '../../src/kasse.ts';
import type { Statement } from '../../src/modules/statements/service.ts';

/** `YYYY-MM` of every UTC month from `first` to `last`, in order. */
export function monthsBetween(first: Date, last: Date): string[] {
  const out: string[] = [];
  for (let y = first.getUTCFullYear(), m = first.getUTCMonth(); y < last.getUTCFullYear() || (y === last.getUTCFullYear() && m <= last.getUTCMonth()); m === 11 ? (y++, (m = 0)) : m++) {
    out.push(`${y}-${String(m + 1).padStart(2, '0')}`);
  }
  return out;
}

/** What payouts took from the balance in a statement (releases less failures given back). */
export function payoutsTaken(s: Statement): number {
  return s.opening_balance_usd_cents + s.credits.net_usd_cents + s.conversions.net_usd_cents - s.reversals.net_usd_cents - s.closing_balance_usd_cents;
}

/** Checks every month of the merchant's statements and returns them, oldest first. */
export async function assertStatementsReconcile(kasse: Kasse, mode: Mode, merchantId: string, opts: { payoutsTaken?: (month: string) => number } = {}): Promise<Statement[]> {
  const { rows } = await sql<{ first: Date | null }>`
    SELECT least((SELECT min(created_at) FROM ledger_transactions WHERE merchant_id = ${merchantId} AND mode = ${mode}),
                 (SELECT min(created_at) FROM events WHERE merchant_id = ${merchantId} AND mode = ${mode})) AS first`.execute(kasse.db);
  const first = rows[0]?.first ?? kasse.clock.now();
  const out: Statement[] = [];
  for (const month of monthsBetween(first, kasse.clock.now())) {
    const s = await kasse.statements.get(mode, merchantId, month);
    assert.equal(s.reconciliation_gap_usd_cents, 0, `${month}: reconciliation gap`);
    assert.equal(payoutsTaken(s), opts.payoutsTaken?.(month) ?? 0, `${month}: opening + credits + conversions − reversals − payouts = closing`);
    const previous = out[out.length - 1];
    if (previous) assert.equal(s.opening_balance_usd_cents, previous.closing_balance_usd_cents, `${month} opens at the previous month's closing`);
    else assert.equal(s.opening_balance_usd_cents, 0);
    out.push(s);
  }
  return out;
}

/** `assertStatementsReconcile` for every merchant of the database in both modes (a suite's last test). */
export async function assertEveryMerchantReconciles(kasse: Kasse): Promise<number> {
  const merchants = await kasse.db.selectFrom('merchants').select('id').execute();
  for (const { id } of merchants) for (const mode of ['test', 'live'] as const) await assertStatementsReconcile(kasse, mode, id);
  return merchants.length;
}
