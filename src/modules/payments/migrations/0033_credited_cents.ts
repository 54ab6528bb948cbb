/**
 * What a paid payment was credited at, in US cents, when that differs from its price: a payment paid short within
 * the merchant's tolerance is credited at floor(price × received / due). NULL: credited at the price (every payment
 * before this column, exact payments and accepted underpayments).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE payments ADD COLUMN credited_cents integer CHECK (credited_cents >= 0);`.execute(db);
}
