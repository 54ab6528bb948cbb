/**
 * Mail written as its layout blocks: `email_outbox.content` holds the blocks of the shared email layout (heading,
 * paragraphs, details, action, footer, links — src/modules/email/template.ts) and the text and HTML parts are built
 * from them when the mail is sent or shown, the same bytes every time. A module that mails many customers in one
 * change (the subscription scheduler) writes a few hundred bytes per mail instead of both rendered parts. A row has
 * its rendered parts or its content.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE email_outbox ADD COLUMN content json;
    ALTER TABLE email_outbox ALTER COLUMN text_body DROP NOT NULL;
    ALTER TABLE email_outbox ADD CONSTRAINT email_outbox_body CHECK (text_body IS NOT NULL OR content IS NOT NULL);
  `.execute(db);
}
