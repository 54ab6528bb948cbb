/**
 * Balances at instants long past, remembered: the balance of an account at `at` is the newest checkpoint at or
 * before `at` plus the postings between. Postings are append-only and stamped with the time they are made, so once
 * `at` is further back than SETTLED_MS (longer than any transaction stays open) the balance there never changes and
 * is stored as a checkpoint. A statement's opening balance so costs one lookup instead of a sum over the account's
 * whole history.
 */
import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';

/** NOTE: an instant this far back can gain no more postings (transactions commit well within it, clocks agree). */
export const SETTLED_MS = 60 * 60 * 1000;

/** Balance (debit-positive) of `account` in `currency` over the postings made before `at`. */
export async function balanceBefore(db: Db, account: string, currency: string, at: Date, now: Date): Promise<bigint> {
  const checkpoint = await db
    .selectFrom('ledger_checkpoints')
    .select(['at', 'balance'])
    .where('account', '=', account)
    .where('currency', '=', currency)
    .where('at', '<=', at)
    .orderBy('at', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (checkpoint && checkpoint.at.getTime() === at.getTime()) return BigInt(checkpoint.balance);
  const since = checkpoint?.at ?? new Date(0);
  const { rows } = await sql<{ sum: string }>`
    SELECT coalesce(sum(e.amount), 0)::text AS sum FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.transaction_id
    WHERE e.account = ${account} AND e.currency = ${currency} AND t.created_at >= ${since} AND t.created_at < ${at}`.execute(
    db,
  );
  const balance = BigInt(checkpoint?.balance ?? 0) + BigInt(rows[0]!.sum);
  if (now.getTime() - at.getTime() >= SETTLED_MS) {
    await db
      .insertInto('ledger_checkpoints')
      .values({ account, currency, at, balance })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
  return balance;
}
