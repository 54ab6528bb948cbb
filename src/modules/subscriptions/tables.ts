/**
 * Row types of the subscriptions module's tables (migrations/), merged into Kasse's `Database` type. Only store.ts
 * queries them.
 */
import type { Generated } from 'kysely';
import type { Json, Timestamp } from '../../db/schema.ts';
import type { Interval } from './calendar.ts';
import type { CancellationReason, SubscriptionStatus } from './model.ts';

/** Subscriptions (migration 0018_subscriptions). Times other than created_at/updated_at/run_at are on the subscription's clock. */
export interface SubscriptionsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  customer_email: string;
  customer_name: string | null;
  title: string;
  amount_usd_cents: number;
  interval: Interval;
  interval_count: number;
  grace_days: number;
  status: SubscriptionStatus;
  started_at: Timestamp;
  next_due_at: Timestamp;
  periods_invoiced: Generated<number>;
  periods_paid: Generated<number>;
  last_payment_id: string | null;
  success_url: string | null;
  locale: string | null;
  metadata: Json;
  cancelled_at: Timestamp | null;
  cancellation_reason: CancellationReason | null;
  clock_offset_ms: Generated<bigint>;
  run_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SubscriptionInvoicesTable {
  payment_id: string;
  subscription_id: string;
  period: number;
  seq: number;
  due_at: Timestamp;
  grace_ends_at: Timestamp;
  issued_at: Timestamp;
  check_at: Timestamp | null;
  paid: Generated<boolean>;
}

declare module '../../db/schema.ts' {
  interface Database {
    subscriptions: SubscriptionsTable;
    subscription_invoices: SubscriptionInvoicesTable;
  }
}
