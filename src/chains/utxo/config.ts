/**
 * The `utxo` object of a Bitcoin or Litecoin network in the networks files:
 *
 *   "utxo": { "coin": "bitcoin", "network": "testnet", "account": 0, "start_height": 123, "rpc_timeout_ms": 30000,
 *             "max_fee_rate": 200, "fee_target_blocks": 6, "bump_after_blocks": 3, "treasury": "bc1q…",
 *             "mempool_poll_ms": 1000, "change_wait_ms": 3600000 }
 *
 * `coin` and `network` are required (they fix address prefixes and BIP-84 paths); the rest is optional. The node's
 * RPC URL (with its RPC user and password, `http://user:pass@host:8332/`) goes in the network's `rpc_urls`.
 */
import { ConfigError } from '../../config.ts';
import { SettingsObject } from '../settings.ts';
import type { NetworkConfig } from '../types.ts';
import { isValidUtxoAddress } from './address.ts';
import { CHAINS, COINS, utxoParams, type UtxoParams } from './params.ts';

export interface UtxoSettings {
  params: UtxoParams;
  /** BIP-84 account of deposit addresses and the hot wallet. */
  account: number;
  /** Height the watcher starts from when it has no cursor; null = the node's tip at first start. */
  startHeight: number | null;
  rpcTimeoutMs: number;
  /** Highest fee rate the sender pays, sat/vB (the node's estimate is capped to it). */
  maxFeeRate: bigint;
  /** Confirmation target of `estimatesmartfee`. */
  feeTargetBlocks: number;
  /** Blocks a sent transaction may wait unconfirmed before it is replaced with a higher fee (RBF). */
  bumpAfterBlocks: number;
  /** Where sweeps send deposit addresses' coins; null = the hot wallet. */
  treasury: string | null;
  /** How often the watcher looks at the mempool between ticks while a coin choice waits; 0: only with the ticks. */
  mempoolPollMs: number;
  /**
   * How long a refund or payout the hot wallet's coins in blocks cannot cover, but can with the change of Kasse's own
   * transactions not yet in a block, waits for that change before it fails; 0: it fails at once.
   */
  changeWaitMs: number;
}

export const UTXO_DEFAULTS = {
  account: 0,
  rpcTimeoutMs: 30_000,
  maxFeeRate: 200n,
  feeTargetBlocks: 6,
  bumpAfterBlocks: 3,
  mempoolPollMs: 1000,
  changeWaitMs: 3_600_000,
} as const;

export function utxoSettings(network: NetworkConfig): UtxoSettings {
  const s = network.settings as UtxoSettings | undefined;
  if (!s) throw new Error(`${network.id}: no utxo settings`);
  return s;
}

export function parseUtxoSettings(raw: unknown, at: string): UtxoSettings {
  const settings = new SettingsObject(
    raw,
    at,
    [
      'coin',
      'network',
      'account',
      'start_height',
      'rpc_timeout_ms',
      'max_fee_rate',
      'fee_target_blocks',
      'bump_after_blocks',
      'treasury',
      'mempool_poll_ms',
      'change_wait_ms',
    ],
    'an object with "coin" and "network"',
  );
  const o = settings.values;
  if (!COINS.includes(o.coin as never)) throw new ConfigError(`${at}.coin must be one of ${COINS.join(', ')}`);
  if (!CHAINS.includes(o.network as never)) throw new ConfigError(`${at}.network must be one of ${CHAINS.join(', ')}`);
  const params = utxoParams(o.coin as UtxoParams['coin'], o.network as UtxoParams['chain']);
  const treasury = o.treasury ?? null;
  if (treasury !== null && (typeof treasury !== 'string' || !isValidUtxoAddress(treasury, params)))
    throw new ConfigError(`${at}.treasury must be a ${o.coin} ${o.network} address`);
  return {
    params,
    account: settings.int('account', 0, UTXO_DEFAULTS.account, 2 ** 31 - 1),
    startHeight: settings.int('start_height', 0, null, 2 ** 31 - 1),
    rpcTimeoutMs: settings.int('rpc_timeout_ms', 100, UTXO_DEFAULTS.rpcTimeoutMs, 600_000),
    maxFeeRate: BigInt(settings.int('max_fee_rate', 1, Number(UTXO_DEFAULTS.maxFeeRate), 100_000)),
    feeTargetBlocks: settings.int('fee_target_blocks', 1, UTXO_DEFAULTS.feeTargetBlocks, 1008),
    bumpAfterBlocks: settings.int('bump_after_blocks', 1, UTXO_DEFAULTS.bumpAfterBlocks, 1000),
    treasury: treasury as string | null,
    mempoolPollMs: settings.int('mempool_poll_ms', 0, UTXO_DEFAULTS.mempoolPollMs, 600_000),
    changeWaitMs: settings.int('change_wait_ms', 0, UTXO_DEFAULTS.changeWaitMs, 7 * 86_400_000),
  };
}
