/** What an EVM sender is given: the network it sends on, its dependencies, its options and their defaults. */
import { parseGwei, type LocalAccount } from 'viem';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Db } from '../../db/index.ts';
import type { TransferSink } from '../ports.ts';
import type { EvmAdapter } from './adapter.ts';
import type { EvmHolds } from './holds.ts';

/** The network an EvmSender sends on: an EvmAdapter (its RPC client is shared with the watcher). */
export type SenderChain = Pick<EvmAdapter, 'network' | 'mode' | 'rpc'> & { readonly holds?: EvmHolds };

export interface EvmSenderDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  /** The hot wallet (wallet.ts), derived on first use (an HD derivation costs a few hundred ms). Never logged. */
  account: () => LocalAccount;
  /** Where settled refunds and payouts are reported (the transfers module); gasless relays are only recorded. */
  sink: TransferSink | null;
}

export interface EvmSenderOptions {
  /** Cap on maxFeePerGas in wei. Default: the network's `max_fee_gwei`, else SENDER_DEFAULTS.maxFeePerGas. */
  maxFeePerGas?: bigint;
  /** Blocks a broadcast version may stay unmined before it is replaced. Default: `replace_after_blocks`, else 10. */
  replaceAfterBlocks?: number;
  /** Confirmations a receipt needs before the transfer settles. Default: the network's highest tier. */
  confirmations?: number;
  /** Transfers a worker takes per pass, and how long it holds them (the network's `sender_lease_ms` comes first). */
  batch?: number;
  leaseMs?: number;
  /** Backoff after a failed try: base·2^tries, at most max. */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export const SENDER_DEFAULTS = {
  maxFeePerGas: parseGwei('300'),
  replaceAfterBlocks: 10,
  batch: 50,
  leaseMs: 60_000,
  retryBaseMs: 5_000,
  retryMaxMs: 600_000,
  /** Used when a node does not answer eth_maxPriorityFeePerGas. */
  fallbackTip: parseGwei('1'),
} as const;
