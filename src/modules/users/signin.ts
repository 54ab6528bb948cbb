/**
 * Sign-in with a password, and a change of password. Failures are throttled (throttle.ts: per account, per known
 * browser — the signed device cookie — and per address) and every attempt is in the audit log. The session starts at
 * the step that is next (sessions.ts `stageAfterPassword`): the second factor, its enrolment, or full.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { invalid } from '../../core/errors.ts';
import { withTx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { assertPasswordAcceptable, hashPassword, verifyPassword } from './credentials.ts';
import { userActor } from './entries.ts';
import {
  normalEmail,
  userByEmail,
  type ClientMeta,
  type NewSession,
  type SessionRow,
  type UserRow,
} from './records.ts';
import { stageAfterPassword } from './sessions.ts';
import { THROTTLE_LIMITS, type ThrottleKey } from './throttle.ts';
import { SigninService } from './signin-service.ts';

export class SignIn extends SigninService {
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
  async signIn(
    email: string,
    password: string,
    meta: ClientMeta & { device?: string },
  ): Promise<{ user: UserRow; session: NewSession }> {
    const normal = normalEmail(email);
    const user = await userByEmail(this.deps.db, normal).executeTakeFirst();
    const device = user ? this.knownDevice(user.id, meta.device) : null;
    const accountKey: ThrottleKey = device
      ? { key: `device:${user!.id}:${device}`, limit: THROTTLE_LIMITS.device }
      : { key: `account:${user?.id ?? normal}`, limit: THROTTLE_LIMITS.account };
    const keys = [accountKey, { key: `address:${meta.ip ?? '-'}`, limit: THROTTLE_LIMITS.address }];
    const actor: Actor = {
      type: user ? 'user' : 'anonymous',
      id: user?.id ?? null,
      label: normal.slice(0, 254),
      ip: meta.ip,
    };
    // An email no account has is recorded with no merchant.
    const account = user ? { merchantId: user.merchant_id } : null;
    try {
      await this.throttle.check(keys);
    } catch (err) {
      await this.deps.audit.record(this.deps.db, account, actor, 'signin.failed', null, { reason: 'throttled' });
      throw err;
    }
    const ok = await verifyPassword(user?.password_hash ?? null, password);
    if (!ok || !user) {
      await this.throttle.fail(keys);
      await this.deps.audit.record(this.deps.db, account, actor, 'signin.failed', null, { reason: 'password' });
      throw invalid('That email and password do not match an account.', 'password');
    }
    await this.throttle.clear([accountKey.key]);
    const stage = stageAfterPassword(user);
    return withTx(this.deps.db, async (tx) => {
      const session = await this.sessions.start(tx, user, meta, stage);
      if (stage !== 'password') await this.sessions.signedIn(tx, user, meta, 'password');
      return { user, session };
    });
  }

  /** Changes the password (the current one is required); every session ends and this browser gets a new one. */
  async changePassword(
    session: SessionRow,
    user: UserRow,
    current: string,
    next: string,
    meta: ClientMeta,
  ): Promise<NewSession> {
    const keys = [{ key: `account:${user.id}`, limit: THROTTLE_LIMITS.account }];
    await this.throttle.check(keys);
    if (!(await verifyPassword(user.password_hash, current))) {
      await this.throttle.fail(keys);
      throw invalid('Your current password is not right.', 'current_password');
    }
    await assertPasswordAcceptable(next, user.email, 'new_password');
    const passwordHash = await hashPassword(next);
    return withTx(this.deps.db, async (tx) => {
      await tx
        .updateTable('users')
        .set({ password_hash: passwordHash, password_changed_at: this.now() })
        .where('id', '=', user.id)
        .execute();
      await this.sessions.revokeAll(tx, user.id);
      await this.recordOnUser(tx, user, userActor(user, meta.ip), 'user.password_change');
      const s = await this.sessions.start(tx, user, meta, 'full');
      await tx
        .updateTable('sessions')
        .set({ second_factor_at: session.second_factor_at })
        .where('id', '=', s.session.id)
        .execute();
      return s;
    });
  }
}
