/**
 * Row type of the rate limiter's table (created by merchants/migrations/0001_foundation.ts), merged into
 * Kasse's `Database` type.
 */
import type { Timestamp } from '../../db/schema.ts';

export interface RateLimitWindowsTable {
  key_id: string;
  window_start: Timestamp;
  used: number;
}

declare module '../../db/schema.ts' {
  interface Database {
    rate_limit_windows: RateLimitWindowsTable;
  }
}
