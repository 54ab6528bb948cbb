/**
 * Row types of the capture module's tables (migrations/), merged into Kasse's `Database` type. Only store.ts queries
 * them.
 */
import type { ColumnType } from 'kysely';
import type { Numeric, OutboundColumns, Timestamp } from '../../db/schema.ts';

/** authorizing: its authorize transfer is on its way; authorized: locked in escrow; captured: all of it taken;
 * released: the rest went back to the payer; failed: the authorize transfer failed (the payer may sign again). */
export type HoldStatus = 'authorizing' | 'authorized' | 'captured' | 'released' | 'failed';
/** Who released a hold: a void the merchant asked for, the void at `capture_before`, or the payer's reclaim. */
export type HoldRelease = 'void' | 'deadline' | 'reclaimed';
export type HoldOperationKind = 'capture' | 'void';
export type HoldOperationStatus = OutboundColumns['status'];

export interface HoldsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  payment_id: string;
  attempt_id: string;
  chain: string;
  token: string;
  amount: Numeric;
  captured: ColumnType<string, string | undefined, string>;
  payer: string | null;
  reference: string | null;
  terms: ColumnType<unknown, string | null, never>;
  simulated: boolean;
  capture_before: Timestamp;
  refund_before: Timestamp;
  status: HoldStatus;
  released_by: HoldRelease | null;
  error: string | null;
  created_at: Timestamp;
  authorized_at: Timestamp | null;
  released_at: Timestamp | null;
}

/** A capture or void: an outbound transfer from the escrow. */
export interface HoldOperationsTable extends OutboundColumns {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  hold_id: string;
  payment_id: string;
  kind: HoldOperationKind;
  amount: Numeric;
  amount_cents: number | null;
  reason: 'merchant' | 'deadline' | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    holds: HoldsTable;
    hold_operations: HoldOperationsTable;
  }
}
