/** Row types of the users module's tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';
import type { Role } from './permissions.ts';

/** Dashboard users (migration 0011_dashboard; src/modules/users). */
export interface UsersTable {
  id: string;
  merchant_id: string;
  email: string;
  role: Role;
  password_hash: string | null;
  totp_secret_enc: string | null;
  totp_enabled_at: Timestamp | null;
  totp_last_step: ColumnType<bigint, bigint | string | number, bigint | string | number> | null;
  invited_by: string | null;
  last_signin_at: Timestamp | null;
  password_changed_at: Timestamp | null;
  removed_at: Timestamp | null;
  created_at: Timestamp;
}

export interface UserTokensTable {
  token_hash: string;
  user_id: string;
  purpose: 'setup' | 'reset';
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

export interface UserRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  used_at: Timestamp | null;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  merchant_id: string;
  stage: 'password' | 'enrol' | 'full';
  second_factor_at: Timestamp | null;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Timestamp;
  revoked_at: Timestamp | null;
}

/** What a dashboard session sees once on its next page (migration 0028; src/modules/users/notes.ts). */
export interface SessionNotesTable {
  id: string;
  session_id: string;
  kind: 'key' | 'page';
  mode: 'test' | 'live' | null;
  path: string | null;
  status: number | null;
  body: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

export interface SigninThrottleTable {
  key: string;
  window_start: Timestamp;
  failures: number;
}

declare module '../../db/schema.ts' {
  interface Database {
    users: UsersTable;
    user_tokens: UserTokensTable;
    user_recovery_codes: UserRecoveryCodesTable;
    sessions: SessionsTable;
    session_notes: SessionNotesTable;
    signin_throttle: SigninThrottleTable;
  }
}
