/**
 * The merchant dashboard: users and their roles, one-time set-up and reset links, second factor (TOTP secret sealed
 * with the operator's key, recovery codes as hashes), server-side sessions, sign-in throttling, the audit log, and
 * the merchant settings the dashboard edits (payout coin, disbursement quorum) plus the previous webhook secret kept
 * during a roll's overlap window.
 *
 * Emails are unique among users who are not removed (one merchant per user). Removed users keep their row (the audit
 * log names them) with `removed_at` set. Session cookies carry a random token; only its SHA-256 is stored here.
 *
 * Other modules' tables it makes or changes: `audit_log` (modules/audit), `merchants`' settings, an index each on
 * `events` and `payments`.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE merchants
      ADD COLUMN payout_token text NOT NULL DEFAULT 'base:usdc',
      -- null: the default rule (2 when the merchant has two or more owners, else 1)
      ADD COLUMN approvals_required integer CHECK (approvals_required BETWEEN 1 AND 20),
      ADD COLUMN webhook_secret_prev_enc text,
      ADD COLUMN webhook_secret_prev_until timestamptz;

    CREATE TABLE users (
      id text PRIMARY KEY,
      merchant_id text NOT NULL REFERENCES merchants(id),
      email text NOT NULL,
      role text NOT NULL CHECK (role IN ('owner', 'member', 'viewer')),
      password_hash text,
      totp_secret_enc text,
      totp_enabled_at timestamptz,
      -- the last TOTP time step accepted, so a code cannot be used twice
      totp_last_step bigint,
      invited_by text,
      last_signin_at timestamptz,
      password_changed_at timestamptz,
      removed_at timestamptz,
      created_at timestamptz NOT NULL,
      CHECK (email = lower(email))
    );
    CREATE UNIQUE INDEX users_email ON users (email) WHERE removed_at IS NULL;
    CREATE INDEX users_merchant ON users (merchant_id, id);

    CREATE TABLE user_tokens (
      token_hash text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id),
      purpose text NOT NULL CHECK (purpose IN ('setup', 'reset')),
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX user_tokens_user ON user_tokens (user_id);

    CREATE TABLE user_recovery_codes (
      user_id text NOT NULL REFERENCES users(id),
      code_hash text NOT NULL,
      used_at timestamptz,
      PRIMARY KEY (user_id, code_hash)
    );

    CREATE TABLE sessions (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id),
      merchant_id text NOT NULL REFERENCES merchants(id),
      -- 'password': the second factor is still to be given; 'enrol': an owner must enrol TOTP first; 'full'
      stage text NOT NULL CHECK (stage IN ('password', 'enrol', 'full')),
      -- the second factor given in this session (sign-in or a fresh check before a sensitive action)
      second_factor_at timestamptz,
      ip text,
      user_agent text,
      created_at timestamptz NOT NULL,
      last_seen_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    );
    CREATE INDEX sessions_user ON sessions (user_id) WHERE revoked_at IS NULL;

    -- Failed sign-in attempts per key (account, account and device, client address) in fixed windows.
    CREATE TABLE signin_throttle (
      key text NOT NULL,
      window_start timestamptz NOT NULL,
      failures integer NOT NULL,
      PRIMARY KEY (key, window_start)
    );

    CREATE TABLE audit_log (
      seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      -- null when the attempt named no known account (failed sign-in with an unknown email)
      merchant_id text REFERENCES merchants(id),
      mode text CHECK (mode IN ('test', 'live')),
      at timestamptz NOT NULL,
      actor_type text NOT NULL CHECK (actor_type IN ('user', 'key', 'operator', 'anonymous')),
      actor_id text,
      actor_label text,
      action text NOT NULL,
      target_type text,
      target_id text,
      ip text,
      details json
    );
    CREATE INDEX audit_log_merchant ON audit_log (merchant_id, seq DESC);
    CREATE INDEX audit_log_action ON audit_log (merchant_id, action, seq DESC);
    CREATE INDEX audit_log_actor ON audit_log (merchant_id, actor_id, seq DESC);

    -- Dashboard reads: paid volume by day (Home) and the events of one payment (its timeline).
    CREATE INDEX payments_paid ON payments (merchant_id, mode, paid_at) INCLUDE (price_amount) WHERE paid_at IS NOT NULL;
    CREATE INDEX events_object ON events (merchant_id, mode, ordering_key, seq);
  `.execute(db);
}
