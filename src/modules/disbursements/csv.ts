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
  /** The items, when the file and every row are good. */
  items: CreateDisbursementInput['items'] | null;
}

const DESTINATION = new RegExp(DESTINATION_PATTERN);

export function parseDisbursementCsv(text: string): ParsedCsv {
  let records: string[][];
  try {
    records = parse(text, { relax_column_count: true, skip_empty_lines: true, trim: true, bom: true }) as string[][];
  } catch (err) {
    return { rows: [], errors: [`The file is not readable CSV: ${(err as Error).message}`], items: null };
  }
  const first = records[0];
  const header = first !== undefined && first[0]?.toLowerCase() === 'destination';
  const rows: CsvRow[] = records.slice(header ? 1 : 0).map((cells, i) => {
    const [destination = '', usdCents = '', label = '', ...extra] = cells;
    const errors: string[] = [];
    if (!DESTINATION.test(destination)) errors.push('destination must be 0x and 40 hex digits');
    if (!/^\d{1,9}$/.test(usdCents) || Number(usdCents) < L.centsMin || Number(usdCents) > L.centsMax) {
      errors.push(`usd_cents must be a whole number of cents from ${L.centsMin} to ${L.centsMax}`);
    }
    if (textLength(label) > L.labelMax) errors.push(`label must be at most ${L.labelMax} characters`);
    if (extra.some((c) => c !== '')) errors.push('a row has three columns: destination, usd_cents, label');
    return { line: i + 1 + (header ? 1 : 0), destination, usdCents, label, errors };
  });
  const errors: string[] = [];
  if (rows.length === 0) errors.push('The file has no payouts.');
  if (rows.length > L.itemsMax) errors.push(`A disbursement holds at most ${L.itemsMax} payouts; the file has ${rows.length}.`);
  const good = errors.length === 0 && rows.every((r) => r.errors.length === 0);
  return {
    rows,
    errors,
    items: good ? rows.map((r) => ({ destination: r.destination, usd_cents: Number(r.usdCents), ...(r.label ? { label: r.label } : {}) })) : null,
  };
}
