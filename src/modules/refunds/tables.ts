/**
 * Row type of the refunds module's table, merged into Kasse's `Database` type. Its migration was released with the
 * payment tables (payments/migrations/0002_payments.ts); only store.ts queries it.
 */
import type { Numeric, OutboundColumns } from '../../db/schema.ts';

export interface RefundsTable extends OutboundColumns {
  id: string;
  payment_id: string;
  attempt_id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  destination: string;
  token: string;
  amount: Numeric;
  note: string | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    refunds: RefundsTable;
  }
}
