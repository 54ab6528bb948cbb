/**
 * A statement as a download: CSV (one table, amounts as US dollars with two decimals, coin amounts exact) and PDF
 * (A4, coin amounts rounded for reading). Pure functions of the Statement object and the names of its mode's coins
 * (chains/names.ts), so any page or email can offer them.
 */
import { coinName, type CoinNames } from '../../chains/names.ts';
import type { Mode } from '../../core/mode.ts';
import { formatCents, readableAmount } from '../../core/money.ts';
import { drawBrand, newPdf, pdfBytes, rows, type PdfBrand } from '../../core/pdf.ts';
import type { Statement } from './service.ts';
import { MONTHS } from '../../core/dates.ts';

/** What names a statement's coins: the registry and the statement's mode. */
export interface StatementCoins {
  chains: CoinNames;
  mode: Mode;
}

/** "1,234.56" (negative "-1,234.56") for cents. */
export function usd(cents: number): string {
  const [whole, frac] = formatCents(cents).split('.');
  const sign = whole!.startsWith('-') ? '-' : '';
  return `${sign}${whole!.replace('-', '').replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${frac}`;
}

/**
 * One CSV field: quoted when needed; text that a spreadsheet would run as a formula is prefixed with ' (a plain
 * negative amount such as -64.35 is a number, left as it is).
 */
function field(v: string | number | null): string {
  if (v === null) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s) && !/^-\d+(\.\d+)?$/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** "$1,234.56", "−$19.80" for cents (a true minus sign). */
export function dollars(cents: number): string {
  return `${cents < 0 ? '−' : ''}$${usd(Math.abs(cents))}`;
}

/** What payouts took from the balance in the month: releases less failed payouts given back. */
export function payoutsTaken(s: Statement): number {
  return (
    s.opening_balance_usd_cents +
    s.credits.net_usd_cents +
    s.conversions.net_usd_cents -
    s.reversals.net_usd_cents -
    s.closing_balance_usd_cents
  );
}

/**
 * One line of the balance: opening, each movement signed as it moves the balance, closing. Opening plus the
 * movements' `cents` is the closing, so every rendering that only formats these lines adds up.
 */
export interface BalanceLine {
  /** Stable name of the line (the CSV's `item`): opening, credits, conversions, reversals, payouts, closing. */
  key: 'opening' | 'credits' | 'conversions' | 'reversals' | 'payouts' | 'closing';
  label: string;
  /** How it was made up, e.g. "value $85.00, fees $0.85". */
  detail: string | null;
  /** The number of postings behind a movement; null for a balance. */
  count: number | null;
  /** Signed US cents: a balance as it is; a movement positive when it adds to the balance, negative when it takes. */
  cents: number;
  /** A balance (opening, closing) or a movement of it. */
  kind: 'balance' | 'movement';
}

/**
 * A line's amount as people read it: a movement with its direction ("+$24.75", "−$10.00"; nothing moved is
 * "$0.00"), a balance as it is ("−$19.80" below zero). `format` writes the unsigned amount (`dollars` or `usd`).
 */
export function signedAmount(
  l: Pick<BalanceLine, 'cents' | 'kind'>,
  format: (cents: number) => string = dollars,
): string {
  const sign = l.cents < 0 ? '−' : l.kind === 'movement' && l.cents > 0 ? '+' : '';
  return `${sign}${format(Math.abs(l.cents))}`;
}

