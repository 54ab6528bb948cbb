/** Row types of the UTXO family's tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';
import type { TransferQueueColumns } from '../queue.ts';

type Mode = 'test' | 'live';
type Big = ColumnType<bigint, bigint | string | number, bigint | string | number>;

export interface UtxoCursorsTable {
  mode: Mode;
  chain: string;
  height: Big;
  hash: string;
  updated_at: Generated<Date>;
}

export interface UtxoBlocksTable {
  mode: Mode;
  chain: string;
  height: Big;
  hash: string;
}

export interface UtxoMempoolTable {
  mode: Mode;
  chain: string;
  txid: string;
  outputs: number[];
  seen_at: Timestamp;
}

export interface UtxoCoinsTable {
  mode: Mode;
  chain: string;
  txid: string;
  vout: number;
  address: string;
  amount: Big;
  height: Big;
  spent_by: string | null;
}

export interface UtxoTransfersTable extends TransferQueueColumns {
  purpose: string;
  destination: string;
  amount: Big;
  txid: string | null;
  fee: Big | null;
  broadcast_height: Big | null;
  bumped_height: Big | null;
  block_height: Big | null;
  /** When a pending transfer started waiting for the hot wallet's own change (utxo/0001_change_wait). */
  waiting_since: Timestamp | null;
}

export interface UtxoTransferTxsTable {
  transfer_id: string;
  version: number;
  txid: string;
  raw: string;
  fee: Big;
  fee_rate: Big;
  created_at: Timestamp;
}

declare module '../../db/schema.ts' {
  interface Database {
    utxo_cursors: UtxoCursorsTable;
    utxo_blocks: UtxoBlocksTable;
    utxo_mempool: UtxoMempoolTable;
    utxo_coins: UtxoCoinsTable;
    utxo_transfers: UtxoTransfersTable;
    utxo_transfer_txs: UtxoTransferTxsTable;
  }
}
