/** Row types of the disbursements module's tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType } from 'kysely';
import type { Numeric, Timestamp } from '../../db/schema.ts';
import type { DisbursementStatus, PayoutStatus } from './schema.ts';

/** Disbursements (migration 0020_disbursements). */
export interface DisbursementsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  title: string;
  token: string;
  status: DisbursementStatus;
  total_usd_cents: ColumnType<string, string | number | bigint, string | number | bigint>;
  item_count: number;
  approvals_required: number;
  approval_mac: string | null;
  created_by: string;
  created_at: Timestamp;
  approved_at: Timestamp | null;
  released_at: Timestamp | null;
  released_by: string | null;
  cancelled_at: Timestamp | null;
  completed_at: Timestamp | null;
}

export interface DisbursementItemsTable {
  disbursement_id: string;
  item_no: number;
  destination: string;
  usd_cents: number;
  amount: Numeric;
  label: string | null;
  payout_id: string | null;
  payout_status: PayoutStatus | null;
  tx_hash: string | null;
  error: string | null;
  sent_at: Timestamp | null;
  settled_at: Timestamp | null;
}

export interface DisbursementApprovalsTable {
  disbursement_id: string;
  user_id: string;
  approved_at: Timestamp;
  digest: string;
}

declare module '../../db/schema.ts' {
  interface Database {
    disbursements: DisbursementsTable;
    disbursement_items: DisbursementItemsTable;
    disbursement_approvals: DisbursementApprovalsTable;
  }
}