/** The balance of a statement, line by line: the one set of signed figures the page, the email, CSV and PDF show. */
export function balanceLines(s: Statement): BalanceLine[] {
  const n = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;
  return [
    {
      key: 'opening',
      label: 'Opening balance',
      detail: null,
      count: null,
      cents: s.opening_balance_usd_cents,
      kind: 'balance',
    },
    {
      key: 'credits',
      label: `Credits in stablecoins (${n(s.credits.count, 'payment')})`,
      detail: `value ${dollars(s.credits.value_usd_cents)}, fees ${dollars(s.credits.fee_usd_cents)}`,
      count: s.credits.count,
      cents: s.credits.net_usd_cents,
      kind: 'movement',
    },
    {
      key: 'conversions',
      label: `Conversions from other coins (${n(s.conversions.count, 'payment')})`,
      detail: `value ${dollars(s.conversions.value_usd_cents)}, spread ${dollars(s.conversions.swap_fee_usd_cents)}, fees ${dollars(s.conversions.fee_usd_cents)}`,
      count: s.conversions.count,
      cents: s.conversions.net_usd_cents,
      kind: 'movement',
    },
    {
      key: 'reversals',
      label: `Reversals (${n(s.reversals.count, 'refund or reorg', 'refunds and reorgs')})`,
      detail: 'credits undone, fees returned with them',
      count: s.reversals.count,
      cents: -s.reversals.net_usd_cents,
      kind: 'movement',
    },
    {
      key: 'payouts',
      label: `Payouts (${n(s.payouts.requested_count, 'payout')} released)`,
      detail: 'released, less failed payouts given back',
      count: s.payouts.requested_count,
      cents: -payoutsTaken(s),
      kind: 'movement',
    },
    {
      key: 'closing',
      label: 'Closing balance',
      detail: null,
      count: null,
      cents: s.closing_balance_usd_cents,
      kind: 'balance',
    },
  ];
}

const HEADER = ['section', 'item', 'count', 'usd', 'token', 'amount', 'destination', 'tx_hash', 'time'];

/**
 * The statement as CSV (RFC 4180, CRLF line ends, header row first). The `balance` rows are the balance lines,
 * signed (their `usd` adds up to the closing); the other sections give the statement's figures as the API does, a
 * `coin` row's item being the coin's name ("ETH on Base Sepolia") and its token and exact amount beside it.
 */
export function statementCsv(s: Statement, coins: StatementCoins): string {
  const out: Array<Array<string | number | null>> = [HEADER];
  const row = (
    section: string,
    item: string,
    count: number | null,
    cents: number | null,
    rest: Array<string | null> = [],
  ) => out.push([section, item, count, cents === null ? null : formatCents(cents), ...rest]);
  row('period', s.month, null, null, [null, null, null, null, `${s.from}/${s.to}`]);
  for (const l of balanceLines(s)) row('balance', l.key, l.count, l.cents);
  row('payments', 'gross', s.payments.count, s.payments.gross_usd_cents);
  row('credits', 'value', s.credits.count, s.credits.value_usd_cents);
  row('credits', 'fee', null, s.credits.fee_usd_cents);
  row('credits', 'net', null, s.credits.net_usd_cents);
  row('conversions', 'value', s.conversions.count, s.conversions.value_usd_cents);
  row('conversions', 'swap_fee', null, s.conversions.swap_fee_usd_cents);
  row('conversions', 'fee', null, s.conversions.fee_usd_cents);
  row('conversions', 'net', null, s.conversions.net_usd_cents);
  row('reversals', 'net', s.reversals.count, s.reversals.net_usd_cents);
  row('payouts', 'requested', s.payouts.requested_count, s.payouts.requested_usd_cents);
  row('payouts', 'sent', s.payouts.count, s.payouts.usd_cents);
  row('clawback', 'change', null, s.clawback_change_usd_cents);
  row('held', 'value', s.held.count, s.held.value_usd_cents);
  row('reconciliation', 'gap', null, s.reconciliation_gap_usd_cents);
  for (const c of s.by_coin)
    row('coin', coinName(coins.chains, coins.mode, c.token), c.payments, c.value_usd_cents, [
      c.token,
      c.received_display,
    ]);
  for (const p of s.payouts.items)
    row('payout', p.id, null, p.usd_cents, [p.token, p.amount_display, p.destination, p.tx_hash, p.sent_at]);
  return `${out.map((r) => r.map(field).join(',')).join('\r\n')}\r\n`;
}

