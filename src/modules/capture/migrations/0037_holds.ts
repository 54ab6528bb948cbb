/**
 * Hold and capture (modules/capture, docs/capture.md): a manual payment's holds — the payer's signed authorization of
 * a coin choice, locked in an escrow by an `authorize` transfer (`holds`, id `hld_…`, the transfer's id too) — and
 * the operations on a hold, captures and voids, each an outgoing transfer of its own (`hold_operations`, `cap_…`,
 * `vod_…`). A payment has at most one hold that has not failed, and a hold at most one void in flight.
 */
import { sql, type Kysely } from 'kysely';
import { tenant } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE holds (
      ${tenant},
      payment_id text NOT NULL REFERENCES payments(id),
      attempt_id text NOT NULL REFERENCES attempts(id),
      chain text NOT NULL,
      token text NOT NULL,
      -- what the payer authorized and what captures took of it, in the coin's smallest unit
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      captured numeric(78, 0) NOT NULL DEFAULT 0 CHECK (captured >= 0 AND captured <= amount),
      payer text,
      -- the hold's identifier on its chain and the chain family's terms of it (null: simulated)
      reference text,
      terms jsonb,
      simulated boolean NOT NULL,
      -- the payment's deadlines, as the payer authorized them
      capture_before timestamptz NOT NULL,
      refund_before timestamptz NOT NULL,
      status text NOT NULL CHECK (status IN ('authorizing', 'authorized', 'captured', 'released', 'failed')),
      released_by text CHECK (released_by IN ('void', 'deadline', 'reclaimed')),
      error text,
      created_at timestamptz NOT NULL,
      authorized_at timestamptz,
      released_at timestamptz,
      CHECK ((status = 'released') = (released_by IS NOT NULL))
    );
    CREATE UNIQUE INDEX holds_open ON holds (payment_id) WHERE status <> 'failed';
    CREATE INDEX holds_due ON holds (capture_before) WHERE status = 'authorized';

    CREATE TABLE hold_operations (
      ${tenant},
      hold_id text NOT NULL REFERENCES holds(id),
      payment_id text NOT NULL REFERENCES payments(id),
      kind text NOT NULL CHECK (kind IN ('capture', 'void')),
      -- a capture: what it moves (smallest units, and US cents); a void: what was left to return when it was asked
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      amount_cents integer CHECK (amount_cents > 0),
      reason text CHECK (reason IN ('merchant', 'deadline')),
      status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
      tx_hash text,
      error text,
      created_at timestamptz NOT NULL,
      settled_at timestamptz,
      CHECK ((kind = 'capture') = (amount_cents IS NOT NULL) AND (kind = 'void') = (reason IS NOT NULL))
    );
    CREATE INDEX hold_operations_hold ON hold_operations (hold_id, created_at);
    CREATE UNIQUE INDEX hold_operations_one_void ON hold_operations (hold_id) WHERE kind = 'void' AND status = 'pending';
    CREATE INDEX hold_operations_captured ON hold_operations (merchant_id, mode, settled_at) WHERE kind = 'capture' AND status = 'sent';
  `.execute(db);
}
