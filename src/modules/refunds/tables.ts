/**
 * Row type of the refunds module's table, merged into Kasse's `Database` type. Its migration was released with the
 * payment tables (payments/migrations/0002_payments.ts); only store.ts queries it.
 */
import type { Numeric, Timestamp } from '../../db/schema.ts';

export interface RefundsTable {
  id: string;
  payment_id: string;
  attempt_id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  status: 'pending' | 'sent' | 'failed';
  destination: string;
  token: string;
  amount: Numeric;
  tx_hash: string | null;
  note: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    refunds: RefundsTable;
  }
}
