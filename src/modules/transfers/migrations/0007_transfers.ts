/**
 * Outgoing transfers: one row per refund or payout Kasse sends (modules/transfers), whatever the chain. It is written
 * in the transaction that creates the refund or payout, handed to the chain family's sender, and settled once, when
 * the sender reports the outcome (or, in test mode without a sender, by the simulated sender). The purpose names the
 * module that asked and is called back on settlement.
 *
 * Existing refunds are copied in; whether a refund is simulated is kept here only from now on (another module's
 * table it changes: `refunds`, modules/refunds, loses `simulated`).
 */
import { sql, type Kysely } from 'kysely';
import { mode } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE transfers (
      -- the owner's object id (rfd_… for a refund, po_… for a payout); senders are idempotent on it
      id text PRIMARY KEY,
      ${mode},
      purpose text NOT NULL,
      chain text NOT NULL,
      token text NOT NULL,
      destination text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed')),
      -- test mode without a sender for the network: settled as sent by the due work, with a 0xsim… hash
      simulated boolean NOT NULL,
      tx_hash text,
      error text,
      created_at timestamptz NOT NULL,
      settled_at timestamptz
    );
    CREATE INDEX transfers_simulated_due ON transfers (created_at) WHERE status = 'pending' AND simulated;

    INSERT INTO transfers (id, mode, purpose, chain, token, destination, amount, status, simulated, tx_hash, error, created_at, settled_at)
    SELECT id, mode, 'refund', split_part(token, ':', 1), token, destination, amount, status, simulated, tx_hash, error, created_at, settled_at
    FROM refunds;

    ALTER TABLE refunds DROP COLUMN simulated;
  `.execute(db);
}
