/**
 * The payer's language (src/core/i18n): an optional BCP 47 tag from the supported list on a payment, a payment link
 * and a subscription. Payments made through a link or for a subscription inherit its locale. NULL: the checkout
 * follows the payer's browser (Accept-Language), else English — the behaviour before this column.
 *
 * Other modules' tables it changes: `links` (modules/links), `subscriptions` (modules/subscriptions).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE payments ADD COLUMN locale text;
    ALTER TABLE links ADD COLUMN locale text;
    ALTER TABLE subscriptions ADD COLUMN locale text;
  `.execute(db);
}
