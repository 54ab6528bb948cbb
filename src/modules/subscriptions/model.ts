/** Plain data of the subscriptions module: statuses, limits, event types and timings. */
import { DAY_MS, type Interval } from './calendar.ts';

const HOUR_MS = 60 * 60 * 1000;

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
  'subscription.granted',
  'subscription.charge_failed',
  'subscription.grant_ended',
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

/** How a subscription's periods are collected: an emailed invoice, or a charge under the payer's grant. */
export const COLLECTIONS = ['send_invoice', 'charge_automatically'] as const;
export type Collection = (typeof COLLECTIONS)[number];

/** A grant as the API shows it (`none`: the payer has not granted, or the grant is still being submitted). */
export const GRANT_STATUSES = ['none', 'active', 'revoked', 'exhausted'] as const;
export type GrantStatus = (typeof GRANT_STATUSES)[number];
/** A grant as stored: `pending` while its relay is on its way, `failed` when the relay failed (shown as `none`). */
export type GrantRowStatus = 'pending' | 'active' | 'revoked' | 'exhausted' | 'failed';

/** A charge attempt as stored, and as the API shows it. */
export type ChargeRowStatus = 'scheduled' | 'submitted' | 'succeeded' | 'failed' | 'cancelled';
export const CHARGE_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

/** NOTE: why a charge failed — the closed list the API, the webhooks and the dashboard show. */
export const CHARGE_FAILURE_REASONS = [
  'insufficient_funds',
  'allowance_exhausted',
  'grant_revoked',
  'grant_expired',
  'transaction_failed',
] as const;
export type ChargeFailureReason = (typeof CHARGE_FAILURE_REASONS)[number];

/** NOTE: a grant covers this many periods (its end, and the total the payer allows: amount × periods). */
export const GRANT_PERIODS = 12;
/**
 * NOTE: after a failed charge, the next attempts come this long after the period's due time (then every last step
 * more), each at least as long after the failed attempt as the steps space them, while they fall before the period
 * can no longer be paid and before the next period's slot on chain opens (charge-rules.ts retryAt).
 */
export const CHARGE_RETRY_AFTER_MS = [HOUR_MS, DAY_MS, 3 * DAY_MS, 7 * DAY_MS] as const;
/**
 * A charge the chain would take only a little later (its period has not started on chain, or the latest block is
 * still before it), or whose period a hand payment on its way may pay, is looked at again after this.
 */
export const CHARGE_NOT_YET_MS = 60 * 1000;
/** How soon a submitted charge is looked at again while its transaction is on its way. */
export const CHARGE_FOLLOW_MS = 5 * 1000;
