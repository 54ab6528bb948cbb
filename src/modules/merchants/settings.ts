/**
 * The account's changes a dashboard user makes (Settings, Developers): each change and its audit row are written in
 * one transaction, here, so a page only parses its form and shows the outcome. API keys and the webhook secret are
 * issued by MerchantService; a new key is kept for the session's next page in the same transaction (no key is issued
 * that nobody can see).
 */
import type { Clock } from '../../core/clock.ts';
import type { Mode } from '../../core/mode.ts';
import { invalid } from '../../core/errors.ts';
import { withTx, type Db } from '../../db/index.ts';
import type { Actor, AuditLog } from '../audit/service.ts';
import type { Users } from '../users/index.ts';
import type { MerchantService } from './service.ts';

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
        const owners = await users.team.ownerCount(tx, merchantId);
        if (input.approvalsRequired > owners)
          throw invalid(
            `The account has ${owners} owner${owners === 1 ? '' : 's'}; a disbursement cannot need more approvals than that.`,
            'approvals_required',
          );
      }
      const { before, after } = await merchants.updateSettings(
        tx,
        merchantId,
        { name: input.name, payoutToken: input.payoutToken, approvalsRequired: input.approvalsRequired },
        payoutTokens,
      );
      const changed: Record<string, unknown> = {};
      if (after.name !== before.name) changed.name = { from: before.name, to: after.name };
      if (after.payoutToken !== before.payoutToken)
        changed.payout_token = { from: before.payoutToken, to: after.payoutToken };
      if (after.approvalsRequired !== before.approvalsRequired)
        changed.approvals_required = { from: before.approvalsRequired, to: after.approvalsRequired };
      await audit.record(tx, { merchantId, mode: null, actor, action: 'settings.update', details: changed });
    });
  }

  /** Sets (or, with null, clears) the mode's default webhook URL. 400 for a URL the mode cannot deliver to. */
  async setWebhookUrl(merchantId: string, mode: Mode, url: string | null, actor: Actor): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      await this.deps.merchants.updateSettings(
        tx,
        merchantId,
        mode === 'live' ? { webhookUrlLive: url } : { webhookUrlTest: url },
        [],
      );
      await this.deps.audit.record(tx, { merchantId, mode, actor, action: 'webhook_url.update', details: { url } });
    });
  }

  /** A new key for the mode (the previous ones revoked), kept for session `sessionId`'s next page. */
  async rollKey(merchantId: string, mode: Mode, actor: Actor, sessionId: string): Promise<void> {
    await this.deps.merchants.rollKey(merchantId, mode, async (tx, keyId, key) => {
      await this.deps.audit.record(tx, {
        merchantId,
        mode,
        actor,
        action: 'key.roll',
        target: { type: 'key', id: keyId },
      });
      await this.deps.users.notes.putKey(sessionId, mode, key, tx);
    });
  }

  /** Revokes the key `keyId` of the merchant. 404 for a key the merchant does not have. */
  async revokeKey(merchantId: string, mode: Mode, keyId: string, actor: Actor): Promise<void> {
    await this.deps.merchants.revokeKey(keyId, merchantId, (tx) =>
      this.deps.audit.record(tx, { merchantId, mode, actor, action: 'key.revoke', target: { type: 'key', id: keyId } }),
    );
  }

  /** The webhook secrets deliveries are signed with now (see MerchantService.webhookSecrets); the reveal is audited. */
  async revealWebhookSecret(
    merchantId: string,
    actor: Actor,
  ): Promise<{ secrets: string[]; previousUntil: Date | null }> {
    const shown = await this.deps.merchants.webhookSecrets(merchantId, this.deps.clock.now());
    await this.deps.audit.record(this.deps.db, { merchantId, mode: null, actor, action: 'webhook_secret.reveal' });
    return shown;
  }

  /** A new webhook secret, returned once (see MerchantService.rollWebhookSecret), audited in its transaction. */
  rollWebhookSecret(
    merchantId: string,
    actor: Actor,
  ): Promise<{ webhook_secret: string; previous_valid_until: string }> {
    return this.deps.merchants.rollWebhookSecret(merchantId, this.deps.clock.now(), (tx) =>
      this.deps.audit.record(tx, { merchantId, mode: null, actor, action: 'webhook_secret.roll' }),
    );
  }
}
