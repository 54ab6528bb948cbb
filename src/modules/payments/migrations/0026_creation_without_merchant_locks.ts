/**
 * The tables every payment creation writes (`payments`, `idempotency_keys`, `audit_log`) no longer carry a foreign
 * key to `merchants`. A foreign key check takes a FOR KEY SHARE lock on the referenced row: with every creation of a
 * busy merchant locking that one merchant row (three times, once per table), concurrent creations queue on it and
 * each lock is itself a write of the row (a multixact once several hold it). Merchants are never deleted, and the
 * merchant id of these rows always comes from an authenticated key, so the key guarded nothing a request can reach.
 * Every other table keeps its foreign keys, and so do the rows hanging off a payment (`attempts` → `payments`).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE payments DROP CONSTRAINT payments_merchant_id_fkey;
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_merchant_id_fkey;
    ALTER TABLE audit_log DROP CONSTRAINT audit_log_merchant_id_fkey;
  `.execute(db);
}
