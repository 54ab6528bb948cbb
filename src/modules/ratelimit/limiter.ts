/**
 * Per-key request limits that hold across every process sharing the database.
 *
 * Fixed one-minute windows counted in `rate_limit_windows`. A process does not write once per request: it leases
 * a block of the window's allowance (1/20 of the limit, at least 1) with one UPDATE and spends it locally, leasing
 * again when the block is used up. The database never grants more than the limit, so all processes together never
 * exceed it; the cost is that a process may hold a few unspent requests when the window ends (at most one block
 * per process), which only ever errs on the side of refusing.
 */
import { sql } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Db } from '../../db/index.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

interface Lease {
  window: number;
  limit: number;
  leased: number;
  spent: number;
  /** Allowance granted to all processes in this window, as of our last lease. */
  globalUsed: number;
  /** Waiters for an in-flight lease, so concurrent requests share one UPDATE. */
  pending: Promise<void> | null;
}

const WINDOW_MS = 60_000;

export class RateLimiter {
  private leases = new Map<string, Lease>();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async take(keyId: string, limit: number): Promise<RateDecision> {
    for (;;) {
      const decision = this.tryTake(keyId, limit);
      if (decision) return decision;
      const lease = this.leases.get(keyId)!;
      // Concurrent requests for the same key share one UPDATE.
      lease.pending ??= this.lease(keyId, lease).finally(() => {
        lease.pending = null;
      });
      await lease.pending;
    }
  }

  /**
   * Decides without waiting when it can: allowed while this process holds unspent allowance, refused once the
   * window's whole allowance is granted. Null when a new block must be leased first (then use `take`).
   */
  tryTake(keyId: string, limit: number): RateDecision | null {
    const now = this.clock.millis();
    const window = Math.floor(now / WINDOW_MS) * WINDOW_MS;
    const resetSeconds = Math.max(1, Math.ceil((window + WINDOW_MS - now) / 1000));
    let lease = this.leases.get(keyId);
    if (!lease || lease.window !== window || lease.limit !== limit) {
      lease = { window, limit, leased: 0, spent: 0, globalUsed: 0, pending: null };
      if (this.leases.size > 50_000) this.leases.clear();
      this.leases.set(keyId, lease);
    }
    if (lease.spent >= lease.leased) {
      return lease.globalUsed >= limit ? { allowed: false, limit, remaining: 0, resetSeconds } : null;
    }
    lease.spent++;
    const remaining = Math.max(0, limit - lease.globalUsed + (lease.leased - lease.spent));
    return { allowed: true, limit, remaining, resetSeconds };
  }

  private async lease(keyId: string, lease: Lease): Promise<void> {
    const block = Math.max(1, Math.ceil(lease.limit / 20));
    const windowStart = new Date(lease.window);
    const result = await this.db.transaction().execute(async (tx) => {
      await sql`INSERT INTO rate_limit_windows (key_id, window_start, used) VALUES (${keyId}, ${windowStart}, 0)
                ON CONFLICT (key_id, window_start) DO NOTHING`.execute(tx);
      const { rows } = await sql<{ used: number; old: number }>`
        UPDATE rate_limit_windows w SET used = LEAST(o.used + ${block}, ${lease.limit})
        FROM (SELECT used FROM rate_limit_windows WHERE key_id = ${keyId} AND window_start = ${windowStart} FOR UPDATE) o
        WHERE w.key_id = ${keyId} AND w.window_start = ${windowStart}
        RETURNING w.used AS used, o.used AS old`.execute(tx);
      return rows[0]!;
    });
    lease.leased += result.used - result.old;
    lease.globalUsed = result.used;
  }

  /** Deletes windows that ended more than a minute ago (run by the workers). */
  async prune(): Promise<number> {
    const before = new Date(this.clock.now().getTime() - 2 * WINDOW_MS);
    const r = await this.db.deleteFrom('rate_limit_windows').where('window_start', '<', before).executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
