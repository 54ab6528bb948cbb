/**
 * The retry schedule of a charged subscription's failed charges (charge-rules.ts): an hour, a day, three days and
 * seven days after the due time, each at least as long after the failed attempt as the schedule spaces them, and
 * none once the period can no longer be paid or its window on chain has closed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryAt } from '../../src/modules/subscriptions/charge-rules.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const due = new Date('2026-03-02T09:00:00Z');
const at = (ms: number) => new Date(due.getTime() + ms);
const period = { dueAt: due, payableUntil: at(10 * DAY), windowEnd: at(28 * DAY) };

test('attempts made on time follow the schedule from the due time', () => {
  assert.deepEqual(retryAt(period, 1, at(0)), at(HOUR));
  assert.deepEqual(retryAt(period, 2, at(HOUR)), at(DAY));
  assert.deepEqual(retryAt(period, 3, at(DAY)), at(3 * DAY));
  assert.deepEqual(retryAt(period, 4, at(3 * DAY)), at(7 * DAY));
});

test('a first attempt made late is retried after the delays, never at once', () => {
  // The worker was down for two days: the retries keep their spacing instead of firing in a row.
  const first = at(2 * DAY);
  const second = retryAt(period, 1, first)!;
  assert.deepEqual(second, at(2 * DAY + HOUR), 'an hour after the late attempt');
  const third = retryAt(period, 2, second)!;
  assert.deepEqual(third, at(3 * DAY), 'a day after the due time is past: 23 hours after the second');
  assert.deepEqual(retryAt(period, 3, third), at(5 * DAY), 'two days after the third');
});

test('no retry once the period can no longer be paid or its window has closed', () => {
  assert.equal(retryAt({ ...period, payableUntil: at(DAY) }, 2, at(HOUR)), null);
  assert.equal(retryAt({ ...period, windowEnd: at(DAY) }, 2, at(HOUR)), null);
  assert.equal(retryAt(period, 1, at(10 * DAY - HOUR / 2)), null, 'the late attempt’s retry would fall after grace');
});
