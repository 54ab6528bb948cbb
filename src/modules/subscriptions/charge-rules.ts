/**
 * The rules of charging a period, as pure functions (docs/subscriptions.md, "Charged automatically"): how long a
 * period may be charged in, when a failed charge is tried again, and what a refusal means.
 */
import type { ChargeCheck } from '../../chains/charges.ts';
import { dueAt, type Interval } from './calendar.ts';
import { CHARGE_RETRY_AFTER_MS, type ChargeFailureReason } from './model.ts';

/** Failures that end the grant: it is revoked, or used up. */
export const ENDS_GRANT: Partial<Record<ChargeFailureReason, 'revoked' | 'exhausted'>> = {
  grant_revoked: 'revoked',
  grant_expired: 'exhausted',
  allowance_exhausted: 'exhausted',
};

/** Failures a later attempt may cure. */
export const RETRIED: ReadonlySet<ChargeFailureReason> = new Set(['insufficient_funds', 'transaction_failed']);

/**
 * The end of the time period `period` may be charged in: the start of the on-chain period (`periodSeconds` long,
 * counted from the grant's start) that the next due time falls into — so a late charge never takes the next
 * period's slot — and at the latest the grant's end.
 */
export function windowEnd(
  sub: { startedAt: Date; interval: Interval; intervalCount: number },
  grant: { startsAt: Date; periodSeconds: number; expiresAt: Date },
  period: number,
): Date {
  const next = dueAt(sub.startedAt, sub.interval, sub.intervalCount, period + 1).getTime();
  const start = grant.startsAt.getTime();
  const p = grant.periodSeconds * 1000;
  const slot = next < start ? start : start + Math.floor((next - start) / p) * p;
  return new Date(Math.min(slot, grant.expiresAt.getTime()));
}

/**
 * When the next attempt at a period is due after `attempts` attempts failed, the last at `now`: the period's due
 * time plus the attempt's retry delay (CHARGE_RETRY_AFTER_MS, then the last one more each time), and never sooner
 * after the failed attempt than the schedule spaces those two attempts (so a first attempt made late is not retried
 * at once); null when it would fall when the period can no longer be paid (the end of grace, and at least its first
 * payment's 24 hours) or at or after the end of the period's window.
 */
export function retryAt(
  p: { dueAt: Date; payableUntil: Date; windowEnd: Date },
  attempts: number,
  now: Date,
): Date | null {
  const delay = retryDelay(attempts);
  const gap = delay - (attempts > 1 ? retryDelay(attempts - 1) : 0);
  const at = new Date(Math.max(p.dueAt.getTime() + delay, now.getTime() + gap));
  if (at >= p.payableUntil || at >= p.windowEnd) return null;
  return at;
}

/** How long after the due time the attempt after `attempts` failed ones comes. */
function retryDelay(attempts: number): number {
  const steps = CHARGE_RETRY_AFTER_MS;
  const last = steps[steps.length - 1]!;
  return attempts <= steps.length ? steps[attempts - 1]! : last * (attempts - steps.length + 1);
}

/** The failure reason a refusal stands for. */
export function refusalReason(v: ChargeCheck & { ok: false }): ChargeFailureReason {
  switch (v.reason) {
    case 'insufficient_funds':
    case 'allowance_exhausted':
    case 'grant_revoked':
    case 'grant_expired':
      return v.reason;
    default:
      return 'transaction_failed';
  }
}
