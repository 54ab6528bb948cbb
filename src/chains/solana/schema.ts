/**
 * Row types of the Solana family's tables (migrations/0014_solana.ts and the later solana/… ones), added to Kasse's `Database` type by
 * declaration merging, so the family's queries are typed like the core's.
 */
import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';
import type { TransferQueueColumns } from '../queue.ts';

type Json = ColumnType<unknown, string, string>;

/** The watcher's cursor: last confirmed block read, and the slot up to which finality is checked. */
export interface SolanaCursorsTable {
  mode: 'test' | 'live';
  chain: string;
  slot: bigint;
  blockhash: string;
  final_slot: bigint;
  start_slot: bigint;
  updated_at: Generated<Date>;
}

export interface SolanaBlocksTable {
  mode: 'test' | 'live';
  chain: string;
  slot: bigint;
  blockhash: string;
  parent_slot: bigint;
  deposits: Generated<number>;
  /** Its deposits as [signature, index] pairs (migrations/0001_block_transfers.ts); null when read before that. */
  transfers: ColumnType<Array<[string, number]> | null, string | null | undefined, string | null>;
}

export interface SolanaAddressesTable {
  mode: 'test' | 'live';
  chain: string;
  address: string;
  address_index: bigint;
  token: string;
  token_account: string | null;
  created_at: Timestamp;
  last_deposit_slot: bigint | null;
  swept_slot: bigint | null;
  closed: Generated<boolean>;
}

export interface SolanaTransfersTable extends TransferQueueColumns {
  purpose: 'refund' | 'payout' | 'account' | 'sweep' | 'gasless' | 'grant' | 'revoke' | 'charge';
  plan: Json;
  token: string | null;
  destination: string | null;
  amount: string | null;
  signature: string | null;
  slot: bigint | null;
}

export interface SolanaTransferTxsTable {
  transfer_id: string;
  version: number;
  signature: string;
  raw: string;
  blockhash: string;
  last_valid_block_height: bigint;
  created_at: Timestamp;
}

export interface SolanaGaslessTable {
  transfer_id: string;
  mode: 'test' | 'live';
  chain: string;
  attempt_id: string;
  payer: string;
  active: Generated<boolean>;
  created_at: Timestamp;
}

declare module '../../db/schema.ts' {
  interface Database {
    solana_cursors: SolanaCursorsTable;
    solana_blocks: SolanaBlocksTable;
    solana_addresses: SolanaAddressesTable;
    solana_transfers: SolanaTransfersTable;
    solana_transfer_txs: SolanaTransferTxsTable;
    solana_gasless: SolanaGaslessTable;
  }
}
