/**
 * What the scheduler does for one subscription at a moment of its clock, as a pure function:
 * `plan(subscription, openInvoices, now) → steps`. The caller holds the subscription's row lock and writes the steps
 * (payments, invoices, events, mail) in one transaction. Everything due by `now` is taken in the order it fell due,
 * so a worker that was stopped for a while catches up exactly as if it had run on time.
 *
 * Rules (docs/subscriptions.md):
 * - At each due time a period is invoiced: one payment, checked again when its 24 hours end.
 * - At that check, a payment that ended unpaid (expired, cancelled, refunded) makes the subscription `past_due` and
 *   a fresh payment for the same period is issued (the payments hook makes the check due at once when the payment
 *   ends early) — each day — until the period's grace has ended; at the first check
 *   at or after the end of grace the subscription is cancelled (reason `unpaid`). With no grace it is cancelled at
 *   the first check, without passing through `past_due`.
 * - A payment still waiting at its check has not been expired by the payments module yet: look again shortly (the
 *   payments hook wakes the scheduler when it changes). Money on its way (detected, confirming) is waited for; money
 *   that is short or late (underpaid, late) is waited for until the end of grace, as the merchant may accept it.
 * - Paying is handled where the payment changes (the payments hook), not here.
 */
import { DAY_MS, dueAt } from './calendar.ts';
import { INVOICE_LIFETIME_MS, type OpenInvoice, type SubscriptionState, type SubscriptionStatus } from './model.ts';

/** How soon a payment found still waiting at its check is looked at again (it is about to be expired). */
export const RECHECK_WAITING_MS = 60 * 1000;
/** How often a payment with money on its way is looked at again (the payments hook also wakes the scheduler). */
export const RECHECK_SETTLING_MS = 60 * 60 * 1000;

export type Step =
  /** Invoice a new period. */
  | { kind: 'invoice'; period: number; dueAt: Date; graceEndsAt: Date; checkAt: Date }
  /** A fresh payment for an overdue period, replacing `replaces`; the subscription ends at `endsAt` unless paid. */
  | {
      kind: 'reissue';
      period: number;
      seq: number;
      dueAt: Date;
      graceEndsAt: Date;
      checkAt: Date;
      endsAt: Date;
      replaces: string;
    }
  /** Look at an invoice again at `at`. */
  | { kind: 'recheck'; paymentId: string; at: Date }
  /** The invoice needs no more checks (it was paid). */
  | { kind: 'settle'; paymentId: string }
  | { kind: 'past_due' }
  | { kind: 'cancel' };

export interface Plan {
  steps: Step[];
  status: SubscriptionStatus;
  nextDueAt: Date;
  periodsInvoiced: number;
  /** Earliest time (subscription clock) something is due next; null when nothing ever will be. */
  nextRunAt: Date | null;
}

/** A payment in one of these states ended without paying its period (refunded: money that never paid it went back). */
export const ENDED_UNPAID: ReadonlySet<string> = new Set(['expired', 'cancelled', 'refunded']);
const SETTLING = new Set(['detected', 'confirming']);
const SHORT = new Set(['underpaid', 'late']);

const later = (d: Date, ms: number) => new Date(d.getTime() + ms);

/** When grace ends for a period due at `due` that was first invoiced at `issued` (late sending does not eat grace). */
export function graceEnd(due: Date, issued: Date, graceDays: number): Date {
  return new Date(Math.max(due.getTime(), issued.getTime()) + graceDays * DAY_MS);
}

/**
 * When a subscription whose overdue period got a fresh payment at `now` ends if nothing is paid: the first daily
 * check at or after the end of grace.
 */
export function endsAt(now: Date, grace: Date): Date {
  const days = Math.max(1, Math.ceil((grace.getTime() - now.getTime()) / DAY_MS));
  return later(now, days * DAY_MS);
}

export function plan(sub: SubscriptionState, open: readonly OpenInvoice[], now: Date): Plan {
  const steps: Step[] = [];
  let status = sub.status;
  let nextDue = sub.nextDueAt;
  let invoiced = sub.periodsInvoiced;
  // Mutable copies: a check may move (recheck) or be replaced (reissue) while the plan runs.
  const checks = open.map((o) => ({ ...o }));
  const t = now.getTime();

  while (status !== 'cancelled') {
    const due = checks
      .filter((c) => c.checkAt.getTime() <= t)
      .sort((a, b) => a.checkAt.getTime() - b.checkAt.getTime() || a.period - b.period)[0];
    const periodDue = nextDue.getTime() <= t;
    if (!due && !periodDue) break;
    // A check and a due time at the same instant: the check first (a subscription cancelled then bills no more).
    if (due && (!periodDue || due.checkAt.getTime() <= nextDue.getTime())) {
      const s = due.paymentStatus;
      if (s === 'paid') {
        steps.push({ kind: 'settle', paymentId: due.paymentId });
        checks.splice(checks.indexOf(due), 1);
      } else if (s === 'waiting') {
        due.checkAt = later(now, RECHECK_WAITING_MS);
        steps.push({ kind: 'recheck', paymentId: due.paymentId, at: due.checkAt });
      } else if (SETTLING.has(s)) {
        due.checkAt = later(now, RECHECK_SETTLING_MS);
        steps.push({ kind: 'recheck', paymentId: due.paymentId, at: due.checkAt });
      } else if (SHORT.has(s) && t < due.graceEndsAt.getTime()) {
        due.checkAt = due.graceEndsAt;
        steps.push({ kind: 'recheck', paymentId: due.paymentId, at: due.checkAt });
      } else if (ENDED_UNPAID.has(s) || SHORT.has(s)) {
        if (t >= due.graceEndsAt.getTime()) {
          status = 'cancelled';
          steps.push({ kind: 'cancel' });
          break;
        }
        if (status === 'active') {
          status = 'past_due';
          steps.push({ kind: 'past_due' });
        }
        const fresh = {
          ...due,
          seq: due.seq + 1,
          checkAt: later(now, INVOICE_LIFETIME_MS),
          paymentStatus: 'waiting',
          paymentId: '',
        };
        steps.push({
          kind: 'reissue',
          period: due.period,
          seq: fresh.seq,
          dueAt: due.dueAt,
          graceEndsAt: due.graceEndsAt,
          checkAt: fresh.checkAt,
          endsAt: endsAt(now, due.graceEndsAt),
          replaces: due.paymentId,
        });
        checks.splice(checks.indexOf(due), 1, fresh);
      } else {
        throw new Error(`unknown payment status ${s}`);
      }
      continue;
    }
    invoiced += 1;
    const checkAt = later(now, INVOICE_LIFETIME_MS);
    const grace = graceEnd(nextDue, now, sub.graceDays);
    steps.push({ kind: 'invoice', period: invoiced, dueAt: nextDue, graceEndsAt: grace, checkAt });
    checks.push({
      paymentId: '',
      period: invoiced,
      seq: 1,
      dueAt: nextDue,
      graceEndsAt: grace,
      checkAt,
      paymentStatus: 'waiting',
    });
    nextDue = dueAt(sub.startedAt, sub.interval, sub.intervalCount, invoiced + 1);
  }

  let nextRunAt: Date | null = null;
  if (status !== 'cancelled') {
    nextRunAt = nextDue;
    for (const c of checks) if (c.checkAt < nextRunAt) nextRunAt = c.checkAt;
  }
  return { steps, status, nextDueAt: nextDue, periodsInvoiced: invoiced, nextRunAt };
}
