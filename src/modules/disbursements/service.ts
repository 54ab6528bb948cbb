/**
 * Disbursements: mass payouts in the merchant's payout coin, approved by a quorum of owners and released by one.
 *
 *   create     (API, or an owner's CSV on the dashboard) prices every item in the payout coin, records the batch
 *              `pending_approval` with the quorum of the moment, publishes `disbursement.created` and mails the owners.
 *   approve    (dashboard, owners, after a TOTP check) records one approval per owner of the digest the owner saw; at
 *              quorum the batch is `approved` and sealed with `approval_mac` (approval.ts).
 *   release    (dashboard, an owner) recomputes the MAC over the stored batch and refuses a changed one (audited);
 *              takes the total from the available balance in the same transaction (422 `insufficient_balance`
 *              otherwise) and turns every item into a payout (`po_…`): a transfer of the transfers module, handed to
 *              the chain family's crash-safe sender in that transaction.
 *   cancel     (API) before release.
 *
 * The module is the transfers module's `payout` owner: a payout's progress (signed, broadcast) and its settlement
 * come back here; a sent payout and a failed one are posted to the ledger (ledger/payouts.ts), a failed one giving
 * its amount back, and once every item settled `disbursement.completed` is published. Rules: docs/disbursements.md.
 */
import { sql } from 'kysely';
import { decodeCursor, pageOf } from '../../core/cursor.ts';
import { ApiError, invalid, invalidState } from '../../core/errors.ts';
import { ID_PATTERNS, newId } from '../../core/ids.ts';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import { centsToUnits } from '../../core/money.ts';
import { withTx, type DbOrTx, type Tx } from '../../db/index.ts';
import type { TransferProgress } from '../../chains/ports.ts';
import type { Actor, AuditDetails, AuditTarget } from '../audit/index.ts';
import type { EmailService } from '../email/index.ts';
import { idempotent, requestHash, storedResponse, validateKey } from '../idempotency/index.ts';
import { accounts, postPayoutRelease, USD } from '../ledger/index.ts';
import { lockMerchant, type MerchantService } from '../merchants/index.ts';
import type { FundsDeps } from '../payments/index.ts';
import type { PayoutRecords, SentPayout } from '../statements/index.ts';
import type { SettledTransfer, TransferOwner, TransferService } from '../transfers/index.ts';
import { isOwner, ownerEmails } from '../users/index.ts';
import { approvalKey, approvalMac, batchDigest, macMatches } from './approval.ts';
import { mailOwners, usdText } from './mail.ts';
import {
  batchItems,
  batchRow,
  batchToken,
  canonicalBatch,
  loadDisbursement,
  loadDisbursements,
  serializeDisbursement,
} from './records.ts';
import {
  DISBURSEMENT_LIMITS,
  type CreateDisbursementInput,
  type Disbursement,
  type DisbursementStatus,
} from './schema.ts';
import { settlePayouts } from './settle.ts';
import { payoutTotals, sentPayouts } from './statements.ts';
import { groupBy } from '../../core/group.ts';

/** Batch `id` as the object of an audit row. */
function batchTarget(id: string): AuditTarget {
  return { type: 'disbursement', id };
}

/** The purpose payouts carry in the transfers module. */
export const PAYOUT_PURPOSE = 'payout';

export interface DisbursementDeps extends FundsDeps {
  transfers: TransferService;
  email: EmailService;
  merchants: MerchantService;
  /** The operator's secret key; the approval MAC's key is derived from it. */
  secretKey: Buffer;
  /** Public base URL of the checkout host (the dashboard's links in mail). */
  checkoutBase: () => string;
}

/** An owner's action on batch `id`, audited as `action` (…_refused) when it is refused. */
interface Refused {
  tenant: Tenant;
  actor: Actor;
  action: string;
  id: string;
}

export interface ListQuery {
  status?: DisbursementStatus;
  cursor?: string;
  limit?: number;
}

export class DisbursementService implements TransferOwner, PayoutRecords {
  private readonly macKey: Buffer;

  constructor(private readonly deps: DisbursementDeps) {
    this.macKey = approvalKey(deps.secretKey);
    deps.transfers.own(PAYOUT_PURPOSE, this);
  }

  // ---- create, read, cancel -----------------------------------------------------------------------------------