/** "March 2026" for "2026-03". */
export function monthName(month: string): string {
  const [y, m] = month.split('-');
  return `${MONTHS[Number(m) - 1]} ${y}`;
}

/**
 * The statement as an A4 PDF. The balance reads line by line with each line's make-up under it, the opening and
 * closing balances in bold (the closing under a rule); coin amounts are rounded for reading ("≈", as on the page),
 * and the CSV has them exact.
 */
export async function statementPdf(
  s: Statement,
  who: StatementCoins & { merchantName: string; brand?: PdfBrand | null },
): Promise<Buffer> {
  const doc = await newPdf({ title: `Statement ${s.month}`, author: who.merchantName });
  drawBrand(doc, who.brand);
  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;
  doc
    .font('bold')
    .fontSize(16)
    .text(`Statement — ${monthName(s.month)}`);
  doc.font('regular').fontSize(10).text(who.merchantName);
  doc
    .fontSize(9)
    .fillColor('#555')
    .text(
      `${s.from.slice(0, 10)} to ${s.to.replace('T', ' ').slice(0, 16)} UTC · amounts in US dollars${who.mode === 'test' ? ' · TEST MODE' : ''}`,
    );
  doc.fillColor('black').moveDown();
  const section = (title: string) => {
    doc.moveDown(0.5).font('bold').fontSize(11).text(title, left);
    doc
      .moveTo(left, doc.y + 1)
      .lineTo(left + width, doc.y + 1)
      .strokeColor('#999')
      .stroke();
    doc.moveDown(0.3);
  };
  section('Balance');
  rows(
    doc,
    balanceLines(s).map((l): [string, string, { bold: boolean; rule: boolean; detail: string | null }] => [
      l.label,
      signedAmount(l, usd),
      { bold: l.kind === 'balance', rule: l.key === 'closing', detail: l.detail },
    ]),
    { size: 10 },
  );
  section('Activity');
  rows(doc, [
    [`Payments credited (${s.payments.count})`, usd(s.payments.gross_usd_cents)],
    ['Change of the balance below zero (clawback)', usd(s.clawback_change_usd_cents)],
    [`Held at the end of the period, not credited (${s.held.count})`, usd(s.held.value_usd_cents)],
    [`Payouts sent (${s.payouts.count})`, usd(s.payouts.usd_cents)],
    ['Reconciliation gap', usd(s.reconciliation_gap_usd_cents)],
  ]);
  if (s.by_coin.length > 0) {
    section('By coin');
    rows(
      doc,
      s.by_coin.map((c) => [
        `${coinName(who.chains, who.mode, c.token)} — ${c.payments} payment${c.payments === 1 ? '' : 's'}, ${readableAmount(c.received_display)} ${c.symbol} received`,
        usd(c.value_usd_cents),
      ]),
    );
  }
  if (s.payouts.items.length > 0) {
    section('Payouts sent');
    for (const p of s.payouts.items) {
      if (doc.y > doc.page.height - doc.page.margins.bottom - 40) doc.addPage();
      rows(
        doc,
        [
          [
            `${p.sent_at.slice(0, 10)} ${readableAmount(p.amount_display)} ${coinName(who.chains, who.mode, p.token)} to ${p.destination}${p.tx_hash ? ` (${p.tx_hash})` : ''}`,
            usd(p.usd_cents),
          ],
        ],
        { labelWidth: width * 0.8 },
      );
    }
  }
  const exact = [...s.by_coin.map((c) => c.received_display), ...s.payouts.items.map((p) => p.amount_display)];
  if (exact.some((a) => readableAmount(a) !== a))
    doc
      .moveDown()
      .font('regular')
      .fontSize(8)
      .fillColor('#555')
      .text('≈ Coin amounts rounded to 6 significant digits; the CSV download gives them exactly.', left);
  return pdfBytes(doc);
}
