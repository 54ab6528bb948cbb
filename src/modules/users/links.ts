/**
 * One-time links: a set-up link (24 hours) for a new user, a password-reset link (1 hour) on request. A link works
 * once; a new one ends the earlier ones. Only its SHA-256 is stored; reset links travel through the email outbox,
 * written in the transaction that issues them.
 */
import { HOUR } from '../../core/clock.ts';
import { invalid, notFound } from '../../core/errors.ts';
import { withTx, type Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { renderEmail } from '../email/index.ts';
import { assertPasswordAcceptable, hashPassword } from './credentials.ts';
import { userActor } from './entries.ts';
import {
  EMAIL,
  newToken,
  normalEmail,
  sha256,
  toUserRecord,
  userByEmail,
  type ClientMeta,
  type NewSession,
  type UserRecord,
  type UserRow,
} from './records.ts';
import { stageAfterPassword } from './sessions.ts';
import { THROTTLE_LIMITS } from './throttle.ts';
import { SigninService } from './signin-service.ts';

/** NOTE: lifetimes. */
export const SETUP_LINK_MS = 24 * HOUR;
export const RESET_LINK_MS = 1 * HOUR;

export class OneTimeLinks extends SigninService {
  private dashboardUrl(path: string): string {
    return `${this.deps.checkoutBase()}/dashboard${path}`;
  }

  /** Every unused link of the user stops working. */
  async endLinks(tx: Tx, userId: string): Promise<void> {
    await tx
      .updateTable('user_tokens')
      .set({ used_at: this.now() })
      .where('user_id', '=', userId)
      .where('used_at', 'is', null)
      .execute();
  }

  /** A new link; any earlier unused link of the user stops working. */
  async issueToken(
    tx: Tx,
    userId: string,
    purpose: 'setup' | 'reset',
    ttl = purpose === 'setup' ? SETUP_LINK_MS : RESET_LINK_MS,
  ) {
    const now = this.now();
    await this.endLinks(tx, userId);
    const t = newToken();
    const expiresAt = new Date(now.getTime() + ttl);
    await tx
      .insertInto('user_tokens')
      .values({ token_hash: sha256(t), user_id: userId, purpose, expires_at: expiresAt, created_at: now })
      .execute();
    return { url: this.dashboardUrl(`/${purpose}/${t}`), expiresAt };
  }

  /** The user a link is for, while it is unused and unexpired; null otherwise. */
  async checkToken(t: string, purpose: 'setup' | 'reset'): Promise<UserRow | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(t)) return null;
    const row = await this.deps.db
      .selectFrom('user_tokens')
      .innerJoin('users', 'users.id', 'user_tokens.user_id')
      .selectAll('users')
      .where('user_tokens.token_hash', '=', sha256(t))
      .where('user_tokens.purpose', '=', purpose)
      .where('user_tokens.used_at', 'is', null)
      .where('user_tokens.expires_at', '>', this.now())
      .where('users.removed_at', 'is', null)
      .executeTakeFirst();
    return row ?? null;
  }

  /**
   * Uses a link: sets the password, ends every session of the user, and signs this browser in (at the second-factor
   * or enrolment step when one is due). 400 on the password; 404 for a used, expired or unknown link.
   */
  async redeemToken(
    t: string,
    purpose: 'setup' | 'reset',
    password: string,
    meta: ClientMeta,
  ): Promise<{ user: UserRow; session: NewSession }> {
    const candidate = await this.checkToken(t, purpose);
    if (!candidate) throw notFound('link (it may have been used already or expired)');
    await assertPasswordAcceptable(password, candidate.email);
    const passwordHash = await hashPassword(password);
    return withTx(this.deps.db, async (tx) => {
      const used = await tx
        .updateTable('user_tokens')
        .set({ used_at: this.now() })
        .where('token_hash', '=', sha256(t))
        .where('used_at', 'is', null)
        .where('expires_at', '>', this.now())
        .returning('user_id')
        .executeTakeFirst();
      if (!used) throw notFound('link (it may have been used already or expired)');
      const user = await tx
        .updateTable('users')
        .set({ password_hash: passwordHash, password_changed_at: this.now() })
        .where('id', '=', used.user_id)
        .where('removed_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!user) throw notFound('link (it may have been used already or expired)');
      await this.sessions.revokeAll(tx, user.id);
      const actor = userActor(user, meta.ip);
      await this.recordOnUser(tx, user, actor, purpose === 'setup' ? 'user.setup' : 'user.password_reset');
      const stage = stageAfterPassword(user);
      const session = await this.sessions.start(tx, user, meta, stage);
      // A member or viewer without a second factor is signed in by the link itself; others when their factor is given.
      if (stage === 'full')
        await this.sessions.signedIn(tx, user, meta, purpose === 'setup' ? 'setup_link' : 'reset_link');
      return { user, session };
    });
  }

  /**
   * Emails a password-reset link when the address belongs to a user; answers the same either way (no account
   * discovery). Throttled per client address.
   */
  async requestReset(email: string, meta: ClientMeta): Promise<void> {
    const addressKey = { key: `reset:${meta.ip ?? '-'}`, limit: THROTTLE_LIMITS.reset };
    await this.throttle.check([addressKey]);
    await this.throttle.fail([addressKey]);
    const normal = normalEmail(email);
    if (!EMAIL.test(normal)) throw invalid('Enter an email address.', 'email');
    await withTx(this.deps.db, async (tx) => {
      const user = await userByEmail(tx, normal).executeTakeFirst();
      if (!user || user.password_hash === null) return;
      const link = await this.issueToken(tx, user.id, 'reset');
      const merchant = await this.deps.merchants.get(user.merchant_id);
      const mail = renderEmail({
        heading: 'Reset your Kasse password',
        paragraphs: [
          `Someone asked to reset the password of ${user.email} on the ${merchant.name} dashboard.`,
          'Open the link within an hour to choose a new password. It works once; signing in afterwards still asks for your second factor.',
        ],
        action: { label: 'Choose a new password', url: link.url },
        footer: [
          `If it was not you, ignore this email: your password stays as it is. The request came from ${meta.ip ?? 'an unknown address'}.`,
        ],
      });
      await this.deps.email.enqueue(tx, {
        merchantId: user.merchant_id,
        mode: null,
        kind: 'user.password_reset',
        to: user.email,
        subject: 'Reset your Kasse password',
        text: mail.text,
        html: mail.html,
        sensitive: true,
      });
      await this.recordOnUser(
        tx,
        user,
        { type: 'anonymous', id: null, label: normal, ip: meta.ip },
        'user.password_reset_request',
      );
    });
  }

  /** Operator: a fresh one-time link for a user (set-up, or a password reset for one who has a password). */
  async setupLink(email: string, actor: Actor): Promise<{ user: UserRecord; setup_url: string; expires_at: string }> {
    return withTx(this.deps.db, async (tx) => {
      const user = await userByEmail(tx, email).forUpdate().executeTakeFirst();
      if (!user) throw notFound('user');
      const link = await this.issueToken(tx, user.id, user.password_hash === null ? 'setup' : 'reset', SETUP_LINK_MS);
      await this.recordOnUser(tx, user, actor, 'user.setup_link');
      return { user: toUserRecord(user), setup_url: link.url, expires_at: link.expiresAt.toISOString() };
    });
  }
}
