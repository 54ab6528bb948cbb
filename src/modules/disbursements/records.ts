/**
 * Reading disbursements: a batch's row and items as stored, the canonical batch an owner approves, and the API's
 * Disbursement rendered from them (with the JSON serialiser webhooks use).
 */
import type { Tenant } from '../../core/tenant.ts';
import type { Selectable } from 'kysely';
import { ownedRow } from '../../db/owned.ts';
import fastJson from 'fast-json-stringify';
import type { ChainRegistry } from '../../chains/registry.ts';
import type { TokenConfig } from '../../chains/types.ts';
import { notFound } from '../../core/errors.ts';
import { formatUnits } from '../../core/money.ts';
import type { DbOrTx } from '../../db/index.ts';
import type { DisbursementItemsTable, DisbursementsTable } from './tables.ts';
import type { CanonicalBatch } from './approval.ts';
import { DisbursementSchema, type Disbursement } from './schema.ts';

export type DisbursementRow = Selectable<DisbursementsTable>;
export type ItemRow = Selectable<DisbursementItemsTable>;

/** JSON text of a Disbursement exactly as the API serialises it: webhook data is the API's answer. */
export const serializeDisbursement = fastJson(DisbursementSchema as never) as (d: Disbursement) => string;

export async function batchRow(db: DbOrTx, tenant: Tenant, id: string, lock = false): Promise<DisbursementRow> {
  return ownedRow(db, 'disbursements', tenant, id, 'disbursement', lock);
}

export function batchItems(db: DbOrTx, id: string): Promise<ItemRow[]> {
  return db.selectFrom('disbursement_items').selectAll().where('disbursement_id', '=', id).orderBy('item_no').execute();
}

export function canonicalBatch(row: DisbursementRow, items: ItemRow[]): CanonicalBatch {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    mode: row.mode,
    token: row.token,
    totalUsdCents: row.total_usd_cents,
    items,
  };
}

export function batchToken(chains: ChainRegistry, row: Pick<DisbursementRow, 'mode' | 'token'>): TokenConfig | null {
  return chains.token(row.mode, row.token) ?? null;
}

export async function loadDisbursement(
  db: DbOrTx,
  chains: ChainRegistry,
  tenant: Tenant,
  id: string,
): Promise<Disbursement> {
  const [d] = await loadDisbursements(db, chains, tenant, [id]);
  if (!d) throw notFound('disbursement');
  return d;
}

export async function loadDisbursements(
  db: DbOrTx,
  chains: ChainRegistry,
  tenant: Tenant,
  ids: string[],
): Promise<Disbursement[]> {
  const { mode, merchantId } = tenant;
  if (ids.length === 0) return [];
  const [rows, items, approvals] = await Promise.all([
    db
      .selectFrom('disbursements')
      .selectAll()
      .where('id', 'in', ids)
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode)
      .execute(),
    db
      .selectFrom('disbursement_items')
      .selectAll()
      .where('disbursement_id', 'in', ids)
      .orderBy('disbursement_id')
      .orderBy('item_no')
      .execute(),
    db
      .selectFrom('disbursement_approvals')
      .selectAll()
      .where('disbursement_id', 'in', ids)
      .orderBy('approved_at')
      .orderBy('user_id')
      .execute(),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const row = byId.get(id);
    if (!row) return [];
    return [
      disbursementJson(
        chains,
        row,
        items.filter((i) => i.disbursement_id === id),
        approvals.filter((a) => a.disbursement_id === id),
      ),
    ];
  });
}

/** The API's Disbursement, every field of the spec present. */
export function disbursementJson(
  chains: ChainRegistry,
  row: DisbursementRow,
  items: ItemRow[],
  approvals: Array<{ user_id: string; approved_at: Date }>,
): Disbursement {
  const token = batchToken(chains, row);
  const decimals = token?.decimals ?? 0;
  let sent = 0;
  let failed = 0;
  for (const i of items) {
    if (i.payout_status === 'sent') sent++;
    else if (i.payout_status === 'failed') failed++;
  }
  return {
    id: row.id,
    merchant_id: row.merchant_id,
    token: row.token,
    symbol: token?.symbol ?? row.token.split(':')[1]!.toUpperCase(),
    chain: row.token.split(':')[0]!,
    title: row.title,
    status: row.status,
    total_usd_cents: Number(row.total_usd_cents),
    item_count: row.item_count,
    approvals_required: row.approvals_required,
    approvals: approvals.map((a) => ({ user_id: a.user_id, approved_at: a.approved_at.toISOString() })),
    approval_mac: row.approval_mac,
    released_at: row.released_at?.toISOString() ?? null,
    released_by: row.released_by,
    cancelled_at: row.cancelled_at?.toISOString() ?? null,
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    items: items.map((i) => ({
      item_no: i.item_no,
      destination: i.destination,
      usd_cents: i.usd_cents,
      amount: i.amount,
      amount_display: formatUnits(BigInt(i.amount), decimals),
      label: i.label,
      payout:
        i.payout_id === null
          ? null
          : {
              id: i.payout_id,
              status: i.payout_status!,
              tx_hash: i.tx_hash,
              error: i.error,
              sent_at: i.sent_at?.toISOString() ?? null,
            },
    })),
    progress: { sent, failed, open: items.length - sent - failed },
  };
}
