/**
 * The email outbox: every email is a row written in the transaction that causes it, sent by the email worker.
 *
 * States: `pending` (due at `next_attempt_at`) → `claimed` (a worker holds it under a lease, not yet handed to the
 * SMTP server) → `handed` (the worker is in the SMTP transaction) → `sent`; or back to `pending` after a refusal the
 * server reported (retried with backoff), or `failed` (permanent refusal, or out of attempts). A worker that dies
 * while `claimed` loses the claim when the lease ends and the mail is due again (nothing reached the server). One that
 * dies while `handed` may or may not have delivered it: the mail becomes `uncertain` and is never resent on its own
 * (at most once). With no SMTP server configured a mail is `kept` (the dashboard's Mail page shows it).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE email_outbox (
      id text PRIMARY KEY,
      -- null for mail that belongs to no merchant (operator notices)
      merchant_id text REFERENCES merchants(id),
      -- null for account mail (invitations, password resets); the mode of the object otherwise
      mode text CHECK (mode IN ('test', 'live')),
      kind text NOT NULL,
      to_address text NOT NULL,
      to_name text,
      subject text NOT NULL,
      text_body text NOT NULL,
      html_body text,
      -- Message-ID fixed when the mail is written, so a copy sent again is recognisably the same message
      message_id text NOT NULL UNIQUE,
      -- one mail per business fact (e.g. the invoice of a period); a second enqueue with the key is ignored
      dedupe_key text UNIQUE,
      -- the mail carries a credential (set-up or reset link): its body is not shown on the dashboard
      sensitive boolean NOT NULL DEFAULT false,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'claimed', 'handed', 'sent', 'failed', 'uncertain', 'kept')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      locked_until timestamptz,
      lease_token text,
      last_error text,
      smtp_response text,
      sent_at timestamptz,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX email_outbox_leased ON email_outbox (locked_until) WHERE status IN ('claimed', 'handed');
    CREATE INDEX email_outbox_merchant ON email_outbox (merchant_id, id DESC);
  `.execute(db);
}
