/**
 * The account's changes a dashboard user makes (Settings, Developers): each change and its audit row are written in
 * one transaction, here, so a page only parses its form and shows the outcome. API keys and the webhook secret are
 * issued, revoked and rolled by MerchantService with their audit rows; a new key rolled here is kept for the
 * session's next page in the same transaction (no key is issued that nobody can see).
 */
import type { Clock } from '../../core/clock.ts';
import type { Tenant } from '../../core/tenant.ts';
import { invalid } from '../../core/errors.ts';
import { withTx, type Db } from '../../db/index.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import type { Users } from '../users/index.ts';
import { checkBrandColor, processLogo } from './branding.ts';
import { storeLogo } from './logos.ts';
import { changes, type Fields } from './changes.ts';
import type { MerchantPatch, MerchantRecord, MerchantService } from './service.ts';

export interface MerchantSettingsDeps {
  db: Db;
  clock: Clock;
  merchants: MerchantService;
  audit: AuditLog;
  /** The owners' count (the quorum's ceiling) and the session notes that carry a new key to the next page. */
  users: { team: Pick<Users['team'], 'ownerCount'>; notes: Users['notes'] };
}

/** The Settings form: name, payout coin and the disbursement quorum (null: every owner, at most two). */
export interface AccountSettingsInput {
  name?: string;
  payoutToken?: string;
  approvalsRequired: number | null;
  /** `#RRGGBB`, or null to clear it. */
  brandColor?: string | null;
  underpaymentToleranceBps?: number;
}

/** The brand colour and payment tolerance (PATCH /account, Settings); absent fields are left as they are. */
export interface BrandToleranceInput {
  /** `{color}` sets or (null) clears the colour; null clears the colour and the logo. */
  branding?: { color?: string | null } | null;
  underpaymentToleranceBps?: number;
}

export class MerchantSettings {
  constructor(private readonly deps: MerchantSettingsDeps) {}

  /**
   * Saves the Settings form under the merchant row's lock; the audit row names what changed, from what, to what.
   * 400 for a bad value, or a quorum above the number of owners.
   */
  async save(
    merchantId: string,
    input: AccountSettingsInput,
    payoutTokens: readonly string[],
    actor: Actor,
  ): Promise<void> {
    const { merchants, audit, users } = this.deps;
    await withTx(this.deps.db, async (tx) => {
      if (input.approvalsRequired !== null) {
        const owners = await users.team.ownerCount(merchantId, tx);
        if (input.approvalsRequired > owners)
          throw invalid(
            `The account has ${owners} owner${owners === 1 ? '' : 's'}; a disbursement cannot need more approvals than that.`,
            'approvals_required',
          );
      }
      const { before, after } = await merchants.updateSettings(
        tx,
        merchantId,
        {
          name: input.name,
          payoutToken: input.payoutToken,
          approvalsRequired: input.approvalsRequired,
          brandColor: input.brandColor,
          underpaymentToleranceBps: input.underpaymentToleranceBps,
        },
        payoutTokens,
      );
      const changed: Record<string, unknown> = {};
      if (after.name !== before.name) changed.name = { from: before.name, to: after.name };
      if (after.payoutToken !== before.payoutToken)
        changed.payout_token = { from: before.payoutToken, to: after.payoutToken };
      if (after.approvalsRequired !== before.approvalsRequired)
        changed.approvals_required = { from: before.approvalsRequired, to: after.approvalsRequired };
      Object.assign(
        changed,
        changes(before, after, {
          color: (m) => m.brandColor,
          underpayment_tolerance_bps: (m) => m.underpaymentToleranceBps,
        }),
      );
      await audit.record(tx, { merchantId }, actor, 'settings.update', null, changed);
    });
  }

