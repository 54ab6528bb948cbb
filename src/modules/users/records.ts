/**
 * What the users module's services share: the rows and records of users and sessions, where a request came from,
 * the services' dependencies, and the email and token helpers.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Db, DbOrTx } from '../../db/index.ts';
import type { SessionsTable, UsersTable } from './tables.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EmailService } from '../email/index.ts';
import type { MerchantService } from '../merchants/index.ts';
import type { Role } from './permissions.ts';

export const EMAIL = /^[^\s@<>"(),;:]+@[^\s@<>"(),;:]+\.[^\s@<>"(),;:]+$/;

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

export const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** A random token for a cookie or a link (32 bytes, base64url). */
export const newToken = () => randomBytes(32).toString('base64url');

export function normalEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The query for the current (not removed) user with `email`, which is normalised here. */
export function userByEmail(db: DbOrTx, email: string) {
  return db.selectFrom('users').selectAll().where('email', '=', normalEmail(email)).where('removed_at', 'is', null);
}

/** The query for the merchant's current (not removed) users. */
export function merchantUsers(db: DbOrTx, merchantId: string) {
  return db.selectFrom('users').where('merchant_id', '=', merchantId).where('removed_at', 'is', null);
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
