/**
 * Row types of the EVM family's tables (migrations/0004_evm.ts, migrations/0006_evm_sender.ts), added to Kasse's
 * `Database` type by declaration merging, so the family's queries are typed like the core's.
 */
import type { ColumnType, Generated } from 'kysely';
import type { Numeric, Timestamp } from '../../db/schema.ts';
import type { TransferQueueColumns } from '../queue.ts';
import type { TransferPurpose } from './transfer.ts';

/** EVM watcher cursor: the last block whose deposits are recorded (migration 0004_evm). */
export interface EvmCursorsTable {
  mode: 'test' | 'live';
  chain: string;
  block_number: bigint;
  block_hash: string;
  updated_at: Generated<Date>;
}

/** Recent scanned block hashes, down to the finality depth, for reorg walk-back. */
export interface EvmBlocksTable {
  mode: 'test' | 'live';
  chain: string;
  number: bigint;
  hash: string;
  parent_hash: string;
}

/** One ForwarderFactory.sweep transaction. */
export interface EvmSweepsTable {
  id: string;
  mode: 'test' | 'live';
  chain: string;
  factory: string;
  treasury: string;
  tx_hash: string;
  nonce: bigint;
  raw_tx: string;
  status: 'broadcast' | 'confirmed' | 'failed';
  block_number: bigint | null;
  gas_used: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

export interface EvmSweepItemsTable {
  sweep_id: string;
  /** Lower case. */
  address: string;
  address_index: bigint;
  ok: boolean | null;
}

/** An outgoing hot-wallet transfer (migration 0006_evm_sender, purposes widened since; src/chains/evm/sender.ts). */
export interface EvmTransfersTable extends TransferQueueColumns {
  purpose: TransferPurpose;
  from_address: string;
  to_address: string;
  value: Numeric;
  data: string;
  token: string;
  destination: string;
  amount: Numeric;
  nonce: ColumnType<bigint, bigint | string, bigint | string> | null;
  gas_limit: Numeric | null;
  tx_hash: string | null;
  broadcast_block: ColumnType<bigint, bigint | string, bigint | string> | null;
  block_number: ColumnType<bigint, bigint | string, bigint | string> | null;
  gas_used: Numeric | null;
  /** Migration 0020_evm_disperse: the batch carrying a payout, its position there, and whether it must go alone. */
  batch_id: Generated<string | null>;
  batch_index: Generated<number | null>;
  unbatched: Generated<boolean>;
}

/** One signed version of an outgoing transfer's transaction (same nonce; replacements bump the fee). */
export interface EvmTransferTxsTable {
  transfer_id: string;
  version: number;
  tx_hash: string;
  raw: string;
  max_fee_per_gas: Numeric;
  max_priority_fee_per_gas: Numeric;
  created_at: Timestamp;
}

/** The hot wallet's next nonce per network and mode. */
export interface EvmNoncesTable {
  mode: 'test' | 'live';
  chain: string;
  address: string;
  next_nonce: ColumnType<bigint, bigint | string, bigint | string>;
  updated_at: Timestamp;
}

/** An EIP-3009 authorization relayed by Kasse (src/chains/evm/gasless.ts). */
export interface EvmGaslessTable {
  transfer_id: string;
  mode: 'test' | 'live';
  chain: string;
  contract: string;
  authorizer: string;
  auth_nonce: string;
  payment_id: string;
  attempt_id: string;
  value: Numeric;
  valid_after: Numeric;
  valid_before: Numeric;
  signature: string;
  created_at: Timestamp;
}

declare module '../../db/schema.ts' {
  interface Database {
    evm_cursors: EvmCursorsTable;
    evm_blocks: EvmBlocksTable;
    evm_sweeps: EvmSweepsTable;
    evm_sweep_items: EvmSweepItemsTable;
    evm_transfers: EvmTransfersTable;
    evm_transfer_txs: EvmTransferTxsTable;
    evm_nonces: EvmNoncesTable;
    evm_gasless: EvmGaslessTable;
  }
}