  /**
   * Sets the brand colour and the tolerance under the merchant row's lock, audited (`settings.branding`,
   * `settings.tolerance`: what changed, from what, to what) in the change's transaction. 400 for a colour text on it
   * cannot be read on (the nearest that passes is named) or a tolerance outside 0 to 500; nothing changes then.
   */
  async saveBrandTolerance(merchantId: string, input: BrandToleranceInput, actor: Actor): Promise<MerchantRecord> {
    const patch: MerchantPatch = {};
    const b = input.branding;
    if (b === null) Object.assign(patch, { brandColor: null, logoSha256: null });
    else if (b?.color !== undefined) patch.brandColor = b.color === null ? null : checkBrandColor(b.color);
    if (input.underpaymentToleranceBps !== undefined) patch.underpaymentToleranceBps = input.underpaymentToleranceBps;
    return this.audited(merchantId, patch, actor, [
      { action: 'settings.branding', fields: BRANDING },
      { action: 'settings.tolerance', fields: { underpayment_tolerance_bps: (m) => m.underpaymentToleranceBps } },
    ]);
  }

  /**
   * Decodes and re-encodes an uploaded logo (branding.ts), stores its pixels and makes it the merchant's logo,
   * audited (`settings.branding`). 400 on `logo` for a file that is not a PNG, JPEG or WebP of at most 256 kB.
   */
  /** `claimed`: the media type the upload gave the file ('' for none); a file that is not what it claims is refused. */
  async setLogo(merchantId: string, bytes: Buffer, actor: Actor, claimed = ''): Promise<MerchantRecord> {
    const logo = await processLogo(bytes, claimed);
    await storeLogo(this.deps.db, logo);
    return this.saveLogo(merchantId, logo.sha256, actor);
  }

  /** Removes the merchant's logo (the picture stays stored: its address may be cached). */
  removeLogo(merchantId: string, actor: Actor): Promise<MerchantRecord> {
    return this.saveLogo(merchantId, null, actor);
  }

  private saveLogo(merchantId: string, sha256: string | null, actor: Actor): Promise<MerchantRecord> {
    return this.audited(merchantId, { logoSha256: sha256 }, actor, [
      { action: 'settings.branding', fields: { logo_sha256: BRANDING.logo_sha256! } },
    ]);
  }

  /** `patch` under the merchant row's lock, with one audit row per entry of `rows` whose fields changed. */
  private audited(
    merchantId: string,
    patch: MerchantPatch,
    actor: Actor,
    rows: Array<{ action: string; fields: Fields }>,
  ): Promise<MerchantRecord> {
    return withTx(this.deps.db, async (tx) => {
      const { before, after } = await this.deps.merchants.updateIn(tx, merchantId, patch);
      for (const { action, fields } of rows) {
        const details = changes(before, after, fields);
        if (details) await this.deps.audit.record(tx, { merchantId }, actor, action, null, details);
      }
      return after;
    });
  }

  /** Sets (or, with null, clears) the mode's default webhook URL. 400 for a URL the mode cannot deliver to. */
  async setWebhookUrl(tenant: Tenant, url: string | null, actor: Actor): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      await this.deps.merchants.updateSettings(
        tx,
        tenant.merchantId,
        tenant.mode === 'live' ? { webhookUrlLive: url } : { webhookUrlTest: url },
        [],
      );
      await this.deps.audit.record(tx, tenant, actor, 'webhook_url.update', null, { url });
    });
  }

  /** A new key for the tenant's mode (the previous ones revoked), kept for session `sessionId`'s next page. */
  async rollKey(tenant: Tenant, actor: Actor, sessionId: string): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const { key } = await this.deps.merchants.rollKeyIn(tx, tenant, actor);
      await this.deps.users.notes.putKey(sessionId, tenant.mode, key, tx);
    });
  }

  /** The webhook secrets deliveries are signed with now (see MerchantService.webhookSecrets); the reveal is audited. */
  async revealWebhookSecret(
    merchantId: string,
    actor: Actor,
  ): Promise<{ secrets: string[]; previousUntil: Date | null }> {
    const shown = await this.deps.merchants.webhookSecrets(merchantId, this.deps.clock.now());
    await this.deps.audit.record(this.deps.db, { merchantId }, actor, 'webhook_secret.reveal');
    return shown;
  }
}

/** The branding's fields as the API names them. */
const BRANDING: Fields = { color: (m) => m.brandColor, logo_sha256: (m) => m.logoSha256 };
