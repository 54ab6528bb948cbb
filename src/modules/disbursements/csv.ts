/**
 * A disbursement from a CSV file, as owners upload it on the dashboard: one payout per row, columns `destination`,
 * `usd_cents`, `label` (label optional; a first row naming the columns is skipped). Every row is checked with the
 * API's rules so the page can show each row's problems before anything is created.
 */
import { parse } from 'csv-parse/sync';
import { DESTINATION_PATTERN, DISBURSEMENT_LIMITS as L, type CreateDisbursementInput } from './schema.ts';
import { textLength } from '../../core/text.ts';

export interface CsvRow {
  /** Line in the file, from 1. */
  line: number;
  destination: string;
  usdCents: string;
  label: string;
  /** What is wrong with the row, for people; empty when it is good. */
  errors: string[];
}

export interface ParsedCsv {
  rows: CsvRow[];
  /** Problems with the file as a whole (unreadable, empty, too many rows). */
  errors: string[];
  /** The sum of the rows' cents that are whole numbers (the batch's total when every row is good). */
  totalUsdCents: number;
  /** The items, when the file and every row are good. */
  items: CreateDisbursementInput['items'] | null;
}

const DESTINATION = new RegExp(DESTINATION_PATTERN);

/** The line (from 1) where a quote opens a field that the file never closes. */
function unclosedQuoteLine(text: string): number {
  let line = 1;
  let opened = 1;
  let quoted = false;
  let fieldStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') i++;
      else if (c === '"') quoted = false;
      else if (c === '\n') line++;
      continue;
    }
    if (c === '"' && fieldStart) {
      quoted = true;
      opened = line;
    }
    if (c === '\n') line++;
    fieldStart = c === ',' || c === '\n' || (fieldStart && (c === ' ' || c === '\t' || c === '\r'));
  }
  return opened;
}

/** Why csv-parse refused the file, in words, with the line. */
function unreadable(text: string, err: Error & { code?: string; lines?: number }): string {
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return `Line ${unclosedQuoteLine(text)}: a quote (") opens a field that is never closed. Close the field with a second quote, or remove the quote.`;
    case 'INVALID_OPENING_QUOTE':
    case 'CSV_INVALID_OPENING_QUOTE':
      return `Line ${err.lines}: a quote (") is inside a field that does not start with one. Put the whole field in quotes and write a quote inside it twice (""), or remove the quote.`;
    case 'CSV_INVALID_CLOSING_QUOTE':
    case 'CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE':
      return `Line ${err.lines}: text follows the closing quote of a field. A quoted field ends with its quote, then a comma or the end of the line.`;
    default:
      return err.lines
        ? `Line ${err.lines} is not readable as CSV: check its commas and quotes.`
        : 'The file is not readable as CSV: check its commas and quotes.';
  }
}

export function parseDisbursementCsv(text: string): ParsedCsv {
  let records: Array<{ record: string[]; info: { lines: number } }>;
  try {
    records = parse(text, {
      relax_column_count: true,
      skip_empty_lines: true,
      trim: true,
      bom: true,
      info: true,
    }) as unknown as typeof records;
  } catch (err) {
    return { rows: [], totalUsdCents: 0, errors: [unreadable(text, err as Error)], items: null };
  }
  const first = records[0]?.record;
  const header = first !== undefined && first[0]?.toLowerCase() === 'destination';
  const rows: CsvRow[] = records.slice(header ? 1 : 0).map(({ record: cells, info }) => {
    const [destination = '', usdCents = '', label = '', ...extra] = cells;
    const errors: string[] = [];
    if (!DESTINATION.test(destination)) errors.push('destination must be 0x and 40 hex digits');
    if (!/^\d{1,9}$/.test(usdCents) || Number(usdCents) < L.centsMin || Number(usdCents) > L.centsMax) {
      errors.push(`usd_cents must be a whole number of cents from ${L.centsMin} to ${L.centsMax}`);
    }
    if (textLength(label) > L.labelMax) errors.push(`label must be at most ${L.labelMax} characters`);
    if (extra.some((c) => c !== '')) errors.push('a row has three columns: destination, usd_cents, label');
    return { line: info.lines, destination, usdCents, label, errors };
  });
  const errors: string[] = [];
  if (rows.length === 0) errors.push('The file has no payouts.');
  if (rows.length > L.itemsMax)
    errors.push(`A disbursement holds at most ${L.itemsMax} payouts; the file has ${rows.length}.`);
  const good = errors.length === 0 && rows.every((r) => r.errors.length === 0);
  return {
    rows,
    errors,
    totalUsdCents: rows.reduce((s, r) => s + (/^\d{1,9}$/.test(r.usdCents) ? Number(r.usdCents) : 0), 0),
    items: good
      ? rows.map((r) => ({
          destination: r.destination,
          usd_cents: Number(r.usdCents),
          ...(r.label ? { label: r.label } : {}),
        }))
      : null,
  };
}
