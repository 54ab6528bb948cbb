/**
 * Payment links: reusable public pages (`{checkout}/l/<slug>`) that create ordinary payments.
 *
 * The slug is unique across merchants and modes because the public URL carries neither. `seq` numbers the payments
 * of a link (`order_id` `<slug>-<n>`) and only ever grows; `uses` counts the payments created through the link and is
 * what `max_uses` limits. Both move in the one conditional UPDATE that admits a payment, so two payers racing for the
 * last use cannot both get it. Merchant reads use (merchant_id, mode, id DESC): newest first.
 */
import { sql, type Kysely } from 'kysely';
import { tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE links (
      ${tenant},
      slug text NOT NULL UNIQUE CHECK (slug ~ '^[0-9a-z]{12}$'),
      kind text NOT NULL CHECK (kind IN ('fixed', 'open', 'tip', 'pos')),
      title text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 120),
      description text CHECK (char_length(description) <= 500),
      amount_usd_cents integer CHECK (amount_usd_cents BETWEEN 100 AND 100000000),
      min_usd_cents integer CHECK (min_usd_cents BETWEEN 100 AND 100000000),
      max_usd_cents integer CHECK (max_usd_cents BETWEEN 100 AND 100000000),
      presets_usd_cents integer[] NOT NULL DEFAULT '{}',
      collect_email boolean NOT NULL DEFAULT false,
      success_url text,
      max_uses integer CHECK (max_uses BETWEEN 1 AND 1000000),
      uses integer NOT NULL DEFAULT 0 CHECK (uses >= 0),
      seq integer NOT NULL DEFAULT 0,
      expires_at timestamptz,
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CHECK (kind <> 'fixed' OR amount_usd_cents IS NOT NULL),
      CHECK (min_usd_cents IS NULL OR max_usd_cents IS NULL OR min_usd_cents <= max_usd_cents)
    );
    CREATE INDEX links_list ON links (merchant_id, mode, id DESC);
  `.execute(db);
}
