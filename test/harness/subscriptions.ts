/**
 * Subscriptions written straight into their table, many at once, as a test or a benchmark seeds them (the API
 * creates them one request at a time): active monthly subscriptions in test mode, all due at the same instant.
 */
import { newId } from '../../src/core/ids.ts';
import type { DbOrTx } from '../../src/db/index.ts';
import type { NewSubscription } from '../../src/modules/subscriptions/store/subscriptions.ts';

/** What differs between the seeded subscriptions. */
export interface SeedRow {
  customer_email: string;
  title: string;
  amount_usd_cents: number;
}

/** `n` rows of `merchantId`'s subscriptions, all started and due at `at`; `row(i)` gives the i-th one's own values. */
export function dueSubscriptions(
  merchantId: string,
  n: number,
  at: Date,
  row: (i: number) => SeedRow,
): NewSubscription[] {
  return Array.from({ length: n }, (_, i) => ({
    id: newId('sub'),
    merchant_id: merchantId,
    mode: 'test' as const,
    customer_name: null,
    interval: 'month' as const,
    interval_count: 1,
    grace_days: 3,
    status: 'active' as const,
    started_at: at,
    next_due_at: at,
    success_url: null,
    metadata: '{}',
    run_at: at,
    created_at: at,
    updated_at: at,
    ...row(i),
  }));
}

/** Inserts `rows`, a thousand per statement. */
export async function seedSubscriptions(db: DbOrTx, rows: readonly NewSubscription[]): Promise<void> {
  for (let k = 0; k < rows.length; k += 1000)
    await db
      .insertInto('subscriptions')
      .values(rows.slice(k, k + 1000))
      .execute();
}
