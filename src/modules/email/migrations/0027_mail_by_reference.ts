/**
 * Mail stored by reference: `email_outbox.content_ref` names what a module's composer builds the mail from (a
 * subscription invoice's payment, …), and its subject and parts are composed when the mail is sent or shown. The
 * subscription scheduler mails every customer whose period falls due; a reference is a few dozen bytes where the
 * layout blocks were over a kilobyte, and the merchant's name and the customer's link need no reading or signing
 * while the batch holds its locks. A row has its subject unless it is composed, and its parts, content or reference.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE email_outbox ADD COLUMN content_ref text;
    ALTER TABLE email_outbox ALTER COLUMN subject DROP NOT NULL;
    ALTER TABLE email_outbox DROP CONSTRAINT email_outbox_body;
    ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_body CHECK (text_body IS NOT NULL OR content IS NOT NULL OR content_ref IS NOT NULL);
    ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_subject CHECK (subject IS NOT NULL OR content_ref IS NOT NULL);
  `.execute(db);
}
