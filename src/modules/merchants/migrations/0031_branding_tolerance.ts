/**
 * The merchant's brand and payment tolerance: a brand colour, a logo (re-encoded PNG pixels, content-addressed by
 * their SHA-256, shared by merchants who upload the same picture), the underpayment tolerance in basis points, and
 * on payments whether the paid amount was short within that tolerance. Defaults keep the spec's behaviour.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE merchant_logos (
      sha256 text PRIMARY KEY,
      png bytea NOT NULL,
      width integer NOT NULL,
      height integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    ALTER TABLE merchants
      ADD COLUMN brand_color text CHECK (brand_color ~ '^#[0-9a-f]{6}$'),
      ADD COLUMN logo_sha256 text REFERENCES merchant_logos(sha256),
      ADD COLUMN underpayment_tolerance_bps integer NOT NULL DEFAULT 0
        CHECK (underpayment_tolerance_bps BETWEEN 0 AND 500);
    ALTER TABLE payments ADD COLUMN paid_within_tolerance boolean NOT NULL DEFAULT false;
  `.execute(db);
}
