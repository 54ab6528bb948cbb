/** Row type of the audit log (created by users/migrations/0011_dashboard.ts), merged into Kasse's `Database` type. */
import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../../db/schema.ts';

/** The audit log (src/modules/audit). */
export interface AuditLogTable {
  seq: Generated<bigint>;
  merchant_id: string | null;
  mode: 'test' | 'live' | null;
  at: Timestamp;
  actor_type: 'user' | 'key' | 'operator' | 'anonymous';
  actor_id: string | null;
  actor_label: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  details: Json | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    audit_log: AuditLogTable;
  }
}
