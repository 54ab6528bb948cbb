/**
 * Injectable time. Every rule that depends on time (coin hold, payment lifetime, late window, webhook retries,
 * rate-limit windows) reads `clock.now()`, so tests move a fake clock instead of sleeping.
 */
export interface Clock {
  now(): Date;
  /** The same instant in epoch milliseconds, without allocating a Date (for per-request code). */
  millis(): number;
}

export const systemClock: Clock = { now: () => new Date(), millis: () => Date.now() };

export class FakeClock implements Clock {
  private t: number;
  constructor(start: Date | string | number = '2026-01-01T00:00:00Z') {
    this.t = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.t);
  }
  millis(): number {
    return this.t;
  }
  advance(ms: number): Date {
    this.t += ms;
    return this.now();
  }
  set(at: Date | string | number): void {
    this.t = new Date(at).getTime();
  }
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
