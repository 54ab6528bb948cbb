/** Row types of the x402 module's tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType } from 'kysely';
import type { Json, Numeric, Timestamp } from '../../db/schema.ts';

/** A merchant's x402 receiving address on a network (migration 0030; src/modules/x402/). */
export interface X402PayToTable {
  merchant_id: string;
  mode: 'test' | 'live';
  chain: string;
  address_index: ColumnType<bigint, bigint | string, bigint | string>;
  address: string;
  created_at: Timestamp;
}

/** One x402 authorization being or having been settled (migration 0030; src/modules/x402/). */
export interface X402SettlementsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  chain: string;
  network: string;
  auth_key: string;
  payer: string;
  pay_to: string;
  token: string;
  amount: Numeric;
  resource: string | null;
  description: string | null;
  /** The requirements and payload settled, to submit them again after a crash (`X402Stored` of the module). */
  request: Json;
  status: 'pending' | 'settled' | 'failed';
  transaction: string | null;
  simulated: boolean;
  error: string | null;
  payment_id: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

/** A merchant's running x402 total in millionths of a dollar (migration 0030; src/modules/x402/). */
export interface X402TotalsTable {
  merchant_id: string;
  mode: 'test' | 'live';
  micro_usd: Numeric;
}

declare module '../../db/schema.ts' {
  interface Database {
    x402_pay_to: X402PayToTable;
    x402_settlements: X402SettlementsTable;
    x402_totals: X402TotalsTable;
  }
}