  /**
   * Creates a batch (201), or replays the first answer for a repeated Idempotency-Key with the same body (200).
   * Each item is priced in the merchant's payout coin now (stablecoins at the peg, exact); 503 `price_unavailable`
   * when a coin that is not pegged has no current price.
   */
  async create(
    tenant: Tenant,
    input: CreateDisbursementInput,
    idempotencyKey: string | undefined,
    actor: Actor,
  ): Promise<{ status: number; disbursement: Disbursement }> {
    const { mode, merchantId } = tenant;
    const key = validateKey(idempotencyKey);
    const request = { key, hash: requestHash('POST', '/disbursements', input) };
    const replay = await storedResponse<Disbursement>(this.deps.db, tenant, request);
    if (replay) return { status: 200, disbursement: replay };
    assertItems(input);

    const merchant = await this.deps.merchants.get(merchantId);
    const token = this.deps.chains.token(mode, merchant.payoutToken);
    if (!token)
      throw invalidState(
        `The payout coin ${merchant.payoutToken} is not configured in ${mode} mode; choose another in Settings.`,
      );
    const quote = await this.deps.prices.quoteFresh(token);
    if (!quote) throw new ApiError('price_unavailable', `No current price for ${token.symbol}; try again shortly.`);
    const amounts = input.items.map((i) => centsToUnits(i.usd_cents, quote.rate, token.decimals));
    const total = input.items.reduce((s, i) => s + BigInt(i.usd_cents), 0n);
    const now = this.deps.clock.now();
    const id = newId('dsb');

    const result = await idempotent(this.deps.db, tenant, request, 201, async (tx) => {
      const owners = await ownerEmails(tx, merchantId);
      const required = merchant.approvalsRequired ?? (owners.length >= 2 ? 2 : 1);
      await tx
        .insertInto('disbursements')
        .values({
          id,
          merchant_id: merchantId,
          mode,
          title: input.title,
          token: token.id,
          status: 'pending_approval',
          total_usd_cents: total.toString(),
          item_count: input.items.length,
          approvals_required: required,
          created_by: actor.id ?? 'operator',
          created_at: now,
        })
        .execute();
      await tx
        .insertInto('disbursement_items')
        .values(
          input.items.map((i, n) => ({
            disbursement_id: id,
            item_no: n + 1,
            destination: i.destination,
            usd_cents: i.usd_cents,
            amount: amounts[n]!.toString(),
            label: i.label ?? null,
          })),
        )
        .execute();
      await this.deps.audit.record(tx, tenant, actor, 'disbursement.create', batchTarget(id), {
        title: input.title,
        items: input.items.length,
        total_usd_cents: Number(total),
        token: token.id,
      });
      const d = await this.loadAndPublish(tx, tenant, id, 'disbursement.created');
      await mailOwners(this.deps, tx, mode, d, owners);
      return d;
    });
    return { status: result.status, disbursement: result.body };
  }

