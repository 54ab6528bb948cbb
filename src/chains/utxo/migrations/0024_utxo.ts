/**
 * Bitcoin and Litecoin (the UTXO family): the watcher's cursor and recent block hashes, the mempool transactions it
 * reported before any block held them, the coins Kasse holds (outputs to deposit addresses and the hot wallet), and
 * the hot-wallet sender's transfers with every signed version of their transaction. Design: docs/utxo.md.
 */
import { sql, type Kysely } from 'kysely';
import { network } from '../../../db/columns.ts';
import { queueColumns, queueIndexes } from '../../queue.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- The last block whose outputs are recorded; the watcher resumes after it.
    CREATE TABLE utxo_cursors (
      ${network},
      height bigint NOT NULL,
      hash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (mode, chain)
    );
    -- Hashes of scanned blocks down to the finality depth: a reorg walks back through them to the common ancestor.
    CREATE TABLE utxo_blocks (
      ${network},
      height bigint NOT NULL,
      hash text NOT NULL,
      PRIMARY KEY (mode, chain, height)
    );
    -- Transactions paying a deposit address that were reported from the mempool and no block holds yet. One that
    -- leaves the mempool without entering a block (replaced, evicted) has its deposits dropped.
    CREATE TABLE utxo_mempool (
      ${network},
      txid text NOT NULL,
      -- output indexes that paid deposit addresses
      outputs integer[] NOT NULL,
      seen_at timestamptz NOT NULL,
      PRIMARY KEY (mode, chain, txid)
    );
    -- Outputs in blocks paying a deposit address or the hot wallet: what sweeps and refunds spend. spent_by names
    -- the transfer whose signed transaction spends the coin (set when it is signed, so no two transfers spend it).
    CREATE TABLE utxo_coins (
      ${network},
      txid text NOT NULL,
      vout integer NOT NULL,
      address text NOT NULL,
      amount bigint NOT NULL CHECK (amount > 0),
      height bigint NOT NULL,
      spent_by text,
      PRIMARY KEY (mode, chain, txid, vout)
    );
    CREATE INDEX utxo_coins_address ON utxo_coins (mode, chain, address) WHERE spent_by IS NULL;
    CREATE INDEX utxo_coins_height ON utxo_coins (mode, chain, height);

    -- One outgoing transfer (a refund, a payout, a sweep): pending (recorded) -> signed (a signed transaction is
    -- stored, perhaps not broadcast) -> broadcast -> sent (a version has the network's confirmations) or failed.
    CREATE TABLE utxo_transfers (
      id text PRIMARY KEY,
      ${network},
      purpose text NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'signed', 'broadcast', 'sent', 'failed')),
      -- where the coins go; for a sweep, the whole of its inputs less the fee
      destination text NOT NULL,
      amount bigint NOT NULL CHECK (amount >= 0),
      -- the newest signed version
      txid text,
      fee bigint,
      -- tip height when the first version was broadcast (versions are looked for in blocks from here), and when the
      -- newest was (bumping counts blocks from there)
      broadcast_height bigint,
      bumped_height bigint,
      block_height bigint,
      ${queueColumns}
    );
    ${queueIndexes('utxo_transfers')}
    -- Every signed version, stored before it is broadcast. Versions spend the same coins (a replacement pays a
    -- higher fee out of the change), so at most one of them can ever be mined.
    CREATE TABLE utxo_transfer_txs (
      transfer_id text NOT NULL REFERENCES utxo_transfers(id),
      version integer NOT NULL CHECK (version >= 0),
      txid text NOT NULL,
      raw text NOT NULL,
      fee bigint NOT NULL,
      fee_rate bigint NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (transfer_id, version)
    );
    CREATE UNIQUE INDEX utxo_transfer_txs_txid ON utxo_transfer_txs (txid);
  `.execute(db);
}
