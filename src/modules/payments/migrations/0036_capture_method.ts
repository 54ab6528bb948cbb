/**
 * Hold and capture (docs/capture.md): a payment's `capture_method` (`automatic`, every payment before this column,
 * or `manual`: the payer authorizes a hold the merchant captures later), and for a manual payment the hold's terms
 * fixed at creation — captures until `capture_before`, refunds through the escrow until `refund_before` — whether
 * the rest of the hold went back to the payer (`hold_released`), and the US cents of captures asked for and not yet
 * settled (`capture_pending_cents`, kept by the capture module in the transactions that ask for and settle them).
 * The status `authorized` joins the payment's and the coin choice's statuses; only manual payments take it.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE payments
      ADD COLUMN capture_method text NOT NULL DEFAULT 'automatic' CHECK (capture_method IN ('automatic', 'manual')),
      ADD COLUMN capture_before timestamptz,
      ADD COLUMN refund_before timestamptz,
      ADD COLUMN hold_released boolean NOT NULL DEFAULT false,
      ADD COLUMN capture_pending_cents integer NOT NULL DEFAULT 0 CHECK (capture_pending_cents >= 0),
      ADD CONSTRAINT payments_hold_terms CHECK ((capture_method = 'manual') = (capture_before IS NOT NULL AND refund_before IS NOT NULL)),
      DROP CONSTRAINT payments_status_check,
      ADD CONSTRAINT payments_status_check CHECK (status IN ('waiting', 'detected', 'confirming', 'authorized', 'paid', 'underpaid', 'expired', 'late', 'refunded', 'cancelled'));
    ALTER TABLE attempts
      DROP CONSTRAINT attempts_status_check,
      ADD CONSTRAINT attempts_status_check CHECK (status IN ('waiting', 'detected', 'confirming', 'authorized', 'paid', 'underpaid', 'expired', 'late', 'refunded'));
    CREATE INDEX payments_holds_due ON payments (capture_before) WHERE status IN ('authorized', 'paid', 'refunded') AND capture_method = 'manual' AND NOT hold_released;
  `.execute(db);
}
