/**
 * The `solana` object of a Solana network in the networks file (optional; every field optional):
 *
 *   "solana": { "treasury": "<address>", "start_slot": 123, "rpc_timeout_ms": 10000, "max_slots_per_tick": 1000,
 *               "sweep_interval_s": 0, "ata_close_after_s": 172800 }
 *
 * `treasury` is where sweeps send SOL and USDC; `sweep_interval_s` > 0 runs the sweep as a worker (0: only
 * `kasse solana sweep`); `ata_close_after_s` is how long an unused token account Kasse opened for a coin choice is
 * kept before a sweep closes it to recover its rent. docs/solana.md.
 */
import { ConfigError } from '../../config.ts';
import { SettingsObject } from '../settings.ts';
import type { NetworkConfig } from '../types.ts';
import { isSolanaAddress } from './address.ts';

/** Settings only Solana networks have (`NetworkConfig.settings` of a `solana` network). */
export interface SolanaNetworkSettings {
  /** Where sweeps send SOL and tokens; null = sweeps refuse to run (and a live network gets no adapter). */
  treasury: string | null;
  /** First slot the watcher reads when it has no cursor yet; null = the confirmed tip at first start. */
  startSlot: bigint | null;
  rpcTimeoutMs: number;
  /** Blocks read per watcher tick at most (the loop runs again at once when behind). */
  maxSlotsPerTick: number;
  /** Seconds between automatic sweeps; 0 = only `kasse solana sweep`. */
  sweepIntervalSeconds: number;
  /** An unused token account Kasse opened is closed by a sweep this long after its coin choice. */
  ataCloseAfterSeconds: number;
}

export const SOLANA_DEFAULTS = {
  rpcTimeoutMs: 10_000,
  maxSlotsPerTick: 1000,
  sweepIntervalSeconds: 0,
  ataCloseAfterSeconds: 48 * 3600,
} as const;

/** The `solana` settings of a network as parsed when the networks file was read (the defaults if it had none). */
export function solanaSettings(network: NetworkConfig): SolanaNetworkSettings {
  return (network.settings as SolanaNetworkSettings | undefined) ?? parseSolanaSettings(undefined, network.id);
}

/** Parses the `solana` object (`at` names it in error messages); undefined/null gives the defaults. */
export function parseSolanaSettings(raw: unknown, at: string): SolanaNetworkSettings {
  if (raw === undefined || raw === null) return { treasury: null, startSlot: null, ...SOLANA_DEFAULTS };
  const settings = new SettingsObject(raw, at, [
    'treasury',
    'start_slot',
    'rpc_timeout_ms',
    'max_slots_per_tick',
    'sweep_interval_s',
    'ata_close_after_s',
  ]);
  const o = settings.values;
  const treasury = o.treasury ?? null;
  if (treasury !== null && (typeof treasury !== 'string' || !isSolanaAddress(treasury)))
    throw new ConfigError(`${at}.treasury must be a Solana address`);
  return {
    treasury: treasury as string | null,
    startSlot: settings.start('start_slot', 'a slot number'),
    rpcTimeoutMs: settings.int('rpc_timeout_ms', 100, SOLANA_DEFAULTS.rpcTimeoutMs),
    maxSlotsPerTick: settings.int('max_slots_per_tick', 1, SOLANA_DEFAULTS.maxSlotsPerTick),
    sweepIntervalSeconds: settings.int('sweep_interval_s', 0, SOLANA_DEFAULTS.sweepIntervalSeconds),
    ataCloseAfterSeconds: settings.int('ata_close_after_s', 0, SOLANA_DEFAULTS.ataCloseAfterSeconds),
  };
}
