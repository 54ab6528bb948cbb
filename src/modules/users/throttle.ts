/**
 * Sign-in throttling: failed attempts counted per key in fixed 15-minute windows in PostgreSQL (shared by every
 * process). A key over its limit must wait for the window to end — a clear message and a wait, never a lock that
 * needs an administrator. So that an attacker hammering an account cannot keep its owner out, a browser that has
 * signed in to the account before (a signed device cookie) is counted on its own key, not the account's.
 */
import { sql } from 'kysely';
import { MINUTE, type Clock } from '../../core/clock.ts';
import { ApiError } from '../../core/errors.ts';
import type { Db } from '../../db/index.ts';

export const THROTTLE_WINDOW_MS = 15 * MINUTE;

/** NOTE: failures allowed per window. */
export const THROTTLE_LIMITS = {
  /** An account, from browsers it has not signed in from. */
  account: 5,
  /** An account, from one browser it has signed in from before. */
  device: 10,
  /** Second-factor codes for one account. */
  secondFactor: 5,
  /** One client address, whatever the account. */
  address: 30,
  /** Password-reset requests per address. */
  reset: 5,
} as const;

export interface ThrottleKey {
  key: string;
  limit: number;
}

export class SigninThrottle {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private window(): Date {
    const now = this.clock.millis();
    return new Date(now - (now % THROTTLE_WINDOW_MS));
  }

  /** 429 `rate_limited` with Retry-After when any key has used up its window. */
  async check(keys: ThrottleKey[]): Promise<void> {
    const start = this.window();
    const rows = await this.db
      .selectFrom('signin_throttle')
      .select(['key', 'failures'])
      .where('window_start', '=', start)
      .where(
        'key',
        'in',
        keys.map((k) => k.key),
      )
      .execute();
    const over = keys.some((k) => (rows.find((r) => r.key === k.key)?.failures ?? 0) >= k.limit);
    if (!over) return;
    const wait = Math.max(1, Math.ceil((start.getTime() + THROTTLE_WINDOW_MS - this.clock.millis()) / 1000));
    const minutes = Math.ceil(wait / 60);
    throw new ApiError(
      'rate_limited',
      `Too many attempts. Wait ${minutes} minute${minutes === 1 ? '' : 's'} and try again.`,
      null,
      { 'Retry-After': String(wait) },
    );
  }

  /** Counts one failure against each key. */
  async fail(keys: ThrottleKey[]): Promise<void> {
    const start = this.window();
    await sql`
      INSERT INTO signin_throttle (key, window_start, failures)
      SELECT k, ${start}, 1 FROM unnest(${keys.map((k) => k.key)}::text[]) AS k
      ON CONFLICT (key, window_start) DO UPDATE SET failures = signin_throttle.failures + 1
    `.execute(this.db);
  }

  /** Forgets the failures of keys (after a success). */
  async clear(keys: string[]): Promise<void> {
    await this.db.deleteFrom('signin_throttle').where('key', 'in', keys).execute();
  }

  /** Drops windows that have ended (the workers run it). */
  async prune(): Promise<number> {
    const r = await this.db
      .deleteFrom('signin_throttle')
      .where('window_start', '<', new Date(this.clock.millis() - THROTTLE_WINDOW_MS))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
