/**
 * Calendar arithmetic for billing periods, in UTC. The n-th due time is always computed from the anchor (the
 * subscription's `started_at`), never from the previous due time, so a month-end clamp does not stick: a
 * subscription started on 31 January is due on 28 (or 29) February, then 31 March, 30 April, 31 May.
 */

export const INTERVALS = ['week', 'month', 'year'] as const;
export type Interval = (typeof INTERVALS)[number];

export const DAY_MS = 24 * 60 * 60 * 1000;
const WEEK_MS = 7 * DAY_MS;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** `anchor` plus `months` calendar months; the day of month is clamped to the target month's last day. */
export function addMonths(anchor: Date, months: number): Date {
  const y = anchor.getUTCFullYear();
  const m = anchor.getUTCMonth() + months;
  const year = y + Math.floor(m / 12);
  const month = ((m % 12) + 12) % 12;
  const day = Math.min(anchor.getUTCDate(), daysInMonth(year, month));
  return new Date(
    Date.UTC(
      year,
      month,
      day,
      anchor.getUTCHours(),
      anchor.getUTCMinutes(),
      anchor.getUTCSeconds(),
      anchor.getUTCMilliseconds(),
    ),
  );
}

/**
 * Due time of period `period` (1-based): period 1 is due at the anchor, period n at anchor + (n − 1) × count
 * intervals. Weeks are exactly 7 × 24 hours (UTC has no daylight saving); months and years are calendar steps.
 */
export function dueAt(anchor: Date, interval: Interval, count: number, period: number): Date {
  const steps = (period - 1) * count;
  switch (interval) {
    case 'week':
      return new Date(anchor.getTime() + steps * WEEK_MS);
    case 'month':
      return addMonths(anchor, steps);
    case 'year':
      return addMonths(anchor, steps * 12);
  }
}

const shortest = new Map<string, number>();

/**
 * The shortest time between two consecutive due times of `count` × `interval`, in whole seconds, over every anchor
 * (each day of a four-year cycle, month ends included, so clamping and leap days are covered): a week step is
 * exact; `count` months is at least 28 days for one, 59 for two, …; a year 365 days. A grant's on-chain period is
 * this long, so every due time falls into a period of its own.
 */
export function shortestPeriodSeconds(interval: Interval, count: number): number {
  if (interval === 'week') return (count * WEEK_MS) / 1000;
  const key = `${interval}:${count}`;
  const known = shortest.get(key);
  if (known !== undefined) return known;
  let min = Number.POSITIVE_INFINITY;
  for (let d = 0; d < 1461; d++) {
    const anchor = new Date(Date.UTC(2024, 0, 1) + d * DAY_MS);
    for (let n = 1; n <= 8; n++) {
      const gap = dueAt(anchor, interval, count, n + 1).getTime() - dueAt(anchor, interval, count, n).getTime();
      if (gap < min) min = gap;
    }
  }
  shortest.set(key, min / 1000);
  return min / 1000;
}
