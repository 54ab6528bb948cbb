/** Row type of the outgoing transfers' table (migrations/), merged into Kasse's `Database` type. */
import type { Numeric, OutboundColumns } from '../../db/schema.ts';

/** An outgoing transfer (migration 0007_transfers; src/modules/transfers). */
export interface TransfersTable extends OutboundColumns {
  id: string;
  mode: 'test' | 'live';
  purpose: string;
  chain: string;
  token: string;
  destination: string;
  amount: Numeric;
  simulated: boolean;
}

declare module '../../db/schema.ts' {
  interface Database {
    transfers: TransfersTable;
  }
}
