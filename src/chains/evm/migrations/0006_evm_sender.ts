/**
 * The EVM hot-wallet sender: outgoing transfers (refunds, payouts, gasless USDC relays), every signed version of
 * their transaction, the hot wallet's nonce counter per network and mode, and the EIP-3009 authorizations Kasse
 * relayed. Design and crash-safety rules: src/chains/evm/sender.ts and docs/evm.md.
 */
import { sql, type Kysely } from 'kysely';
import { network } from '../../../db/columns.ts';
import { queueColumns, queueIndexes } from '../../queue.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    -- One outgoing transfer. Status follows the spec's payout set: pending (recorded) -> signed (raw transaction
    -- stored, not yet known to be broadcast) -> broadcast -> sent (receipt has the confirmations) or failed.
    CREATE TABLE evm_transfers (
      -- the refund's or payout's id (the sender is idempotent on it), or gsl_... for a gasless relay
      id text PRIMARY KEY,
      ${network},
      purpose text NOT NULL CHECK (purpose IN ('refund', 'payout', 'gasless')),
      status text NOT NULL CHECK (status IN ('pending', 'signed', 'broadcast', 'sent', 'failed')),
      -- the hot wallet (checksummed) and the transaction's target, value and calldata
      from_address text NOT NULL,
      to_address text NOT NULL,
      value numeric(78, 0) NOT NULL CHECK (value >= 0),
      data text NOT NULL,
      -- what moves, to whom (for a gasless relay: the payer's USDC to the deposit address)
      token text NOT NULL,
      destination text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      -- allocated from evm_nonces in the transaction that stores the first signed version; never changes after
      nonce bigint,
      gas_limit numeric(78, 0),
      -- the newest signed version's hash until settled, then the hash that was mined
      tx_hash text,
      -- head when the newest version was first broadcast (stuck detection counts blocks from here)
      broadcast_block bigint,
      block_number bigint,
      gas_used numeric(78, 0),
      ${queueColumns}
    );
    ${queueIndexes('evm_transfers')}
    -- A nonce belongs to one transfer (its versions share it).
    CREATE UNIQUE INDEX evm_transfers_nonce ON evm_transfers (mode, chain, from_address, nonce) WHERE nonce IS NOT NULL;

    -- Every signed version of a transfer's transaction, stored before it is broadcast: version 0 is the first
    -- signing, later ones replace a stuck transaction with the same nonce and a higher fee. Whichever is mined
    -- settles the transfer; after a crash the newest is re-broadcast byte for byte.
    CREATE TABLE evm_transfer_txs (
      transfer_id text NOT NULL REFERENCES evm_transfers(id),
      version integer NOT NULL CHECK (version >= 0),
      tx_hash text NOT NULL UNIQUE,
      raw text NOT NULL,
      max_fee_per_gas numeric(78, 0) NOT NULL,
      max_priority_fee_per_gas numeric(78, 0) NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (transfer_id, version)
    );

    -- The next nonce of a hot wallet per network and mode; allocation is an UPDATE of this row inside the
    -- transaction that stores the signed transaction, so two workers never sign with the same nonce.
    CREATE TABLE evm_nonces (
      ${network},
      address text NOT NULL,
      next_nonce bigint NOT NULL CHECK (next_nonce >= 0),
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (mode, chain, address)
    );

    -- EIP-3009 authorizations Kasse relayed (one transfer each). The unique key makes an authorization nonce
    -- single-use on Kasse's side even before the chain has seen it.
    CREATE TABLE evm_gasless (
      transfer_id text PRIMARY KEY REFERENCES evm_transfers(id),
      ${network},
      -- token contract, payer and authorization nonce, all lower case
      contract text NOT NULL,
      authorizer text NOT NULL,
      auth_nonce text NOT NULL,
      payment_id text NOT NULL REFERENCES payments(id),
      attempt_id text NOT NULL REFERENCES attempts(id),
      value numeric(78, 0) NOT NULL,
      valid_after numeric(78, 0) NOT NULL,
      valid_before numeric(78, 0) NOT NULL,
      signature text NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (mode, chain, contract, authorizer, auth_nonce)
    );
    CREATE INDEX evm_gasless_attempt ON evm_gasless (attempt_id);
  `.execute(db);
}
