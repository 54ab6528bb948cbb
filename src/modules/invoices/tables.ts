/** Row types of the tax invoices' tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType } from 'kysely';
import type { Json, Timestamp } from '../../db/schema.ts';

/** GST tax invoices (migration 0012_statements_invoices). Amounts in paise. */
export interface TaxInvoicesTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  payment_id: string;
  number: string;
  financial_year: string;
  seq: number;
  issued_at: Timestamp;
  customer_name: string | null;
  customer_tax_id: string | null;
  customer_state_code: string | null;
  place_of_supply: 'intra' | 'inter';
  currency: 'INR';
  fx_rate: string;
  fx_source: string;
  fx_date: ColumnType<string, string, string>;
  usd_cents: number;
  total: ColumnType<bigint, bigint | string, bigint | string>;
  taxable: ColumnType<bigint, bigint | string, bigint | string>;
  cgst: ColumnType<bigint, bigint | string, bigint | string>;
  sgst: ColumnType<bigint, bigint | string, bigint | string>;
  igst: ColumnType<bigint, bigint | string, bigint | string>;
  tax_rate_bps: number;
  tax_inclusive: boolean;
  sac: string | null;
  description: string | null;
  seller: Json;
  created_at: Timestamp;
}

/** Last invoice number issued per merchant, mode and financial year. */
export interface TaxInvoiceCountersTable {
  merchant_id: string;
  mode: 'test' | 'live';
  financial_year: string;
  last_number: number;
}

declare module '../../db/schema.ts' {
  interface Database {
    tax_invoices: TaxInvoicesTable;
    tax_invoice_counters: TaxInvoiceCountersTable;
  }
}
