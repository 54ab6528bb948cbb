/** Row types of the webhooks module's tables (migrations/), merged into Kasse's `Database` type. */
import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../../db/schema.ts';
import type { AttemptOutcome } from './http-client.ts';

export interface EventsTable {
  id: string;
  seq: Generated<bigint>;
  merchant_id: string;
  mode: 'test' | 'live';
  type: string;
  ordering_key: string;
  destination: string | null;
  /** json (text kept as written): insert a JSON string, read back a parsed value. */
  data: Json;
  created_at: Timestamp;
}

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  event_seq: bigint | string;
  merchant_id: string;
  mode: 'test' | 'live';
  ordering_key: string;
  url: string;
  status: Generated<'pending' | 'delivered' | 'failed'>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  lease_token: string | null;
  last_attempt_at: Timestamp | null;
  last_http_status: number | null;
  last_error: string | null;
  delivered_at: Timestamp | null;
  created_at: Timestamp;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  started_at: Timestamp;
  duration_ms: number;
  outcome: AttemptOutcome;
  http_status: number | null;
  error: string | null;
  response_body: string | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    events: EventsTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
  }
}