  /** Newest first; `next_cursor` is opaque and null on the last page. */
  async list(tenant: Tenant, q: ListQuery = {}): Promise<{ data: Disbursement[]; next_cursor: string | null }> {
    const { mode, merchantId } = tenant;
    const limit = q.limit ?? DISBURSEMENT_LIMITS.listDefault;
    let query = this.deps.db
      .selectFrom('disbursements')
      .select('id')
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode);
    if (q.status) query = query.where('status', '=', q.status);
    if (q.cursor !== undefined) query = query.where('id', '<', decodeCursor(q.cursor, new RegExp(ID_PATTERNS.dsb)));
    const ids = (
      await query
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute()
    ).map((r) => r.id);
    const { page, next_cursor } = pageOf(ids, limit, (id) => id);
    const data = await loadDisbursements(this.deps.db, this.deps.chains, tenant, page);
    return { data, next_cursor };
  }

  async get(tenant: Tenant, id: string): Promise<Disbursement> {
    return this.load(this.deps.db, tenant, id);
  }

  /** When the last payout of a released batch settled (`disbursement.completed`), or null while some are open. */
  async completedAt(tenant: Tenant, id: string): Promise<string | null> {
    return (await batchRow(this.deps.db, tenant, id)).completed_at?.toISOString() ?? null;
  }

  /** The SHA-256 digest of the batch as stored now: what an owner approves (approval.ts). */
  async digest(tenant: Tenant, id: string): Promise<string> {
    const row = await batchRow(this.deps.db, tenant, id);
    return batchDigest(canonicalBatch(row, await batchItems(this.deps.db, id)));
  }

  /** Cancels a batch before release; 422 `invalid_state` once released or cancelled. */
  async cancel(tenant: Tenant, id: string, actor: Actor): Promise<Disbursement> {
    return withTx(this.deps.db, async (tx) => {
      const row = await batchRow(tx, tenant, id, true);
      if (row.status !== 'pending_approval' && row.status !== 'approved')
        throw invalidState(
          `This disbursement is ${row.status.replace('_', ' ')}; only a batch that is not released yet can be cancelled.`,
        );
      await tx
        .updateTable('disbursements')
        .set({ status: 'cancelled', cancelled_at: this.deps.clock.now() })
        .where('id', '=', id)
        .execute();
      await this.deps.audit.record(tx, tenant, actor, 'disbursement.cancel', batchTarget(id));
      return this.loadAndPublish(tx, tenant, id, 'disbursement.cancelled');
    });
  }

  // ---- approval and release (dashboard, owners) -----------------------------------------------------------------

  /**
   * Records `userId`'s approval of the batch whose digest the owner was shown (`digest`). The caller has checked the
   * owner's role and a fresh TOTP code. Refused (422) when the batch is not waiting for approval, when it changed
   * since the owner saw it, or when this owner approved already. At quorum: `approved` with `approval_mac`.
   */
  async approve(tenant: Tenant, id: string, userId: string, digest: string, actor: Actor): Promise<Disbursement> {
    const { merchantId } = tenant;
    const refused = { tenant: tenant, actor, action: 'disbursement.approve_refused', id };
    return this.auditRefusal(refused, () =>
      withTx(this.deps.db, async (tx) => {
        const row = await batchRow(tx, tenant, id, true);
        await assertOwner(tx, merchantId, userId);
        if (row.status !== 'pending_approval')
          throw invalidState(`This disbursement is ${row.status.replace('_', ' ')}; it takes no more approvals.`);
        const items = await batchItems(tx, id);
        const batch = canonicalBatch(row, items);
        const current = batchDigest(batch);
        if (digest !== current)
          throw invalidState(
            'The batch changed since you opened it. Reload the page and check it again before approving.',
          );
        const now = this.deps.clock.now();
        const inserted = await tx
          .insertInto('disbursement_approvals')
          .values({ disbursement_id: id, user_id: userId, approved_at: now, digest: current })
          .onConflict((oc) => oc.columns(['disbursement_id', 'user_id']).doNothing())
          .returning('user_id')
          .executeTakeFirst();
        if (!inserted)
          throw invalidState('You have already approved this disbursement; another owner must approve it too.');
        const agreeing = await tx
          .selectFrom('disbursement_approvals')
          .select('user_id')
          .where('disbursement_id', '=', id)
          .where('digest', '=', current)
          .execute();
        await this.deps.audit.record(tx, tenant, actor, 'disbursement.approve', batchTarget(id), {
          digest: current,
          approvals: agreeing.length,
          required: row.approvals_required,
        });
        if (agreeing.length < row.approvals_required) return this.load(tx, tenant, id);
        await tx
          .updateTable('disbursements')
          .set({ status: 'approved', approved_at: now, approval_mac: approvalMac(this.macKey, batch) })
          .where('id', '=', id)
          .execute();
        return this.loadAndPublish(tx, tenant, id, 'disbursement.approved');
      }),
    );
  }

  /**
   * Runs an owner's action; when it is refused (an ApiError other than not_found: already approved, no balance, …)
   * the refusal is in the audit log, written after the action's transaction rolled back, with the reason.
   */
  private async auditRefusal<T>(refused: Refused, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (err) {
      if (err instanceof ApiError && err.code !== 'not_found')
        await this.recordRefusal(this.deps.db, refused, { reason: err.message, code: err.code });
      throw err;
    }
  }

  private recordRefusal(db: DbOrTx, r: Refused, details: AuditDetails): Promise<void> {
    return this.deps.audit.record(db, r.tenant, r.actor, r.action, batchTarget(r.id), details);
  }

  /**
   * Releases an approved batch: the MAC must still match the stored batch (else 422 `invalid_state`, and the refusal
   * is audited), the total must be in the available balance (else 422 `insufficient_balance`); then, in one
   * transaction, the total is taken from the balance (one `payout_release` posting per item) and every item becomes
   * a payout handed to the sender.
   */
  async release(tenant: Tenant, id: string, userId: string, actor: Actor): Promise<Disbursement> {
    const { mode, merchantId } = tenant;
    const refused = { tenant: tenant, actor, action: 'disbursement.release_refused', id };
    const outcome = await this.auditRefusal(refused, () =>
      withTx(this.deps.db, async (tx) => {
        const row = await batchRow(tx, tenant, id, true);
        await assertOwner(tx, merchantId, userId);
        if (row.status !== 'approved')
          throw invalidState(
            `This disbursement is ${row.status.replace('_', ' ')}; only an approved batch can be released.`,
          );
        const items = await batchItems(tx, id);
        if (!row.approval_mac || !macMatches(this.macKey, canonicalBatch(row, items), row.approval_mac)) {
          await this.recordRefusal(tx, refused, { reason: 'the batch no longer matches what the owners approved' });
          this.deps.log.error(
            { disbursementId: id, merchantId, mode },
            'disbursement changed after approval; release refused',
          );
          return 'changed' as const;
        }
        const token = batchToken(this.deps.chains, row);
        if (!token)
          throw invalidState(`The payout coin ${row.token} is no longer configured; this batch cannot be sent.`);
        // One release at a time per merchant: the balance read below stays true until this transaction commits.
        await lockMerchant(tx, merchantId);
        const available = -(await this.deps.ledger.accountBalance(tx, accounts.merchant(mode, merchantId), USD));
        const total = BigInt(row.total_usd_cents);
        if (available < total) {
          throw new ApiError(
            'insufficient_balance',
            `The batch needs ${usdText(total)} but the available balance is ${usdText(available)}.`,
          );
        }
        const now = this.deps.clock.now();
        const payouts = items.map((i) => ({ ...i, payout_id: newId('po') }));
        await sql`
        UPDATE disbursement_items AS i SET payout_id = v.payout_id, payout_status = 'pending'
        FROM (SELECT unnest(${payouts.map((p) => p.item_no)}::int[]) AS item_no, unnest(${payouts.map((p) => p.payout_id)}::text[]) AS payout_id) AS v
        WHERE i.disbursement_id = ${id} AND i.item_no = v.item_no`.execute(tx);
        for (const p of payouts) {
          await postPayoutRelease(this.deps.ledger, tx, {
            mode,
            merchantId,
            payoutId: p.payout_id,
            usdCents: p.usd_cents,
            token: row.token,
          });
          await this.deps.transfers.request(tx, {
            transferId: p.payout_id,
            mode,
            purpose: PAYOUT_PURPOSE,
            token,
            destination: p.destination,
            amount: BigInt(p.amount),
          });
        }
        await tx
          .updateTable('disbursements')
          .set({ status: 'released', released_at: now, released_by: userId })
          .where('id', '=', id)
          .execute();
        await this.deps.audit.record(tx, tenant, actor, 'disbursement.release', batchTarget(id), {
          total_usd_cents: Number(total),
          items: items.length,
        });
        return this.loadAndPublish(tx, tenant, id, 'disbursement.released');
      }),
    );
    if (outcome === 'changed')
      throw invalidState(
        'This batch changed after it was approved, so it was not released. The attempt is in the audit log; cancel the batch and create a new one.',
      );
    return outcome;
  }

  // ---- payouts (the transfers module's `payout` owner) --------------------------------------------------------

  /** Payouts were signed or broadcast: their items follow (one statement per status, never after they settled). */
  async transfersProgressed(tx: Tx, _mode: Mode, progress: TransferProgress[]): Promise<void> {
    for (const [status, list] of groupBy(progress, (p) => p.status)) {
      const before = status === 'signed' ? ['pending', 'signed'] : ['pending', 'signed', 'broadcast'];
      await sql`
        UPDATE disbursement_items AS i SET payout_status = ${status}, tx_hash = v.tx_hash
        FROM (SELECT unnest(${list.map((p) => p.transferId)}::text[]) AS payout_id,
                     unnest(${list.map((p) => p.txHash)}::text[]) AS tx_hash) AS v
        WHERE i.payout_id = v.payout_id AND i.payout_status = ANY(${before}::text[])`.execute(tx);
    }
  }

  /**
   * Payouts' transfers settled together (once each), in the transfers module's transaction: per disbursement, its
   * items, their ledger postings and their events follow, the batch read and rendered once (settle.ts).
   */
  async transfersSettled(tx: Tx, transfers: SettledTransfer[]): Promise<void> {
    const mode = transfers[0]!.mode;
    const ids = transfers.map((t) => t.id);
    const found = await tx
      .selectFrom('disbursement_items as i')
      .innerJoin('disbursements as d', 'd.id', 'i.disbursement_id')
      .select(['i.payout_id', 'i.disbursement_id', 'd.merchant_id'])
      .where('i.payout_id', 'in', ids)
      .where('d.mode', '=', mode)
      .orderBy('i.disbursement_id')
      .execute();
    const batchOf = new Map(found.map((f) => [f.payout_id!, f]));
    const unknown = transfers.filter((t) => !batchOf.has(t.id)).map((t) => t.id);
    if (unknown.length > 0)
      this.deps.log.error({ payoutIds: unknown }, 'a payout settled that no disbursement item names');
    const known = transfers.filter((t) => batchOf.has(t.id));
    // Batches in id order, so two settlements touching the same batches lock them in the same order.
    const byBatch = [...groupBy(known, (t) => batchOf.get(t.id)!.disbursement_id)].sort(([a], [b]) => (a < b ? -1 : 1));
    for (const [id, settled] of byBatch) {
      const merchantId = batchOf.get(settled[0]!.id)!.merchant_id;
      await settlePayouts(this.deps, tx, { mode, merchantId }, id, settled);
    }
  }

  /** Due work: test-mode payouts on networks without a sender are settled as sent (simulated). */
  async runDue(): Promise<{ simulated: number }> {
    return { simulated: await this.deps.transfers.settleSimulated(PAYOUT_PURPOSE) };
  }

  // ---- statements (PayoutRecords) -----------------------------------------------------------------------------

  sent(tenant: Tenant, from: Date, to: Date): Promise<SentPayout[]> {
    return sentPayouts(this.deps.db, tenant, from, to);
  }

  totals(tenant: Tenant, from: Date, to: Date): Promise<{ releasedUsdCents: bigint; failedUsdCents: bigint }> {
    return payoutTotals(this.deps.db, tenant, from, to);
  }

  // ---- events ------------------------------------------------------------------------------------------------

  private load(db: DbOrTx, tenant: Tenant, id: string): Promise<Disbursement> {
    return loadDisbursement(db, this.deps.chains, tenant, id);
  }

  /** The batch as it is now in `tx`, after `event` about it is published. */
  private async loadAndPublish(tx: Tx, tenant: Tenant, id: string, event: string): Promise<Disbursement> {
    const { mode } = tenant;
    const d = await this.load(tx, tenant, id);
    await this.publish(tx, mode, d, event);
    return d;
  }

  private publish(tx: Tx, mode: Mode, d: Disbursement, type: string) {
    return this.deps.events.publish(tx, {
      mode,
      merchantId: d.merchant_id,
      type,
      orderingKey: d.id,
      data: d,
      serialize: serializeDisbursement,
      destination: null,
    });
  }
}

/** Cross-item rules JSON Schema cannot say (none beyond the schema today; kept for the dashboard's CSV path). */
function assertItems(input: CreateDisbursementInput): void {
  if (input.items.length === 0 || input.items.length > DISBURSEMENT_LIMITS.itemsMax)
    throw invalid(`items must hold 1 to ${DISBURSEMENT_LIMITS.itemsMax} payouts`, 'items');
}

/** Approvals and releases are owners' alone (the dashboard checks the role too; this holds for any caller). */
async function assertOwner(db: DbOrTx, merchantId: string, userId: string): Promise<void> {
  if (!(await isOwner(db, merchantId, userId)))
    throw invalidState('Only an owner of the account can approve or release a disbursement.');
}
