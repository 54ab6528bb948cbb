/**
 * Dashboard users: one merchant per user, a role, a password, a second factor, sessions and one-time links.
 *
 * - Users are created by the operator (`kasse user create`) or invited by an owner; either way they get a set-up
 *   link (24 hours, single use) and choose a password there. Invitations and password-reset links travel through
 *   the email outbox, written in the same transaction as the user or token they carry.
 * - Sign-in is password, then the second factor when enrolled; an owner without one must enrol TOTP before anything
 *   else (the session's `stage` says which step is next). Failures are throttled (throttle.ts) and every attempt is in
 *   the audit log.
 * - Sessions are rows; the browser holds a random token whose SHA-256 is the row id. They end after an hour idle or
 *   12 hours in all, and are revoked on sign-out, password change and removal of the user.
 * - The last owner of a merchant can be neither removed nor demoted (checked with every user of the merchant locked).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Selectable } from 'kysely';
import { HOUR, MINUTE, type Clock } from '../../core/clock.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import { decryptSecret, encryptSecret } from '../../core/secrets.ts';
import { withTx, type Db, type DbOrTx, type Tx } from '../../db/index.ts';
import type { SessionsTable, UsersTable } from '../../db/schema.ts';
import type { Actor, AuditLog } from '../audit/service.ts';
import type { EmailService } from '../email/service.ts';
import { renderEmail } from '../email/template.ts';
import { approvalsRequired } from '../merchants/lookup.ts';
import type { MerchantService } from '../merchants/service.ts';
import {
  assertPasswordAcceptable,
  hashPassword,
  looksLikeRecoveryCode,
  newRecoveryCodes,
  newTotp,
  recoveryCodeHash,
  totpStep,
  totpUri,
  verifyPassword,
} from './credentials.ts';
import { ROLES, type Role } from './permissions.ts';
import { SessionNotes } from './notes.ts';
import { SigninThrottle, THROTTLE_LIMITS, type ThrottleKey } from './throttle.ts';
import { textLength } from '../../core/text.ts';

/** NOTE: lifetimes. */
export const SESSION_IDLE_MS = 1 * HOUR;
export const SESSION_MAX_MS = 12 * HOUR;
export const SETUP_LINK_MS = 24 * HOUR;
export const RESET_LINK_MS = 1 * HOUR;
/** A second-factor check before a sensitive action counts for this long. */
export const FRESH_SECOND_FACTOR_MS = 5 * MINUTE;
/** last_seen_at is written at most this often per session. */
const TOUCH_MS = MINUTE;

