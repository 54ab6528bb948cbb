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
import { sql, type Selectable } from 'kysely';
import fastJson from 'fast-json-stringify';
import type { ChainRegistry } from '../../chains/registry.ts';
import type { TokenConfig } from '../../chains/types.ts';
import type { Clock } from '../../core/clock.ts';
import { decodeCursor, encodeCursor } from '../../core/cursor.ts';
import { ApiError, invalid, invalidState, notFound } from '../../core/errors.ts';
import { ID_PATTERNS, newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { centsToUnits, formatCents, formatUnits } from '../../core/money.ts';
import { withTx, type Db, type DbOrTx, type Tx } from '../../db/index.ts';
import type { DisbursementItemsTable, DisbursementsTable } from '../../db/schema.ts';
import type { TransferProgress } from '../../chains/ports.ts';
import type { Actor, AuditEntry, AuditLog } from '../audit/service.ts';
import type { EmailService } from '../email/service.ts';
import { renderEmail } from '../email/template.ts';
import { idempotent, requestHash, storedResponse, validateKey } from '../idempotency/idempotency.ts';
import { accounts, USD, type LedgerService } from '../ledger/ledger.ts';
import { postPayoutFailed, postPayoutRelease, postPayoutSent } from '../ledger/payouts.ts';
import { lockMerchant } from '../merchants/lookup.ts';
import type { MerchantService } from '../merchants/service.ts';
import type { PriceService } from '../prices/service.ts';
import type { PayoutRecords, SentPayout } from '../statements/payouts.ts';
import type { SettledTransfer, TransferOwner, TransferService } from '../transfers/service.ts';
import { isOwner, ownerEmails } from '../users/owners.ts';
import type { EventPublisher } from '../webhooks/types.ts';
import { approvalKey, approvalMac, batchDigest, macMatches, type CanonicalBatch } from './approval.ts';
import {
  DISBURSEMENT_LIMITS,
  DisbursementSchema,
  type CreateDisbursementInput,
  type Disbursement,
  type DisbursementStatus,
} from './schema.ts';

/** The purpose payouts carry in the transfers module. */
export const PAYOUT_PURPOSE = 'payout';

export type DisbursementRow = Selectable<DisbursementsTable>;
export type ItemRow = Selectable<DisbursementItemsTable>;

export interface DisbursementDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  chains: ChainRegistry;
  prices: PriceService;
  ledger: LedgerService;
  transfers: TransferService;
  events: EventPublisher;
  audit: AuditLog;
  email: EmailService;
  merchants: MerchantService;
  /** The operator's secret key; the approval MAC's key is derived from it. */
  secretKey: Buffer;
  /** Public base URL of the checkout host (the dashboard's links in mail). */
  checkoutBase: () => string;
}

export interface ListQuery {
  status?: DisbursementStatus;
  cursor?: string;
  limit?: number;
}

