/**
 * EVM chains: the watcher's cursor and the recent block hashes it follows the head by (per network and mode),
 * and the sweeps that moved deposit addresses' funds to the treasury through the ForwarderFactory.
 */
import { sql, type Kysely } from 'kysely';
import { network } from '../../../db/columns.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- The last block whose deposits are recorded; the watcher resumes after it.
    CREATE TABLE evm_cursors (
      ${network},
      block_number bigint NOT NULL,
      block_hash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (mode, chain)
    );
    -- Hashes of the scanned blocks down to the finality depth: a reorg walks back through them to the common
    -- ancestor. Older rows are pruned.
    CREATE TABLE evm_blocks (
      ${network},
      number bigint NOT NULL,
      hash text NOT NULL,
      parent_hash text NOT NULL,
      PRIMARY KEY (mode, chain, number)
    );
    -- One sweep transaction. Recorded before it is broadcast (status broadcast), settled from its receipt.
    CREATE TABLE evm_sweeps (
      id text PRIMARY KEY,
      ${network},
      factory text NOT NULL,
      treasury text NOT NULL,
      tx_hash text NOT NULL UNIQUE,
      nonce bigint NOT NULL,
      -- the signed transaction, so an unsettled sweep can be broadcast again after a crash
      raw_tx text NOT NULL,
      status text NOT NULL CHECK (status IN ('broadcast', 'confirmed', 'failed')),
      block_number bigint,
      gas_used numeric(78, 0),
      error text,
      created_at timestamptz NOT NULL,
      settled_at timestamptz
    );
    CREATE INDEX evm_sweeps_open ON evm_sweeps (mode, chain) WHERE status = 'broadcast';
    -- The deposit addresses (lower case) a sweep flushed; ok = the factory's Swept(…, ok) for it.
    CREATE TABLE evm_sweep_items (
      sweep_id text NOT NULL REFERENCES evm_sweeps(id),
      address text NOT NULL,
      address_index bigint NOT NULL,
      ok boolean,
      PRIMARY KEY (sweep_id, address)
    );
    CREATE INDEX evm_sweep_items_address ON evm_sweep_items (address);
  `.execute(db);
}
