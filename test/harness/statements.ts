/**
 * Statement checks any suite can run on a merchant: for every month from the merchant's first posting or event to
 * now, the reconciliation gap is 0, the balance identity holds, and each month opens at the previous one's closing.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { Mode } from '../../src/chains/types.ts';
import type { Kasse } from '../../src/kasse.ts';
import { payoutsTaken } from '../../src/modules/statements/render.ts';
import type { Statement } from '../../src/modules/statements/service.ts';

/** `YYYY-MM` of every UTC month from `first` to `last`, in order. */
export function monthsBetween(first: Date, last: Date): string[] {
  const out: string[] = [];
  const end = last.getUTCFullYear() * 12 + last.getUTCMonth();
  for (let i = first.getUTCFullYear() * 12 + first.getUTCMonth(); i <= end; i++) {
    out.push(`${Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}`);
  }
  return out;
}

/** What payouts took from the balance in a statement (releases less failures given back). */
export { payoutsTaken };

/** Checks every month of the merchant's statements and returns them, oldest first. */
export async function assertStatementsReconcile(
  kasse: Kasse,
  mode: Mode,
  merchantId: string,
  opts: { payoutsTaken?: (month: string) => number } = {},
): Promise<Statement[]> {
  const { rows } = await sql<{ first: Date | null }>`
    SELECT least((SELECT min(created_at) FROM ledger_transactions WHERE merchant_id = ${merchantId} AND mode = ${mode}),
                 (SELECT min(created_at) FROM events WHERE merchant_id = ${merchantId} AND mode = ${mode})) AS first`.execute(
    kasse.db,
  );
  const first = rows[0]?.first ?? kasse.clock.now();
  const out: Statement[] = [];
  for (const month of monthsBetween(first, kasse.clock.now())) {
    const s = await kasse.statements.get({ mode, merchantId }, month);
    assert.equal(s.reconciliation_gap_usd_cents, 0, `${month}: reconciliation gap`);
    assert.equal(
      payoutsTaken(s),
      opts.payoutsTaken?.(month) ?? 0,
      `${month}: opening + credits + conversions − reversals − payouts = closing`,
    );
    const previous = out[out.length - 1];
    if (previous)
      assert.equal(
        s.opening_balance_usd_cents,
        previous.closing_balance_usd_cents,
        `${month} opens at the previous month's closing`,
      );
    else assert.equal(s.opening_balance_usd_cents, 0);
    out.push(s);
  }
  return out;
}

/** `assertStatementsReconcile` for every merchant of the database in both modes (a suite's last test). */
export async function assertEveryMerchantReconciles(kasse: Kasse): Promise<number> {
  const merchants = await kasse.db.selectFrom('merchants').select('id').execute();
  for (const { id } of merchants)
    for (const mode of ['test', 'live'] as const) await assertStatementsReconcile(kasse, mode, id);
  return merchants.length;
}

/** "−$1,234.56", "+84.15", "-64.35", "0.00" as signed cents (either minus sign; "$" and "," ignored). */
export function centsOf(amount: string): number {
  const m = /^([+−-]?)\$?([\d,]+)\.(\d{2})$/.exec(amount.trim());
  assert.ok(m, `an amount: ${amount}`);
  const cents = Number(m[2]!.replace(/,/g, '')) * 100 + Number(m[3]);
  return m[1] === '−' || m[1] === '-' ? -cents : cents;
}

/** A balance as a reader adds it up: each line's label and signed cents, opening first, closing last. */
export interface ReadBalance {
  labels: string[];
  cents: number[];
}

/** Checks that opening + every movement = closing, and returns the closing. */
export function assertAddsUp(b: ReadBalance, what: string): number {
  assert.ok(b.cents.length >= 3, `${what}: an opening, movements and a closing\n${b.labels.join('\n')}`);
  const total = b.cents.slice(0, -1).reduce((s, c) => s + c, 0);
  assert.equal(total, b.cents.at(-1), `${what}: opening + each line = closing (${b.cents.join(' ')})`);
  return total;
}

/** The Balance section of a statement PDF read back with `pdftotext -layout`: every line ending in an amount. */
export function pdfBalance(text: string): ReadBalance {
  const start = /^\s*Balance\s*$/m.exec(text);
  const end = /^\s*Activity\s*$/m.exec(text);
  assert.ok(start && end, `the PDF has Balance and Activity sections\n${text}`);
  const out: ReadBalance = { labels: [], cents: [] };
  for (const line of text.slice(start.index + start[0].length, end.index).split('\n')) {
    const m = /^\s*(.*?)\s{2,}([+−-]?[\d,]+\.\d{2})\s*$/.exec(line);
    if (!m) continue;
    out.labels.push(m[1]!);
    out.cents.push(centsOf(m[2]!));
  }
  return out;
}

/** The `balance` rows of a statement CSV (simple fields, as the balance rows are). */
export function csvBalance(csv: string): ReadBalance {
  const out: ReadBalance = { labels: [], cents: [] };
  for (const row of csv.split('\r\n')) {
    const [section, item, , usd] = row.split(',');
    if (section !== 'balance') continue;
    out.labels.push(item!);
    out.cents.push(centsOf(usd!));
  }
  return out;
}
