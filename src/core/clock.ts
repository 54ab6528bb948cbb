/**
 * Injectable time. Every rule that depends on time (coin hold, payment lifetime, late window, webhook retries,
 * rate-limit windows, a settle's deadline) reads `clock.now()` or waits with `clock.until()`, so tests move a fake
 * clock instead of sleeping. Modules and chains read no other time (test/unit/clock.test.ts).
 */
import { setTimeout as delay } from 'node:timers/promises';

export interface Clock {
  now(): Date;
  /** The same instant in epoch milliseconds, without allocating a Date (for per-request code). */
  millis(): number;
  /** Resolves once the clock has reached `at` (at once if it has), or when `signal` aborts. */
  until(at: Date, signal?: AbortSignal): Promise<void>;
}

/** The longest a Node timer waits in one go (about 24.8 days); a later instant is waited for in steps. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => new Date(),
  millis: () => Date.now(),
  async until(at, signal) {
    for (let left = at.getTime() - Date.now(); left > 0 && !signal?.aborted; left = at.getTime() - Date.now())
      await delay(Math.min(left, LONGEST_TIMER_MS), undefined, { signal }).catch(() => {});
  },
};

export class FakeClock implements Clock {
  private t: number;
  /** `until` calls not yet reached, resolved as `advance` or `set` moves the clock past them. */
  private readonly waiting = new Set<{ at: number; done: () => void }>();

  constructor(start: Date | string | number = '2026-01-01T00:00:00Z') {
    this.t = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  millis(): number {
    return this.t;
  }
  until(at: Date, signal?: AbortSignal): Promise<void> {
    if (at.getTime() <= this.t || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        at: at.getTime(),
        done: () => {
          this.waiting.delete(waiter);
          signal?.removeEventListener('abort', waiter.done);
          resolve();
        },
      };
      this.waiting.add(waiter);
      signal?.addEventListener('abort', waiter.done, { once: true });
    });
  }
  /** How many `until` calls have not been reached yet: a test sees that something waits on the clock. */
  waits(): number {
    return this.waiting.size;
  }
  advance(ms: number): Date {
    this.t += ms;
    this.reached();
    return this.now();
  }
  set(at: Date | string | number): void {
    this.t = new Date(at).getTime();
    this.reached();
  }
  private reached(): void {
    for (const w of [...this.waiting]) if (w.at <= this.t) w.done();
  }
}

/**
 * Waits `ms` of real time — the interval of a poll of something outside, such as a chain node — or less when `clock`
 * reaches `deadline` first.
 */
export async function pollPause(clock: Clock, ms: number, deadline: Date): Promise<void> {
  const stop = new AbortController();
  try {
    await Promise.race([
      delay(ms, undefined, { signal: stop.signal }).catch(() => {}),
      clock.until(deadline, stop.signal),
    ]);
  } finally {
    stop.abort();
  }
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
