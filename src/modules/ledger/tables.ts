/**
 * Row types of the ledger's tables, merged into Kasse's `Database` type. Their migrations were released with other
 * modules' tables: payments/migrations/0002_payments.ts and invoices/migrations/0012_statements_invoices.ts.
 */
import type { ColumnType, Generated } from 'kysely';
import type { Numeric, Timestamp } from '../../db/schema.ts';

export interface LedgerTransactionsTable {
  id: string;
  mode: 'test' | 'live';
  merchant_id: string | null;
  kind: string;
  payment_id: string | null;
  dedupe_key: string;
  reverses: string | null;
  created_at: Timestamp;
  /** The coin a payment posting concerns (migration 0012). */
  token: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface LedgerEntriesTable {
  id: Generated<bigint>;
  transaction_id: string;
  account: string;
  currency: string;
  amount: Numeric;
}

/** Balance of an account at an instant long past (migration 0012). */
export interface LedgerCheckpointsTable {
  account: string;
  currency: string;
  at: Timestamp;
  balance: ColumnType<string, string | bigint, string | bigint>;
}

declare module '../../db/schema.ts' {
  interface Database {
    ledger_transactions: LedgerTransactionsTable;
    ledger_entries: LedgerEntriesTable;
    ledger_checkpoints: LedgerCheckpointsTable;
  }
}
