/**
 * Dashboard sessions: rows whose id is the SHA-256 of a random token the browser holds. They end after an hour idle
 * or 12 hours in all, and are revoked on sign-out, password change and removal of the user.
 */
import { HOUR, MINUTE } from '../../core/clock.ts';
import { withTx, type Tx } from '../../db/index.ts';
import { userActor } from './entries.ts';
import {
  sha256,
  newToken,
  type ClientMeta,
  type NewSession,
  type SessionRow,
  type SessionStage,
  type UserDeps,
  type UserRow,
} from './records.ts';

/** NOTE: lifetimes. */
export const SESSION_IDLE_MS = 1 * HOUR;
export const SESSION_MAX_MS = 12 * HOUR;
/** last_seen_at is written at most this often per session. */
const TOUCH_MS = MINUTE;

/** The stage a session starts at once the password is given: the second factor, its enrolment (owners), or full. */
export function stageAfterPassword(user: UserRow): SessionStage {
  if (user.totp_enabled_at !== null) return 'password';
  return user.role === 'owner' ? 'enrol' : 'full';
}

export class Sessions {
  constructor(private readonly deps: UserDeps) {}

  private now(): Date {
    return this.deps.clock.now();
  }

  /** A new session of the user at `stage`; the token is the cookie value. */
  async start(tx: Tx, user: UserRow, meta: ClientMeta, stage: SessionStage): Promise<NewSession> {
    const t = newToken();
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
      .select([
        'users.email',
        'users.role',
        'users.password_hash',
        'users.totp_secret_enc',
        'users.totp_enabled_at',
        'users.totp_last_step',
        'users.invited_by',
        'users.last_signin_at',
        'users.password_changed_at',
        'users.removed_at',
        'users.created_at as user_created_at',
      ])
      .where('sessions.id', '=', sha256(cookie))
      .executeTakeFirst();
    if (!row || row.revoked_at !== null || row.removed_at !== null) return null;
    if (row.expires_at.getTime() <= now.getTime() || row.last_seen_at.getTime() + SESSION_IDLE_MS <= now.getTime())
      return null;
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
      await this.deps.audit.record(tx, { merchantId: user.merchant_id }, userActor(user, meta.ip), 'signout');
    });
  }

  /** The user is signed in (the session became full): the time of it, and the audit row. */
  async signedIn(tx: Tx, user: UserRow, meta: ClientMeta, method: string): Promise<void> {
    await tx.updateTable('users').set({ last_signin_at: this.now() }).where('id', '=', user.id).execute();
    await this.deps.audit.record(
      tx,
      { merchantId: user.merchant_id },
      userActor(user, meta.ip),
      'signin.succeeded',
      null,
      {
        method,
      },
    );
  }

  /** Ends every session of the user (sign-out elsewhere, password change, removal, second factor reset). */
  async revokeAll(tx: Tx, userId: string): Promise<void> {
    await tx
      .updateTable('sessions')
      .set({ revoked_at: this.now() })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .execute();
  }
}
