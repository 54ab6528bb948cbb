/**
 * Row type of the table the chains layer keeps for every family (migrations/), merged into Kasse's `Database` type.
 * Only health.ts queries it.
 */
import type { Timestamp } from '../db/schema.ts';

/** How a watched network's nodes answered its watcher (migration 0029; src/chains/health.ts). */
export interface ChainHealthTable {
  mode: 'test' | 'live';
  chain: string;
  ok_at: Timestamp | null;
  failed_at: Timestamp | null;
  failing_since: Timestamp | null;
  failures: number;
  error: string | null;
}

declare module '../db/schema.ts' {
  interface Database {
    chain_health: ChainHealthTable;
  }
}
