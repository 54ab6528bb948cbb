/**
 * Monthly statements by email, and attachments on the email outbox.
 *
 * `statement_subscribers`: an owner who asked for a mode's statement by email (one row per user and mode).
 * `statement_email_schedule`: one row per merchant and mode once anyone subscribed — the month whose statement goes
 * out next and when (`due_at`, after that month has ended). The statements module's worker takes due rows with
 * `FOR UPDATE SKIP LOCKED`, writes the month's mails into the outbox and moves the row to the next month in the same
 * transaction, so each merchant, mode and month is mailed once whatever the number of workers, and a worker that dies
 * mid-way leaves the row as it was (nothing was written). The row stays after the last subscriber leaves, so the
 * schedule keeps to calendar months (a later subscriber does not receive months long past).
 *
 * `email_outbox.attachments`: files sent with a mail (the statement's PDF), base64 in JSON, written with the mail.
 */
import { sql, type Kysely } from 'kysely';
import { merchantMode, mode } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE statement_subscribers (
      user_id text NOT NULL REFERENCES users(id),
      ${mode},
      merchant_id text NOT NULL REFERENCES merchants(id),
      created_at timestamptz NOT NULL,
      PRIMARY KEY (user_id, mode)
    );
    CREATE INDEX statement_subscribers_merchant ON statement_subscribers (merchant_id, mode);

    CREATE TABLE statement_email_schedule (
      ${merchantMode},
      -- the UTC month whose statement is mailed next
      month text NOT NULL CHECK (month ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
      -- when it may go: after the month has ended (later after a failed try)
      due_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      last_error text,
      PRIMARY KEY (merchant_id, mode)
    );
    CREATE INDEX statement_email_schedule_due ON statement_email_schedule (due_at);

    ALTER TABLE email_outbox ADD COLUMN attachments jsonb;
  `.execute(db);
}
