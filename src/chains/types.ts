/**
 * Networks and coins as configured (config/networks.*.json, parsed by networks.ts): what every part of Kasse knows
 * about chains. The family-specific parts live in the family's folder (plugin.ts, ports.ts).
 */
import { randomBytes } from 'node:crypto';
import type { Mode } from '../core/mode.ts';

export type { Mode };

export interface TokenConfig {
  /** `<chain>:<symbol>` in lower case, e.g. `base:usdc`. */
  id: string;
  chain: string;
  /** Display symbol: the part after the colon in upper case. */
  symbol: string;
  name: string;
  decimals: number;
  /** `native` for the chain's own coin, else a token kind its family declares (`ChainFamily.tokenKinds`). */
  kind: string;
  /** Token contract address where `kind` has one. */
  contract: string | null;
  /** Smallest amount accepted, in smallest units. */
  minAmount: bigint;
  /** Priced at 1.00 USD (`rate_source` `peg`). */
  stable: boolean;
  /** Ids at the price providers (`coingecko` id, Binance USDT pair) for non-stable coins. */
  coingeckoId: string | null;
  binanceSymbol: string | null;
  /** Payable by the payer's signature alone, the hot wallet paying the network fee (USDC; docs of the family). */
  gasless: boolean;
  /** The coin the test-mode simulator issues a coin choice on when none was chosen (`"default": true`, one per file). */
  default?: boolean;
}

export interface ConfirmationTier {
  /** Applies to deposits worth up to this many US cents; null = no upper bound. */
  maxUsdCents: number | null;
  confirmations: number;
}

export interface NetworkConfig {
  /** Network id, e.g. `base`. */
  id: string;
  name: string;
  /** The chain family serving it (a folder under src/chains/), or `none` (the test-mode simulator only). */
  family: string;
  chainId: number | null;
  rpcUrls: string[];
  /** WebSocket endpoints whose pushed new blocks wake the watcher (polling stays the safety net); absent = none. */
  wsUrls?: string[];
  explorerTxUrl: string | null;
  /** Confirmation tiers by amount, ascending by maxUsdCents. */
  confirmationTiers: ConfirmationTier[];
  /** Confirmations after which a deposit is `final` and reorgs are no longer watched for. */
  finalityConfirmations: number;
  pollIntervalMs: number;
  /** How long a sender pass holds the transfers it took (`sender_lease_ms`); absent: the family's default (60 s). */
  senderLeaseMs?: number;
  paused: boolean;
  tokens: TokenConfig[];
  /** The family's own settings (the network's object named after the family), as the family parsed them. */
  settings?: unknown;
}

/** Simulated transfers (the test-mode simulator, simulated refunds) carry hashes with this prefix; no explorer has them. */
export const SIMULATED_TX_PREFIX = '0xsim';

/** A fresh simulated transaction hash: the prefix and 61 random hex characters (66 characters, like a real one). */
export function simulatedTxHash(): string {
  return SIMULATED_TX_PREFIX + randomBytes(31).toString('hex').slice(0, 61);
}
