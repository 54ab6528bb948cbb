/**
 * Solana: the slot watcher's cursor and the confirmed blocks it has read but not yet seen finalized (per network and
 * mode), Kasse's deposit keys on Solana (for associated token accounts and sweeps), the crash-safe sender's
 * transfers with every signed version of their transaction, and the USDC payments relayed with the hot wallet as
 * fee payer. Design: src/chains/solana/ and docs/solana.md.
 */
import { sql, type Kysely } from 'kysely';
import { network } from '../../../db/columns.ts';
import { queueColumns, queueIndexes } from '../../queue.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- The last confirmed block whose transfers are recorded (the watcher resumes after it), the slot up to which
    -- the finalized chain is known to agree with what was read, and the slot the watcher started at.
    CREATE TABLE solana_cursors (
      ${network},
      slot bigint NOT NULL,
      blockhash text NOT NULL,
      final_slot bigint NOT NULL,
      start_slot bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (mode, chain)
    );
    -- Blocks read at confirmed commitment above final_slot (and the one at it): a fork walks back through them,
    -- and finality is checked against them. Rows at or below final_slot are pruned.
    CREATE TABLE solana_blocks (
      ${network},
      slot bigint NOT NULL,
      blockhash text NOT NULL,
      parent_slot bigint NOT NULL,
      deposits integer NOT NULL DEFAULT 0,
      PRIMARY KEY (mode, chain, slot)
    );
    -- Deposit keys Kasse issued on Solana (one per coin choice), written with the coin choice. For an SPL coin
    -- Kasse creates the key's associated token account; a sweep moves what arrived to the treasury and closes it.
    CREATE TABLE solana_addresses (
      ${network},
      address text NOT NULL,
      address_index bigint NOT NULL,
      token text NOT NULL,
      -- the associated token account Kasse creates (SPL coins), null for SOL
      token_account text,
      created_at timestamptz NOT NULL,
      -- newest slot with a transfer to this key (watcher), and the newest slot a sweep of it covered
      last_deposit_slot bigint,
      swept_slot bigint,
      -- the token account was closed by a sweep (its rent is back in the hot wallet)
      closed boolean NOT NULL DEFAULT false,
      PRIMARY KEY (mode, chain, address)
    );
    CREATE INDEX solana_addresses_due ON solana_addresses (mode, chain) WHERE last_deposit_slot IS NOT NULL AND (swept_slot IS NULL OR last_deposit_slot > swept_slot);

    -- One outgoing transaction from the hot wallet: a refund or payout, an associated token account, a sweep, or a
    -- relayed USDC payment. pending (recorded) -> signed (a version stored, maybe not yet sent) -> broadcast ->
    -- sent (finalized) or failed. What to build is the plan (JSON); a version is rebuilt only after every earlier
    -- version's blockhash expired unseen, so two versions can never both land.
    CREATE TABLE solana_transfers (
      id text PRIMARY KEY,
      ${network},
      purpose text NOT NULL CHECK (purpose IN ('refund', 'payout', 'account', 'sweep', 'gasless')),
      status text NOT NULL CHECK (status IN ('pending', 'signed', 'broadcast', 'sent', 'failed')),
      plan jsonb NOT NULL,
      token text,
      destination text,
      amount numeric(78, 0),
      -- the newest version's signature until settled, then the one that landed
      signature text,
      slot bigint,
      ${queueColumns}
    );
    ${queueIndexes('solana_transfers')}

    -- Every signed version of a transfer's transaction, stored before it is sent and resent byte for byte until
    -- its blockhash expires (last_valid_block_height).
    CREATE TABLE solana_transfer_txs (
      transfer_id text NOT NULL REFERENCES solana_transfers(id),
      version integer NOT NULL CHECK (version >= 0),
      signature text NOT NULL UNIQUE,
      raw text NOT NULL,
      blockhash text NOT NULL,
      last_valid_block_height bigint NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (transfer_id, version)
    );

    -- USDC payments signed by the payer with the hot wallet as fee payer, relayed by Kasse. One active relay per
    -- coin choice (active turns false when its transfer fails).
    CREATE TABLE solana_gasless (
      transfer_id text PRIMARY KEY REFERENCES solana_transfers(id),
      ${network},
      attempt_id text NOT NULL,
      payer text NOT NULL,
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL
    );
    CREATE UNIQUE INDEX solana_gasless_active ON solana_gasless (attempt_id) WHERE active;
  `.execute(db);
}
