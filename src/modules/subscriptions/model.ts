/** Plain data of the subscriptions module: statuses, limits, event types and timings. */
import { DAY_MS, type Interval } from './calendar.ts';

export const SUBSCRIPTION_STATUSES = ['active', 'past_due', 'cancelled'] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const CANCELLATION_REASONS = ['merchant', 'customer', 'unpaid'] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];

export const SUBSCRIPTION_EVENTS = [
  'subscription.created',
  'subscription.invoiced',
  'subscription.paid',
  'subscription.past_due',
  'subscription.cancelled',
] as const;
export type SubscriptionEventType = (typeof SUBSCRIPTION_EVENTS)[number];

/** NOTE: the spec's limits for subscriptions. */
export const SUBSCRIPTION_LIMITS = {
  titleMax: 120,
  centsMin: 100,
  centsMax: 100_000_000,
  intervalCountMax: 12,
  graceDaysMax: 30,
  emailMax: 254,
  nameMax: 200,
  urlMax: 2048,
  /** `start_at` may lie this far in the past (clock skew between the merchant's server and Kasse). */
  startPastToleranceMs: 5 * 60 * 1000,
  /** …and at most this far ahead. */
  startAheadMaxMs: 5 * 366 * DAY_MS,
} as const;

/** Lists: `limit` default and maximum (as for payments). */
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;

/** An invoice's payment lives 24 hours (the payments module's lifetime); the scheduler looks at it again then. */
export const INVOICE_LIFETIME_MS = DAY_MS;

/** The subscription as stored, in the scheduler's terms (times on the subscription's clock). */
export interface SubscriptionState {
  status: SubscriptionStatus;
  interval: Interval;
  intervalCount: number;
  graceDays: number;
  startedAt: Date;
  nextDueAt: Date;
  periodsInvoiced: number;
}

/** The latest payment of a period that is not paid yet, with what the payments module says of it. */
export interface OpenInvoice {
  paymentId: string;
  period: number;
  seq: number;
  dueAt: Date;
  graceEndsAt: Date;
  checkAt: Date;
  paymentStatus: string;
}