const EMAIL = /^[^\s@<>"(),;:]+@[^\s@<>"(),;:]+\.[^\s@<>"(),;:]+$/;

export type UserRow = Selectable<UsersTable>;
export type SessionRow = Selectable<SessionsTable>;
export type SessionStage = SessionRow['stage'];

/** A user as the Team page and the CLI show it. */
export interface UserRecord {
  id: string;
  merchant_id: string;
  email: string;
  role: Role;
  /** `invited` until the set-up link was used. */
  status: 'invited' | 'active';
  totp: boolean;
  last_signin_at: string | null;
  created_at: string;
}

/** Where a request came from. */
export interface ClientMeta {
  ip: string | null;
  userAgent: string | null;
}

export interface NewSession {
  /** The cookie value; only its hash is stored. */
  token: string;
  session: SessionRow;
}

export interface UserDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  secretKey: Buffer;
  email: EmailService;
  audit: AuditLog;
  merchants: Pick<MerchantService, 'get'>;
  /** Public base URL of the checkout host, where the dashboard lives. */
  checkoutBase: () => string;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const token = () => randomBytes(32).toString('base64url');

export function normalEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function toUserRecord(u: UserRow): UserRecord {
  return {
    id: u.id,
    merchant_id: u.merchant_id,
    email: u.email,
    role: u.role,
    status: u.password_hash === null ? 'invited' : 'active',
    totp: u.totp_enabled_at !== null,
    last_signin_at: u.last_signin_at?.toISOString() ?? null,
    created_at: u.created_at.toISOString(),
  };
}

export class UserService {
  readonly throttle: SigninThrottle;
  /** What a session sees once on its next page (a new API key, a failed form's page). */
  readonly notes: SessionNotes;

  constructor(private readonly deps: UserDeps) {
    this.throttle = new SigninThrottle(deps.db, deps.clock);
    this.notes = new SessionNotes(deps.db, deps.clock, deps.secretKey);
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  private dashboardUrl(path: string): string {
    return `${this.deps.checkoutBase()}/dashboard${path}`;
  }

  // ---- team -------------------------------------------------------------------------------------------------

  /**
   * Creates a user with a set-up link. `invite` (an owner on the Team page) also emails the link; the operator's CLI
   * prints it instead. 400 for a bad email or role, or an email another user already has.
   */
  async create(input: { merchantId: string; email: string; role: string; actor: Actor; invite: boolean }): Promise<{ user: UserRecord; setup_url: string; expires_at: string }> {
    const email = normalEmail(input.email);
    if (textLength(email) > 254 || !EMAIL.test(email)) throw invalid('Enter an email address.', 'email');
    if (!(ROLES as readonly string[]).includes(input.role)) throw invalid('role must be owner, member or viewer', 'role');
    const merchant = await this.deps.merchants.get(input.merchantId);
    const now = this.now();
    try {
      return await withTx(this.deps.db, async (tx) => {
        const user = await tx
          .insertInto('users')
          .values({ id: newId('usr'), merchant_id: merchant.id, email, role: input.role as Role, invited_by: input.actor.type === 'user' ? input.actor.id : null, created_at: now })
          .returningAll()
          .executeTakeFirstOrThrow();
        const link = await this.issueToken(tx, user.id, 'setup');
        if (input.invite) await this.sendInvite(tx, user, merchant.name, link.url, input.actor.label ?? null);
        await this.deps.audit.record(tx, {
          merchantId: merchant.id,
          mode: null,
          actor: input.actor,
          action: input.invite ? 'user.invite' : 'user.create',
          target: { type: 'user', id: user.id },
          details: { email, role: user.role },
        });
        return { user: toUserRecord(user), setup_url: link.url, expires_at: link.expiresAt.toISOString() };
      });
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw invalid('A Kasse user with this email already exists.', 'email');
      throw err;
    }
  }

  /** A new set-up link for an invited user, emailed again (earlier links stop working). */
  async resendInvite(merchantId: string, userId: string, actor: Actor): Promise<void> {
    const merchant = await this.deps.merchants.get(merchantId);
    await withTx(this.deps.db, async (tx) => {
      const user = await this.lockUser(tx, merchantId, userId);
      if (user.password_hash !== null) throw invalidState('This user has already set up their account.');
      const link = await this.issueToken(tx, user.id, 'setup');
      await this.sendInvite(tx, user, merchant.name, link.url, actor.label ?? null);
      await this.deps.audit.record(tx, { merchantId, mode: null, actor, action: 'user.invite_resend', target: { type: 'user', id: user.id }, details: { email: user.email } });
    });
  }

  /** Operator: a fresh one-time link for a user (set-up, or a password reset for one who has a password). */
  async setupLink(email: string, actor: Actor): Promise<{ user: UserRecord; setup_url: string; expires_at: string }> {
    return withTx(this.deps.db, async (tx) => {
      const user = await tx.selectFrom('users').selectAll().where('email', '=', normalEmail(email)).where('removed_at', 'is', null).forUpdate().executeTakeFirst();
      if (!user) throw notFound('user');
      const link = await this.issueToken(tx, user.id, user.password_hash === null ? 'setup' : 'reset', SETUP_LINK_MS);
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor, action: 'user.setup_link', target: { type: 'user', id: user.id } });
      return { user: toUserRecord(user), setup_url: link.url, expires_at: link.expiresAt.toISOString() };
    });
  }

  /** Operator: removes a user's second factor and recovery codes (lost device); they enrol again at next sign-in. */
  async resetSecondFactor(email: string, actor: Actor): Promise<UserRecord> {
    return withTx(this.deps.db, async (tx) => {
      const user = await tx
        .updateTable('users')
        .set({ totp_secret_enc: null, totp_enabled_at: null, totp_last_step: null })
        .where('email', '=', normalEmail(email))
        .where('removed_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!user) throw notFound('user');
      await tx.deleteFrom('user_recovery_codes').where('user_id', '=', user.id).execute();
      await this.revokeAll(tx, user.id);
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor, action: 'user.second_factor_reset', target: { type: 'user', id: user.id } });
      return toUserRecord(user);
    });
  }

  async list(merchantId: string): Promise<UserRecord[]> {
    const rows = await this.deps.db.selectFrom('users').selectAll().where('merchant_id', '=', merchantId).where('removed_at', 'is', null).orderBy('id').execute();
    return rows.map(toUserRecord);
  }

  /** Users of every merchant, or of one (operator). */
  async listAll(merchantId?: string): Promise<UserRecord[]> {
    let q = this.deps.db.selectFrom('users').selectAll().where('removed_at', 'is', null);
    if (merchantId) q = q.where('merchant_id', '=', merchantId);
    return (await q.orderBy('id').execute()).map(toUserRecord);
  }

  async ownerCount(db: DbOrTx, merchantId: string): Promise<number> {
    const r = await db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('merchant_id', '=', merchantId)
      .where('role', '=', 'owner')
      .where('removed_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Changes a user's role. 422 when it would leave the merchant without an owner or below its approval quorum. */
  async changeRole(merchantId: string, userId: string, role: string, actor: Actor): Promise<UserRecord> {
    if (!(ROLES as readonly string[]).includes(role)) throw invalid('role must be owner, member or viewer', 'role');
    return withTx(this.deps.db, async (tx) => {
      const user = await this.lockUser(tx, merchantId, userId);
      if (user.role === role) return toUserRecord(user);
      if (user.role === 'owner') await this.assertOwnersAfter(tx, merchantId, 'demote');
      const updated = await tx.updateTable('users').set({ role: role as Role }).where('id', '=', user.id).returningAll().executeTakeFirstOrThrow();
      await this.deps.audit.record(tx, { merchantId, mode: null, actor, action: 'user.role_change', target: { type: 'user', id: user.id }, details: { email: user.email, from: user.role, to: role } });
      return toUserRecord(updated);
    });
  }

  /** Removes a user: their sessions end at once. 422 for the last owner. */
  async remove(merchantId: string, userId: string, actor: Actor): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const user = await this.lockUser(tx, merchantId, userId);
      if (user.role === 'owner') await this.assertOwnersAfter(tx, merchantId, 'remove');
      await tx.updateTable('users').set({ removed_at: this.now() }).where('id', '=', user.id).execute();
      await tx.updateTable('user_tokens').set({ used_at: this.now() }).where('user_id', '=', user.id).where('used_at', 'is', null).execute();
      await this.revokeAll(tx, user.id);
      await this.deps.audit.record(tx, { merchantId, mode: null, actor, action: 'user.remove', target: { type: 'user', id: user.id }, details: { email: user.email, role: user.role } });
    });
  }

  /** Locks every user of the merchant (so concurrent role changes serialize) and returns the one asked for. */
  private async lockUser(tx: Tx, merchantId: string, userId: string): Promise<UserRow> {
    const all = await tx.selectFrom('users').selectAll().where('merchant_id', '=', merchantId).where('removed_at', 'is', null).orderBy('id').forUpdate().execute();
    const user = all.find((u) => u.id === userId);
    if (!user) throw notFound('user');
    return user;
  }

  /** One owner fewer must leave at least one owner, and at least the merchant's fixed approval quorum. */
  private async assertOwnersAfter(tx: Tx, merchantId: string, what: 'demote' | 'remove'): Promise<void> {
    const owners = (await this.ownerCount(tx, merchantId)) - 1;
    if (owners < 1) throw invalidState(`The last owner cannot be ${what === 'remove' ? 'removed' : 'given another role'}. Make another user an owner first.`);
    const quorum = await approvalsRequired(tx, merchantId);
    if (quorum !== null && owners < quorum) {
      throw invalidState(`Disbursements need ${quorum} owner approvals; lower the quorum in Settings before leaving fewer owners.`);
    }
  }

  private async sendInvite(tx: Tx, user: UserRow, merchantName: string, url: string, inviter: string | null): Promise<void> {
    const mail = renderEmail({
      heading: `Join ${merchantName} on Kasse`,
      paragraphs: [
        `${inviter ?? 'The owner of the account'} invited you to the ${merchantName} dashboard on Kasse as ${user.role === 'owner' ? 'an owner' : `a ${user.role}`}.`,
        'Open the link to choose your password. It works once, for 24 hours.',
      ],
      action: { label: 'Set up your account', url },
      footer: ['If you did not expect this invitation, ignore this email; nothing happens until the link is used.'],
    });
    await this.deps.email.enqueue(tx, {
      merchantId: user.merchant_id,
      mode: null,
      kind: 'user.invite',
      to: user.email,
      subject: `You are invited to ${merchantName} on Kasse`,
      text: mail.text,
      html: mail.html,
      sensitive: true,
    });
  }

  // ---- one-time links -----------------------------------------------------------------------------------------

  /** A new link; any earlier unused link of the user stops working. */
  private async issueToken(tx: Tx, userId: string, purpose: 'setup' | 'reset', ttl = purpose === 'setup' ? SETUP_LINK_MS : RESET_LINK_MS) {
    const now = this.now();
    await tx.updateTable('user_tokens').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).execute();
    const t = token();
    const expiresAt = new Date(now.getTime() + ttl);
    await tx.insertInto('user_tokens').values({ token_hash: sha256(t), user_id: userId, purpose, expires_at: expiresAt, created_at: now }).execute();
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
  async redeemToken(t: string, purpose: 'setup' | 'reset', password: string, meta: ClientMeta): Promise<{ user: UserRow; session: NewSession }> {
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
      await this.revokeAll(tx, user.id);
      const actor: Actor = { type: 'user', id: user.id, label: user.email, ip: meta.ip };
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor, action: purpose === 'setup' ? 'user.setup' : 'user.password_reset', target: { type: 'user', id: user.id } });
      const stage = this.stageAfterPassword(user);
      const session = await this.startSession(tx, user, meta, stage);
      // A member or viewer without a second factor is signed in by the link itself; others when their factor is given.
      if (stage === 'full') await this.signedIn(tx, user, meta, purpose === 'setup' ? 'setup_link' : 'reset_link');
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
      const user = await tx.selectFrom('users').selectAll().where('email', '=', normal).where('removed_at', 'is', null).executeTakeFirst();
      if (!user || user.password_hash === null) return;
      const link = await this.issueToken(tx, user.id, 'reset');
      const merchant = await this.deps.merchants.get(user.merchant_id);
      const mail = renderEmail({
        heading: 'Reset your Kasse password',
        paragraphs: [`Someone asked to reset the password of ${user.email} on the ${merchant.name} dashboard.`, 'Open the link within an hour to choose a new password. It works once; signing in afterwards still asks for your second factor.'],
        action: { label: 'Choose a new password', url: link.url },
        footer: [`If it was not you, ignore this email: your password stays as it is. The request came from ${meta.ip ?? 'an unknown address'}.`],
      });
      await this.deps.email.enqueue(tx, { merchantId: user.merchant_id, mode: null, kind: 'user.password_reset', to: user.email, subject: 'Reset your Kasse password', text: mail.text, html: mail.html, sensitive: true });
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor: { type: 'anonymous', id: null, label: normal, ip: meta.ip }, action: 'user.password_reset_request', target: { type: 'user', id: user.id } });
    });
  }

  // ---- sign-in ------------------------------------------------------------------------------------------------

  private stageAfterPassword(user: UserRow): SessionStage {
    if (user.totp_enabled_at !== null) return 'password';
    return user.role === 'owner' ? 'enrol' : 'full';
  }

  /** A signed value naming a browser that signed in as `userId` (the device cookie). */
  deviceCookie(userId: string): string {
    const id = randomBytes(12).toString('base64url');
    return `${id}.${createHmac('sha256', this.deps.secretKey).update(`device:${userId}:${id}`).digest('base64url')}`;
  }

  private knownDevice(userId: string, cookie: string | undefined): string | null {
    const m = cookie ? /^([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/.exec(cookie) : null;
    if (!m) return null;
    const expected = createHmac('sha256', this.deps.secretKey).update(`device:${userId}:${m[1]}`).digest();
    const given = Buffer.from(m[2]!, 'base64url');
    return given.length === expected.length && timingSafeEqual(given, expected) ? m[1]! : null;
  }

  /**
   * The password step. 429 while throttled; 400 (param `password`) for a wrong email or password, with the same
   * message for both. On success a session at its next stage.
   */
  async signIn(email: string, password: string, meta: ClientMeta & { device?: string }): Promise<{ user: UserRow; session: NewSession }> {
    const normal = normalEmail(email);
    const user = await this.deps.db.selectFrom('users').selectAll().where('email', '=', normal).where('removed_at', 'is', null).executeTakeFirst();
    const device = user ? this.knownDevice(user.id, meta.device) : null;
    const accountKey: ThrottleKey = device
      ? { key: `device:${user!.id}:${device}`, limit: THROTTLE_LIMITS.device }
      : { key: `account:${user?.id ?? normal}`, limit: THROTTLE_LIMITS.account };
    const keys = [accountKey, { key: `address:${meta.ip ?? '-'}`, limit: THROTTLE_LIMITS.address }];
    const actor: Actor = { type: user ? 'user' : 'anonymous', id: user?.id ?? null, label: normal.slice(0, 254), ip: meta.ip };
    try {
      await this.throttle.check(keys);
    } catch (err) {
      await this.deps.audit.record(this.deps.db, { merchantId: user?.merchant_id ?? null, mode: null, actor, action: 'signin.failed', details: { reason: 'throttled' } });
      throw err;
    }
    const ok = await verifyPassword(user?.password_hash ?? null, password);
    if (!ok || !user) {
      await this.throttle.fail(keys);
      await this.deps.audit.record(this.deps.db, { merchantId: user?.merchant_id ?? null, mode: null, actor, action: 'signin.failed', details: { reason: 'password' } });
      throw invalid('That email and password do not match an account.', 'password');
    }
    await this.throttle.clear([accountKey.key]);
    const stage = this.stageAfterPassword(user);
    return withTx(this.deps.db, async (tx) => {
      const session = await this.startSession(tx, user, meta, stage);
      if (stage !== 'password') await this.signedIn(tx, user, meta, 'password');
      return { user, session };
    });
  }

  private async signedIn(tx: Tx, user: UserRow, meta: ClientMeta, method: string): Promise<void> {
    await tx.updateTable('users').set({ last_signin_at: this.now() }).where('id', '=', user.id).execute();
    await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor: { type: 'user', id: user.id, label: user.email, ip: meta.ip }, action: 'signin.succeeded', details: { method } });
  }

  /**
   * The second step: a TOTP code or one of the recovery codes (each works once). 429 while throttled, 400 (param
   * `code`) for a wrong code. The session becomes full.
   */
  async secondFactor(session: SessionRow, user: UserRow, code: string, meta: ClientMeta): Promise<{ recoveryCodesLeft: number | null }> {
    if (session.stage !== 'password') throw invalidState('No second factor is due for this session.');
    const recovery = looksLikeRecoveryCode(code);
    const usedRecovery = await this.verifySecondFactor(user, code, meta, 'signin.failed');
    return withTx(this.deps.db, async (tx) => {
      await tx.updateTable('sessions').set({ stage: 'full', second_factor_at: this.now() }).where('id', '=', session.id).execute();
      await this.signedIn(tx, user, meta, recovery ? 'recovery_code' : 'totp');
      if (!usedRecovery) return { recoveryCodesLeft: null };
      const left = await tx.selectFrom('user_recovery_codes').select((eb) => eb.fn.countAll<string>().as('n')).where('user_id', '=', user.id).where('used_at', 'is', null).executeTakeFirstOrThrow();
      return { recoveryCodesLeft: Number(left.n) };
    });
  }

  /**
   * A fresh second-factor check before a sensitive action (revealing the webhook secret, approving a disbursement):
   * the user's current TOTP code. Throttled like sign-in; a failure is in the audit log. Marks the session.
   */
  async confirmSecondFactor(session: SessionRow, user: UserRow, code: string, meta: ClientMeta, purpose: string): Promise<void> {
    if (user.totp_enabled_at === null) throw invalidState('Set up two-factor authentication on your Account page first.');
    if (looksLikeRecoveryCode(code)) throw invalid('Enter the 6-digit code from your authenticator app.', 'code');
    await this.verifySecondFactor(user, code, meta, 'second_factor.failed', purpose);
    await this.deps.db.updateTable('sessions').set({ second_factor_at: this.now() }).where('id', '=', session.id).execute();
  }

  /** Whether the session gave its second factor recently enough for a sensitive action. */
  hasFreshSecondFactor(session: SessionRow): boolean {
    return session.second_factor_at !== null && this.now().getTime() - session.second_factor_at.getTime() <= FRESH_SECOND_FACTOR_MS;
  }

  /** Checks a TOTP or recovery code; true when a recovery code was used up. Throttled; failures audited. */
  private async verifySecondFactor(user: UserRow, code: string, meta: ClientMeta, failAction: string, purpose?: string): Promise<boolean> {
    const keys = [{ key: `factor:${user.id}`, limit: THROTTLE_LIMITS.secondFactor }];
    const actor: Actor = { type: 'user', id: user.id, label: user.email, ip: meta.ip };
    try {
      await this.throttle.check(keys);
    } catch (err) {
      await this.deps.audit.record(this.deps.db, { merchantId: user.merchant_id, mode: null, actor, action: failAction, details: { reason: 'throttled', ...(purpose ? { purpose } : {}) } });
      throw err;
    }
    const fresh = await this.deps.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow();
    let ok = false;
    let recovery = false;
    if (looksLikeRecoveryCode(code)) {
      const r = await this.deps.db
        .updateTable('user_recovery_codes')
        .set({ used_at: this.now() })
        .where('user_id', '=', user.id)
        .where('code_hash', '=', recoveryCodeHash(this.deps.secretKey, user.id, code))
        .where('used_at', 'is', null)
        .executeTakeFirst();
      ok = recovery = r.numUpdatedRows === 1n;
    } else if (fresh.totp_secret_enc && fresh.totp_enabled_at) {
      const step = totpStep(decryptSecret(this.deps.secretKey, fresh.totp_secret_enc), code, this.deps.clock.millis());
      if (step !== null) {
        // A code is good once: the step must be later than the last one accepted (checked and set in one statement).
        const r = await this.deps.db
          .updateTable('users')
          .set({ totp_last_step: step })
          .where('id', '=', user.id)
          .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', BigInt(step))]))
          .executeTakeFirst();
        ok = r.numUpdatedRows === 1n;
      }
    }
    if (!ok) {
      await this.throttle.fail(keys);
      await this.deps.audit.record(this.deps.db, { merchantId: user.merchant_id, mode: null, actor, action: failAction, details: { reason: 'code', ...(purpose ? { purpose } : {}) } });
      throw invalid('That code is not valid. Enter the current 6-digit code, or one of your recovery codes.', 'code');
    }
    await this.throttle.clear(keys.map((k) => k.key));
    return recovery;
  }

  // ---- second factor enrolment ----------------------------------------------------------------------------------

  /** Starts (or restarts) TOTP enrolment: a new secret kept unconfirmed until a code from it is entered. */
  async beginEnrolment(user: UserRow, issuer: string): Promise<{ secret: string; uri: string }> {
    if (user.totp_enabled_at !== null) throw invalidState('Two-factor authentication is already set up.');
    const t = newTotp(user.email, issuer);
    await this.deps.db.updateTable('users').set({ totp_secret_enc: encryptSecret(this.deps.secretKey, t.secret) }).where('id', '=', user.id).where('totp_enabled_at', 'is', null).execute();
    return t;
  }

  /** The unconfirmed enrolment secret (to show the same QR code again after a wrong code). */
  pendingEnrolment(user: UserRow, issuer: string): { secret: string; uri: string } | null {
    if (user.totp_enabled_at !== null || !user.totp_secret_enc) return null;
    const secret = decryptSecret(this.deps.secretKey, user.totp_secret_enc);
    return { secret, uri: totpUri(user.email, issuer, secret) };
  }

  /** Confirms enrolment with a code from the app; returns the 10 recovery codes (shown once). The session becomes full. */
  async confirmEnrolment(session: SessionRow, user: UserRow, code: string, meta: ClientMeta): Promise<string[]> {
    if (user.totp_enabled_at !== null || !user.totp_secret_enc) throw invalidState('Start setting up two-factor authentication first.');
    const keys = [{ key: `factor:${user.id}`, limit: THROTTLE_LIMITS.secondFactor }];
    await this.throttle.check(keys);
    const step = totpStep(decryptSecret(this.deps.secretKey, user.totp_secret_enc), code, this.deps.clock.millis());
    if (step === null) {
      await this.throttle.fail(keys);
      throw invalid('That code does not match. Check the time on your phone and enter the current 6-digit code.', 'code');
    }
    const codes = newRecoveryCodes();
    await withTx(this.deps.db, async (tx) => {
      await tx.updateTable('users').set({ totp_enabled_at: this.now(), totp_last_step: step }).where('id', '=', user.id).execute();
      await this.replaceRecoveryCodes(tx, user.id, codes);
      const wasEnrolStage = session.stage === 'enrol';
      await tx.updateTable('sessions').set({ stage: 'full', second_factor_at: this.now() }).where('id', '=', session.id).execute();
      const actor: Actor = { type: 'user', id: user.id, label: user.email, ip: meta.ip };
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor, action: 'user.second_factor_enrol', target: { type: 'user', id: user.id } });
      if (wasEnrolStage) await this.signedIn(tx, user, meta, 'password');
    });
    return codes;
  }

  /** New recovery codes (the old ones stop working), after a fresh TOTP code. */
  async regenerateRecoveryCodes(session: SessionRow, user: UserRow, code: string, meta: ClientMeta): Promise<string[]> {
    await this.confirmSecondFactor(session, user, code, meta, 'recovery_codes');
    const codes = newRecoveryCodes();
    await withTx(this.deps.db, async (tx) => {
      await this.replaceRecoveryCodes(tx, user.id, codes);
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor: { type: 'user', id: user.id, label: user.email, ip: meta.ip }, action: 'user.recovery_codes', target: { type: 'user', id: user.id } });
    });
    return codes;
  }

  private async replaceRecoveryCodes(tx: Tx, userId: string, codes: string[]): Promise<void> {
    await tx.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
    await tx.insertInto('user_recovery_codes').values(codes.map((c) => ({ user_id: userId, code_hash: recoveryCodeHash(this.deps.secretKey, userId, c) }))).execute();
  }

  /** Changes the password (the current one is required); every session ends and this browser gets a new one. */
  async changePassword(session: SessionRow, user: UserRow, current: string, next: string, meta: ClientMeta): Promise<NewSession> {
    const keys = [{ key: `account:${user.id}`, limit: THROTTLE_LIMITS.account }];
    await this.throttle.check(keys);
    if (!(await verifyPassword(user.password_hash, current))) {
      await this.throttle.fail(keys);
      throw invalid('Your current password is not right.', 'current_password');
    }
    await assertPasswordAcceptable(next, user.email, 'new_password');
    const passwordHash = await hashPassword(next);
    return withTx(this.deps.db, async (tx) => {
      await tx.updateTable('users').set({ password_hash: passwordHash, password_changed_at: this.now() }).where('id', '=', user.id).execute();
      await this.revokeAll(tx, user.id);
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor: { type: 'user', id: user.id, label: user.email, ip: meta.ip }, action: 'user.password_change', target: { type: 'user', id: user.id } });
      const s = await this.startSession(tx, user, meta, 'full');
      await tx.updateTable('sessions').set({ second_factor_at: session.second_factor_at }).where('id', '=', s.session.id).execute();
      return s;
    });
  }

  // ---- sessions -----------------------------------------------------------------------------------------------

  private async startSession(tx: Tx, user: UserRow, meta: ClientMeta, stage: SessionStage): Promise<NewSession> {
    const t = token();
    const now = this.now();
    const session = await tx
      .insertInto('sessions')
      .values({
        id: sha256(t),
        user_id: user.id,
        merchant_id: user.merchant_id,
        stage,
        ip: meta.ip,
        user_agent: meta.userAgent?.slice(0, 300) ?? null,
        created_at: now,
        last_seen_at: now,
        expires_at: new Date(now.getTime() + SESSION_MAX_MS),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { token: t, session };
  }

  /** The live session and its user for a cookie value; null when unknown, revoked, idle too long or too old. */
  async load(cookie: string | undefined): Promise<{ session: SessionRow; user: UserRow } | null> {
    if (!cookie || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) return null;
    const now = this.now();
    const row = await this.deps.db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .selectAll('sessions')
      .select(['users.email', 'users.role', 'users.password_hash', 'users.totp_secret_enc', 'users.totp_enabled_at', 'users.totp_last_step', 'users.invited_by', 'users.last_signin_at', 'users.password_changed_at', 'users.removed_at', 'users.created_at as user_created_at'])
      .where('sessions.id', '=', sha256(cookie))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null || row.removed_at !== null) return null;
    if (row.expires_at.getTime() <= now.getTime() || row.last_seen_at.getTime() + SESSION_IDLE_MS <= now.getTime()) return null;
    const session: SessionRow = {
      id: row.id,
      user_id: row.user_id,
      merchant_id: row.merchant_id,
      stage: row.stage,
      second_factor_at: row.second_factor_at,
      ip: row.ip,
      user_agent: row.user_agent,
      created_at: row.created_at,
      last_seen_at: row.last_seen_at,
      expires_at: row.expires_at,
      revoked_at: row.revoked_at,
    };
    const user: UserRow = {
      id: row.user_id,
      merchant_id: row.merchant_id,
      email: row.email,
      role: row.role,
      password_hash: row.password_hash,
      totp_secret_enc: row.totp_secret_enc,
      totp_enabled_at: row.totp_enabled_at,
      totp_last_step: row.totp_last_step,
      invited_by: row.invited_by,
      last_signin_at: row.last_signin_at,
      password_changed_at: row.password_changed_at,
      removed_at: row.removed_at,
      created_at: row.user_created_at,
    };
    if (now.getTime() - row.last_seen_at.getTime() >= TOUCH_MS) {
      await this.deps.db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', row.id).execute();
    }
    return { session, user };
  }

  async signOut(session: SessionRow, user: UserRow, meta: ClientMeta): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      await tx.updateTable('sessions').set({ revoked_at: this.now() }).where('id', '=', session.id).execute();
      await this.deps.audit.record(tx, { merchantId: user.merchant_id, mode: null, actor: { type: 'user', id: user.id, label: user.email, ip: meta.ip }, action: 'signout' });
    });
  }

  private async revokeAll(tx: Tx, userId: string): Promise<void> {
    await tx.updateTable('sessions').set({ revoked_at: this.now() }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
  }
}
