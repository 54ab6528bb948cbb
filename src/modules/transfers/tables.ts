/** Row type of the outgoing transfers' table (migrations/), merged into Kasse's `Database` type. */
import type { Numeric, Timestamp } from '../../db/schema.ts';

/** An outgoing transfer (migration 0007_transfers; src/modules/transfers). */
export interface TransfersTable {
  id: string;
  mode: 'test' | 'live';
  purpose: string;
  chain: string;
  token: string;
  destination: string;
  amount: Numeric;
  status: 'pending' | 'sent' | 'failed';
  simulated: boolean;
  tx_hash: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    transfers: TransfersTable;
  }
}
