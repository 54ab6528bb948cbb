/** The statements' view of payouts (PayoutRecords): the payouts sent in a period and the totals released and failed. */
import type { Tenant } from '../../core/tenant.ts';
import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { SentPayout } from '../statements/index.ts';

export async function sentPayouts(db: Db, tenant: Tenant, from: Date, to: Date): Promise<SentPayout[]> {
  const { mode, merchantId } = tenant;
  const rows = await db
    .selectFrom('disbursement_items as i')
    .innerJoin('disbursements as d', 'd.id', 'i.disbursement_id')
    .select(['i.payout_id', 'i.sent_at', 'i.usd_cents', 'd.token', 'i.amount', 'i.destination', 'i.tx_hash'])
    .where('d.merchant_id', '=', merchantId)
    .where('d.mode', '=', mode)
    .where('i.payout_status', '=', 'sent')
    .where('i.sent_at', '>=', from)
    .where('i.sent_at', '<', to)
    .orderBy('i.sent_at')
    .orderBy('i.payout_id')
    .execute();
  return rows.map((r) => ({
    id: r.payout_id!,
    sentAt: r.sent_at!,
    usdCents: r.usd_cents,
    token: r.token,
    amount: BigInt(r.amount),
    destination: r.destination,
    txHash: r.tx_hash,
  }));
}

export async function payoutTotals(
  db: Db,
  tenant: Tenant,
  from: Date,
  to: Date,
): Promise<{ releasedUsdCents: bigint; failedUsdCents: bigint }> {
  const { mode, merchantId } = tenant;
  const sum = async (column: 'd.released_at' | 'i.settled_at', failedOnly: boolean) => {
    let q = db
      .selectFrom('disbursement_items as i')
      .innerJoin('disbursements as d', 'd.id', 'i.disbursement_id')
      .select(sql<string>`coalesce(sum(i.usd_cents), 0)`.as('s'))
      .where('d.merchant_id', '=', merchantId)
      .where('d.mode', '=', mode)
      .where('i.payout_id', 'is not', null)
      .where(column, '>=', from)
      .where(column, '<', to);
    if (failedOnly) q = q.where('i.payout_status', '=', 'failed');
    return BigInt((await q.executeTakeFirstOrThrow()).s);
  };
  return { releasedUsdCents: await sum('d.released_at', false), failedUsdCents: await sum('i.settled_at', true) };
}
