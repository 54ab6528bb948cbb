/**
 * Row types of the subscriptions module's tables (migrations/), merged into Kasse's `Database` type. Only store/
 * queries them: store/subscriptions.ts (subscriptions, invoices), store/charges.ts (receivers, grants, charges).
 */
import type { ColumnType, Generated } from 'kysely';
import type { Json, Numeric, Timestamp } from '../../db/schema.ts';
import type { Interval } from './calendar.ts';
import type {
  CancellationReason,
  ChargeFailureReason,
  ChargeRowStatus,
  Collection,
  GrantRowStatus,
  SubscriptionStatus,
} from './model.ts';

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
  /** How periods are collected (migration 0038): emailed invoices, or charges under the payer's grant. */
  collection: Generated<Collection>;
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

type BigintColumn = ColumnType<bigint, bigint | string, bigint | string>;

/** A merchant's receiving address for charges on a network (migration 0038). */
export interface SubscriptionReceiversTable {
  merchant_id: string;
  mode: 'test' | 'live';
  chain: string;
  address: string;
  address_index: BigintColumn;
  created_at: Timestamp;
}

/** A payer's grant of recurring charges (migration 0038). */
export interface SubscriptionGrantsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  subscription_id: string;
  chain: string;
  token: string;
  payer: string;
  receiver: string;
  amount_per_period: Numeric;
  period_seconds: number;
  starts_at: Timestamp;
  expires_at: Timestamp;
  total: Numeric;
  key: string;
  terms: Json;
  enforcement: 'contract' | 'delegate' | 'simulated';
  funded: boolean | null;
  status: GrantRowStatus;
  error: string | null;
  charges: Generated<number>;
  charged: Generated<Numeric>;
  grant_transfer: string | null;
  revoke_transfer: string | null;
  created_at: Timestamp;
  granted_at: Timestamp | null;
  ended_at: Timestamp | null;
  updated_at: Timestamp;
}

/** One attempt to charge a period under a grant (migration 0038). */
export interface SubscriptionChargesTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  subscription_id: string;
  grant_id: string;
  period: number;
  attempt: number;
  amount: Numeric;
  status: ChargeRowStatus;
  due_at: Timestamp;
  locked_until: Timestamp | null;
  payment_id: string | null;
  tx_hash: string | null;
  failure_reason: ChargeFailureReason | null;
  failure_message: string | null;
  created_at: Timestamp;
  submitted_at: Timestamp | null;
  settled_at: Timestamp | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    subscriptions: SubscriptionsTable;
    subscription_invoices: SubscriptionInvoicesTable;
    subscription_receivers: SubscriptionReceiversTable;
    subscription_grants: SubscriptionGrantsTable;
    subscription_charges: SubscriptionChargesTable;
  }
}