/** JSON text of a Disbursement exactly as the API serialises it: webhook data is the API's answer. */
export const serializeDisbursement = fastJson(DisbursementSchema as never) as (d: Disbursement) => string;

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
    mode: Mode,
    merchantId: string,
    input: CreateDisbursementInput,
    idempotencyKey: string | undefined,
    actor: Actor,
  ): Promise<{ status: number; disbursement: Disbursement }> {
    const key = validateKey(idempotencyKey);
    const scope = { merchantId, mode, key, hash: requestHash('POST', '/disbursements', input) };
    const replay = await storedResponse<Disbursement>(this.deps.db, scope);
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

    const result = await idempotent(this.deps.db, scope, 201, async (tx) => {
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
      await this.deps.audit.record(tx, {
        merchantId,
        mode,
        actor,
        action: 'disbursement.create',
        target: { type: 'disbursement', id },
        details: { title: input.title, items: input.items.length, total_usd_cents: Number(total), token: token.id },
      });
      const d = await this.loadIn(tx, mode, merchantId, id);
      await this.publish(tx, mode, d, 'disbursement.created');
      await this.mailOwners(tx, mode, d, owners);
      return d;
    });
    return { status: result.status, disbursement: result.body };
  }

  /** Newest first; `next_cursor` is opaque and null on the last page. */
  async list(
    mode: Mode,
    merchantId: string,
    q: ListQuery = {},
  ): Promise<{ data: Disbursement[]; next_cursor: string | null }> {
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
    const page = ids.slice(0, limit);
    const data = await this.loadMany(this.deps.db, mode, merchantId, page);
    return { data, next_cursor: ids.length > limit ? encodeCursor(page[page.length - 1]!) : null };
  }

  async get(mode: Mode, merchantId: string, id: string): Promise<Disbursement> {
    return this.loadIn(this.deps.db, mode, merchantId, id);
  }

  /** When the last payout of a released batch settled (`disbursement.completed`), or null while some are open. */
  async completedAt(mode: Mode, merchantId: string, id: string): Promise<string | null> {
    return (await this.row(this.deps.db, mode, merchantId, id)).completed_at?.toISOString() ?? null;
  }

  /** The SHA-256 digest of the batch as stored now: what an owner approves (approval.ts). */
  async digest(mode: Mode, merchantId: string, id: string): Promise<string> {
    const row = await this.row(this.deps.db, mode, merchantId, id);
    return batchDigest(this.canonical(row, await this.items(this.deps.db, id)));
  }

  /** Cancels a batch before release; 422 `invalid_state` once released or cancelled. */
  async cancel(mode: Mode, merchantId: string, id: string, actor: Actor): Promise<Disbursement> {
    return withTx(this.deps.db, async (tx) => {
      const row = await this.row(tx, mode, merchantId, id, true);
      if (row.status !== 'pending_approval' && row.status !== 'approved')
        throw invalidState(
          `This disbursement is ${row.status.replace('_', ' ')}; only a batch that is not released yet can be cancelled.`,
        );
      await tx
        .updateTable('disbursements')
        .set({ status: 'cancelled', cancelled_at: this.deps.clock.now() })
        .where('id', '=', id)
        .execute();
      await this.deps.audit.record(tx, {
        merchantId,
        mode,
        actor,
        action: 'disbursement.cancel',
        target: { type: 'disbursement', id },
      });
      const d = await this.loadIn(tx, mode, merchantId, id);
      await this.publish(tx, mode, d, 'disbursement.cancelled');
      return d;
    });
  }

  // ---- approval and release (dashboard, owners) -----------------------------------------------------------------

  /**
   * Records `userId`'s approval of the batch whose digest the owner was shown (`digest`). The caller has checked the
   * owner's role and a fresh TOTP code. Refused (422) when the batch is not waiting for approval, when it changed
   * since the owner saw it, or when this owner approved already. At quorum: `approved` with `approval_mac`.
   */
  async approve(
    mode: Mode,
    merchantId: string,
    id: string,
    userId: string,
    digest: string,
    actor: Actor,
  ): Promise<Disbursement> {
    return this.auditRefusal(
      { merchantId, mode, actor, action: 'disbursement.approve_refused', target: { type: 'disbursement', id } },
      () => this.approveIn(mode, merchantId, id, userId, digest, actor),
    );
  }

  /**
   * Runs an owner's action; when it is refused (an ApiError other than not_found: already approved, no balance, …)
   * the refusal is in the audit log, written after the action's transaction rolled back, with the reason.
   */
  private async auditRefusal<T>(entry: AuditEntry, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (err) {
      if (err instanceof ApiError && err.code !== 'not_found')
        await this.deps.audit.record(this.deps.db, { ...entry, details: { reason: err.message, code: err.code } });
      throw err;
    }
  }

  private async approveIn(
    mode: Mode,
    merchantId: string,
    id: string,
    userId: string,
    digest: string,
    actor: Actor,
  ): Promise<Disbursement> {
    return withTx(this.deps.db, async (tx) => {
      const row = await this.row(tx, mode, merchantId, id, true);
      await assertOwner(tx, merchantId, userId);
      if (row.status !== 'pending_approval')
        throw invalidState(`This disbursement is ${row.status.replace('_', ' ')}; it takes no more approvals.`);
      const items = await this.items(tx, id);
      const batch = this.canonical(row, items);
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
      await this.deps.audit.record(tx, {
        merchantId,
        mode,
        actor,
        action: 'disbursement.approve',
        target: { type: 'disbursement', id },
        details: { digest: current, approvals: agreeing.length, required: row.approvals_required },
      });
      if (agreeing.length < row.approvals_required) return this.loadIn(tx, mode, merchantId, id);
      await tx
        .updateTable('disbursements')
        .set({ status: 'approved', approved_at: now, approval_mac: approvalMac(this.macKey, batch) })
        .where('id', '=', id)
        .execute();
      const d = await this.loadIn(tx, mode, merchantId, id);
      await this.publish(tx, mode, d, 'disbursement.approved');
      return d;
    });
  }

  /**
   * Releases an approved batch: the MAC must still match the stored batch (else 422 `invalid_state`, and the refusal
   * is audited), the total must be in the available balance (else 422 `insufficient_balance`); then, in one
   * transaction, the total is taken from the balance (one `payout_release` posting per item) and every item becomes
   * a payout handed to the sender.
   */
  async release(mode: Mode, merchantId: string, id: string, userId: string, actor: Actor): Promise<Disbursement> {
    const outcome = await this.auditRefusal(
      { merchantId, mode, actor, action: 'disbursement.release_refused', target: { type: 'disbursement', id } },
      () =>
        withTx(this.deps.db, async (tx) => {
          const row = await this.row(tx, mode, merchantId, id, true);
          await assertOwner(tx, merchantId, userId);
          if (row.status !== 'approved')
            throw invalidState(
              `This disbursement is ${row.status.replace('_', ' ')}; only an approved batch can be released.`,
            );
          const items = await this.items(tx, id);
          if (!row.approval_mac || !macMatches(this.macKey, this.canonical(row, items), row.approval_mac)) {
            await this.deps.audit.record(tx, {
              merchantId,
              mode,
              actor,
              action: 'disbursement.release_refused',
              target: { type: 'disbursement', id },
              details: { reason: 'the batch no longer matches what the owners approved' },
            });
            this.deps.log.error(
              { disbursementId: id, merchantId, mode },
              'disbursement changed after approval; release refused',
            );
            return 'changed' as const;
          }
          const token = this.token(row);
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
          await this.deps.audit.record(tx, {
            merchantId,
            mode,
            actor,
            action: 'disbursement.release',
            target: { type: 'disbursement', id },
            details: { total_usd_cents: Number(total), items: items.length },
          });
          const d = await this.loadIn(tx, mode, merchantId, id);
          await this.publish(tx, mode, d, 'disbursement.released');
          return d;
        }),
    );
    if (outcome === 'changed')
      throw invalidState(
        'This batch changed after it was approved, so it was not released. The attempt is in the audit log; cancel the batch and create a new one.',
      );
    return outcome;
  }

  // ---- payouts (the transfers module's `payout` owner) --------------------------------------------------------

  async transferProgressed(tx: Tx, p: TransferProgress & { mode: Mode }): Promise<void> {
    const before = p.status === 'signed' ? ['pending', 'signed'] : ['pending', 'signed', 'broadcast'];
    await tx
      .updateTable('disbursement_items')
      .set({ payout_status: p.status, tx_hash: p.txHash })
      .where('payout_id', '=', p.transferId)
      .where('payout_status', 'in', before as ItemRow['payout_status'][] as never)
      .execute();
  }

  /** A payout's transfer settled (once): the item, the ledger and the events follow in the same transaction. */
  async transferSettled(tx: Tx, t: SettledTransfer): Promise<void> {
    const found = await tx
      .selectFrom('disbursement_items as i')
      .innerJoin('disbursements as d', 'd.id', 'i.disbursement_id')
      .select(['i.disbursement_id', 'd.merchant_id', 'd.mode'])
      .where('i.payout_id', '=', t.id)
      .where('d.mode', '=', t.mode)
      .executeTakeFirst();
    if (!found) {
      this.deps.log.error({ payoutId: t.id }, 'a payout settled that no disbursement item names');
      return;
    }
    const { mode, merchant_id: merchantId } = found;
    // Settlements of one batch queue here, so exactly one of them sees the last item settle.
    const row = await this.row(tx, mode, merchantId, found.disbursement_id, true);
    const item = await tx
      .selectFrom('disbursement_items')
      .selectAll()
      .where('payout_id', '=', t.id)
      .executeTakeFirstOrThrow();
    if (item.payout_status === 'sent' || item.payout_status === 'failed') return;
    const now = this.deps.clock.now();
    await tx
      .updateTable('disbursement_items')
      .set({
        payout_status: t.status,
        tx_hash: t.txHash ?? item.tx_hash,
        error: t.error,
        sent_at: t.status === 'sent' ? now : null,
        settled_at: now,
      })
      .where('payout_id', '=', t.id)
      .execute();
    const posting = { mode, merchantId, payoutId: t.id, usdCents: item.usd_cents, token: row.token };
    if (t.status === 'sent') await postPayoutSent(this.deps.ledger, tx, { ...posting, amount: BigInt(item.amount) });
    else {
      await postPayoutFailed(this.deps.ledger, tx, posting);
      this.deps.log.warn(
        { payoutId: t.id, disbursementId: row.id, error: t.error },
        'payout failed; its amount went back to the balance',
      );
    }
    const open = await tx
      .selectFrom('disbursement_items')
      .select('item_no')
      .where('disbursement_id', '=', row.id)
      .where('payout_status', 'not in', ['sent', 'failed'])
      .limit(1)
      .executeTakeFirst();
    if (!open) await tx.updateTable('disbursements').set({ completed_at: now }).where('id', '=', row.id).execute();
    const d = await this.loadIn(tx, mode, merchantId, row.id);
    await this.publish(tx, mode, d, t.status === 'sent' ? 'payout.sent' : 'payout.failed');
    if (!open) await this.publish(tx, mode, d, 'disbursement.completed');
  }

  /** Due work: test-mode payouts on networks without a sender are settled as sent (simulated). */
  async runDue(): Promise<{ simulated: number }> {
    return { simulated: await this.deps.transfers.settleSimulated(PAYOUT_PURPOSE) };
  }

  // ---- statements (PayoutRecords) -----------------------------------------------------------------------------

  async sent(mode: Mode, merchantId: string, from: Date, to: Date): Promise<SentPayout[]> {
    const rows = await this.deps.db
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

  async totals(
    mode: Mode,
    merchantId: string,
    from: Date,
    to: Date,
  ): Promise<{ releasedUsdCents: bigint; failedUsdCents: bigint }> {
    const sum = async (column: 'd.released_at' | 'i.settled_at', failedOnly: boolean) => {
      let q = this.deps.db
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

  // ---- reading and rendering ------------------------------------------------------------------------------------

  private async row(db: DbOrTx, mode: Mode, merchantId: string, id: string, lock = false): Promise<DisbursementRow> {
    let q = db
      .selectFrom('disbursements')
      .selectAll()
      .where('id', '=', id)
      .where('merchant_id', '=', merchantId)
      .where('mode', '=', mode);
    if (lock) q = q.forUpdate();
    const row = await q.executeTakeFirst();
    if (!row) throw notFound('disbursement');
    return row;
  }

  private items(db: DbOrTx, id: string): Promise<ItemRow[]> {
    return db
      .selectFrom('disbursement_items')
      .selectAll()
      .where('disbursement_id', '=', id)
      .orderBy('item_no')
      .execute();
  }

  private canonical(row: DisbursementRow, items: ItemRow[]): CanonicalBatch {
    return {
      id: row.id,
      merchantId: row.merchant_id,
      mode: row.mode,
      token: row.token,
      totalUsdCents: row.total_usd_cents,
      items,
    };
  }

  private token(row: Pick<DisbursementRow, 'mode' | 'token'>): TokenConfig | null {
    return this.deps.chains.token(row.mode, row.token) ?? null;
  }

  private async loadIn(db: DbOrTx, mode: Mode, merchantId: string, id: string): Promise<Disbursement> {
    const [d] = await this.loadMany(db, mode, merchantId, [id]);
    if (!d) throw notFound('disbursement');
    return d;
  }

  private async loadMany(db: DbOrTx, mode: Mode, merchantId: string, ids: string[]): Promise<Disbursement[]> {
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
        this.json(
          row,
          items.filter((i) => i.disbursement_id === id),
          approvals.filter((a) => a.disbursement_id === id),
        ),
      ];
    });
  }

  /** The API's Disbursement, every field of the spec present. */
  json(row: DisbursementRow, items: ItemRow[], approvals: Array<{ user_id: string; approved_at: Date }>): Disbursement {
    const token = this.token(row);
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

  /** Mails every owner that a batch waits for approval (in the creating transaction: the outbox sends it). */
  private async mailOwners(tx: Tx, mode: Mode, d: Disbursement, owners: readonly string[]): Promise<void> {
    const url = `${this.deps.checkoutBase()}/dashboard/${mode}/disbursements/${d.id}`;
    const content = renderEmail({
      heading: `A disbursement waits for your approval`,
      paragraphs: [
        `“${d.title}” pays ${d.item_count} ${d.item_count === 1 ? 'address' : 'addresses'} ${usdText(BigInt(d.total_usd_cents))} in ${d.symbol} on ${d.chain}.`,
        `It needs ${d.approvals_required} owner ${d.approvals_required === 1 ? 'approval' : 'approvals'}. Check every item on the dashboard and approve it there with your authenticator code.`,
      ],
      action: { label: 'Review the disbursement', url },
      details: [
        ['Disbursement', d.id],
        ['Total', usdText(BigInt(d.total_usd_cents))],
        ['Items', String(d.item_count)],
      ],
    });
    for (const email of owners) {
      await this.deps.email.enqueue(tx, {
        merchantId: d.merchant_id,
        mode: mode,
        kind: 'disbursement.approval',
        to: email,
        subject: `Approve disbursement: ${d.title}`,
        text: content.text,
        html: content.html,
        dedupeKey: `disbursement:${d.id}:approval:${email}`,
      });
    }
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

function usdText(cents: bigint): string {
  const neg = cents < 0n;
  return `${neg ? '-' : ''}$${formatCents(neg ? -cents : cents).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;
}
