/**
 * The `utxo` object of a Bitcoin or Litecoin network in the networks files:
 *
 *   "utxo": { "coin": "bitcoin", "network": "testnet", "account": 0, "start_height": 123, "rpc_timeout_ms": 30000,
 *             "max_fee_rate": 200, "fee_target_blocks": 6, "bump_after_blocks": 3, "treasury": "bc1q…" }
 *
 * `coin` and `network` are required (they fix address prefixes and BIP-84 paths); the rest is optional. The node's
 * RPC URL (with its RPC user and password, `http://user:pass@host:8332/`) goes in the network's `rpc_urls`.
 */
import { ConfigError } from '../../config.ts';
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
}

export const UTXO_DEFAULTS = {
  account: 0,
  rpcTimeoutMs: 30_000,
  maxFeeRate: 200n,
  feeTargetBlocks: 6,
  bumpAfterBlocks: 3,
} as const;

export function utxoSettings(network: NetworkConfig): UtxoSettings {
  const s = network.settings as UtxoSettings | undefined;
  if (!s) throw new Error(`${network.id}: no utxo settings`);
  return s;
}

export function parseUtxoSettings(raw: unknown, at: string): UtxoSettings {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ConfigError(`${at} must be an object with "coin" and "network"`);
  const o = raw as Record<string, unknown>;
  const known = new Set([
    'coin',
    'network',
    'account',
    'start_height',
    'rpc_timeout_ms',
    'max_fee_rate',
    'fee_target_blocks',
    'bump_after_blocks',
    'treasury',
    '$comment',
  ]);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new ConfigError(`${at}.${k} is not a known setting`);
  if (!COINS.includes(o.coin as never)) throw new ConfigError(`${at}.coin must be one of ${COINS.join(', ')}`);
  if (!CHAINS.includes(o.network as never)) throw new ConfigError(`${at}.network must be one of ${CHAINS.join(', ')}`);
  const params = utxoParams(o.coin as UtxoParams['coin'], o.network as UtxoParams['chain']);
  const int = (k: string, min: number, max: number, fallback: number | null): number | null => {
    const v = o[k];
    if (v === undefined || v === null) return fallback;
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max)
      throw new ConfigError(`${at}.${k} must be an integer from ${min} to ${max}`);
    return v as number;
  };
  const treasury = o.treasury ?? null;
  if (treasury !== null && (typeof treasury !== 'string' || !isValidUtxoAddress(treasury, params)))
    throw new ConfigError(`${at}.treasury must be a ${o.coin} ${o.network} address`);
  return {
    params,
    account: int('account', 0, 2 ** 31 - 1, UTXO_DEFAULTS.account)!,
    startHeight: int('start_height', 0, 2 ** 31 - 1, null),
    rpcTimeoutMs: int('rpc_timeout_ms', 100, 600_000, UTXO_DEFAULTS.rpcTimeoutMs)!,
    maxFeeRate: BigInt(int('max_fee_rate', 1, 100_000, Number(UTXO_DEFAULTS.maxFeeRate))!),
    feeTargetBlocks: int('fee_target_blocks', 1, 1008, UTXO_DEFAULTS.feeTargetBlocks)!,
    bumpAfterBlocks: int('bump_after_blocks', 1, 1000, UTXO_DEFAULTS.bumpAfterBlocks)!,
    treasury: treasury as string | null,
  };
}
