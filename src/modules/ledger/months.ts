/**
 * The ledger read for a merchant's period (monthly statements): when its first posting was made, its postings in a
 * period grouped in one pass, and what is held in suspense at an instant. How statements use them: docs/statements.md.
 */
import type { Tenant } from '../../core/tenant.ts';
import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';
import { ownedBy } from '../../db/owned.ts';
import { accounts, USD } from './ledger.ts';

/** A flat aggregate of a period's postings: one row per kind, coin, account and currency. */
export interface PostingGroup {
  kind: string;
  token: string | null;
  account: string;
  currency: string;
  n: number;
  sum: bigint;
}

/** When the merchant's first posting in the mode was made, or null. */
export async function firstPosting(db: Db, tenant: Tenant): Promise<Date | null> {
  const row = await ownedBy(db, 'ledger_transactions', tenant)
    .select('created_at')
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  return row?.created_at ?? null;
}

/** The merchant's postings made in [from, to) in one pass, grouped by kind, coin, account and currency. */
export async function postingGroups(db: Db, tenant: Tenant, from: Date, to: Date): Promise<PostingGroup[]> {
  const { mode, merchantId } = tenant;
  const { rows } = await sql<{
    kind: string;
    token: string | null;
    account: string;
    currency: string;
    n: string;
    sum: string;
  }>`
    SELECT t.kind, t.token, e.account, e.currency, count(*)::text AS n, sum(e.amount)::text AS sum
    FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id
    WHERE t.merchant_id = ${merchantId} AND t.mode = ${mode} AND t.created_at >= ${from} AND t.created_at < ${to}
    GROUP BY 1, 2, 3, 4`.execute(db);
  return rows.map((r) => ({
    kind: r.kind,
    token: r.token,
    account: r.account,
    currency: r.currency,
    n: Number(r.n),
    sum: BigInt(r.sum),
  }));
}

/** Payments holding the merchant's money in suspense at `to`, and its value at their attempts' rates (US cents). */
export async function heldAt(db: Db, tenant: Tenant, to: Date): Promise<{ count: number; value: bigint }> {
  const { mode, merchantId } = tenant;
  const { rows } = await sql<{ count: string; value: string }>`
    SELECT count(*)::text AS count, coalesce(sum(value), 0)::text AS value FROM (
      SELECT payment_id, -sum(amount) FILTER (WHERE currency = ${USD}) AS value FROM (
        SELECT t.payment_id, e.currency, sum(e.amount) AS amount
        FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
        WHERE e.account IN (${accounts.held(mode, merchantId)}, ${accounts.suspense(mode, merchantId)}) AND t.created_at < ${to}
        GROUP BY 1, 2
      ) per_currency
      GROUP BY 1 HAVING bool_or(amount <> 0)
    ) per_payment`.execute(db);
  return { count: Number(rows[0]!.count), value: BigInt(rows[0]!.value) };
}
