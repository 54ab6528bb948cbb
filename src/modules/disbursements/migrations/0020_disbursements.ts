/**
 * Disbursements: a batch of payouts in the merchant's payout coin, approved by a quorum of owners, released by one,
 * then sent item by item through the transfers module. Each item is priced at creation (`amount` in the coin's
 * smallest units) and, once released, carries its payout (`po_…`, the transfer's id) and how far it got.
 * Rules: docs/disbursements.md.
 */
import { sql, type Kysely } from 'kysely';
import { tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE disbursements (
      ${tenant},
      title text NOT NULL,
      token text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending_approval', 'approved', 'released', 'cancelled')),
      total_usd_cents bigint NOT NULL CHECK (total_usd_cents > 0),
      item_count integer NOT NULL CHECK (item_count BETWEEN 1 AND 500),
      approvals_required integer NOT NULL CHECK (approvals_required >= 1),
      approval_mac text,
      created_by text NOT NULL,
      created_at timestamptz NOT NULL,
      approved_at timestamptz,
      released_at timestamptz,
      released_by text,
      cancelled_at timestamptz,
      -- every payout settled (sent or failed) and disbursement.completed published
      completed_at timestamptz
    );
    CREATE INDEX disbursements_list ON disbursements (merchant_id, mode, id DESC);

    CREATE TABLE disbursement_items (
      disbursement_id text NOT NULL REFERENCES disbursements (id),
      item_no integer NOT NULL CHECK (item_no >= 1),
      destination text NOT NULL,
      usd_cents integer NOT NULL CHECK (usd_cents > 0),
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      label text,
      -- the payout (po_…, also the transfer's id), set at release
      payout_id text UNIQUE,
      payout_status text CHECK (payout_status IN ('pending', 'signed', 'broadcast', 'sent', 'failed')),
      tx_hash text,
      error text,
      sent_at timestamptz,
      settled_at timestamptz,
      PRIMARY KEY (disbursement_id, item_no)
    );
    CREATE INDEX disbursement_items_sent ON disbursement_items (settled_at) WHERE payout_status = 'sent';

    CREATE TABLE disbursement_approvals (
      disbursement_id text NOT NULL REFERENCES disbursements (id),
      user_id text NOT NULL REFERENCES users (id),
      approved_at timestamptz NOT NULL,
      -- SHA-256 of the canonical batch the owner saw and approved
      digest text NOT NULL,
      PRIMARY KEY (disbursement_id, user_id)
    );
  `.execute(db);
}
