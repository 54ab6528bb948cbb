/**
 * Settling payouts: the transfers that one chain transaction settled (one payout, or a Disperse batch's members)
 * settle together in the transfers module's database transaction. Per disbursement: its row is locked (settlements of
 * one batch queue there, so exactly one of them sees the last item settle), the open items among them are updated in
 * one statement, each gets its ledger posting (`payout_sent` or `payout_failed`, a failed one giving its amount back),
 * and the batch is read and rendered once for all their `payout.sent` / `payout.failed` events (and
 * `disbursement.completed` when nothing is left open), published in one statement. The statements per payout are
 * bounded by a constant; the batch is read once per settlement, not once per payout.
 */
import { sql } from 'kysely';
import type { Tenant } from '../../core/tenant.ts';
import type { Tx } from '../../db/index.ts';
import { postPayoutFailed, postPayoutSent } from '../ledger/index.ts';
import type { SettledTransfer } from '../transfers/index.ts';
import type { EventInput } from '../webhooks/index.ts';
import { batchRow, loadDisbursement, serializeDisbursement } from './records.ts';
import type { Disbursement } from './schema.ts';
import type { DisbursementDeps } from './service.ts';

export type SettleDeps = Pick<DisbursementDeps, 'db' | 'clock' | 'log' | 'ledger' | 'events' | 'chains'>;

/** Settles the payouts `settled` of one disbursement (each once), with their postings and events. */
export async function settlePayouts(
  deps: SettleDeps,
  tx: Tx,
  tenant: Tenant,
  id: string,
  settled: SettledTransfer[],
): Promise<void> {
  const { mode, merchantId } = tenant;
  const row = await batchRow(tx, tenant, id, true);
  const open = new Map(
    (
      await tx
        .selectFrom('disbursement_items')
        .select(['payout_id', 'usd_cents', 'amount'])
        .where('disbursement_id', '=', row.id)
        .where(
          'payout_id',
          'in',
          settled.map((t) => t.id),
        )
        .where('payout_status', 'not in', ['sent', 'failed'])
        .execute()
    ).map((i) => [i.payout_id!, i]),
  );
  const settling = settled.filter((t) => open.has(t.id));
  if (settling.length === 0) return;
  const now = deps.clock.now();
  await sql`
    UPDATE disbursement_items AS i
    SET payout_status = v.status, tx_hash = COALESCE(v.tx_hash, i.tx_hash), error = v.error,
        sent_at = CASE WHEN v.status = 'sent' THEN ${now}::timestamptz END, settled_at = ${now}
    FROM (SELECT unnest(${settling.map((t) => t.id)}::text[]) AS payout_id,
                 unnest(${settling.map((t) => t.status)}::text[]) AS status,
                 unnest(${settling.map((t) => t.txHash)}::text[]) AS tx_hash,
                 unnest(${settling.map((t) => t.error)}::text[]) AS error) AS v
    WHERE i.disbursement_id = ${row.id} AND i.payout_id = v.payout_id`.execute(tx);
  for (const t of settling) {
    const item = open.get(t.id)!;
    const posting = { mode, merchantId, payoutId: t.id, usdCents: item.usd_cents, token: row.token };
    if (t.status === 'sent') await postPayoutSent(deps.ledger, tx, { ...posting, amount: BigInt(item.amount) });
    else {
      await postPayoutFailed(deps.ledger, tx, posting);
      deps.log.warn(
        { payoutId: t.id, disbursementId: row.id, error: t.error },
        'payout failed; its amount went back to the balance',
      );
    }
  }
  const stillOpen = await tx
    .selectFrom('disbursement_items')
    .select('item_no')
    .where('disbursement_id', '=', row.id)
    .where('payout_status', 'not in', ['sent', 'failed'])
    .limit(1)
    .executeTakeFirst();
  if (!stillOpen) await tx.updateTable('disbursements').set({ completed_at: now }).where('id', '=', row.id).execute();
  const d = await loadDisbursement(tx, deps.chains, tenant, row.id);
  // Every event carries the batch as it stands now: rendered once, the same text stored for each.
  const body = serializeDisbursement(d);
  const event = (type: string): EventInput<Disbursement> => ({
    mode,
    merchantId,
    type,
    orderingKey: d.id,
    data: d,
    serialize: () => body,
    destination: null,
  });
  const events = settling.map((t) => event(t.status === 'sent' ? 'payout.sent' : 'payout.failed'));
  if (!stillOpen) events.push(event('disbursement.completed'));
  await deps.events.publishMany(tx, events);
}
