/**
 * The `evm` object of an EVM network in the networks file (optional; every field optional):
 *
 *   "evm": { "forwarder_factory": "0x…", "treasury": "0x…", "start_block": 123, "blocks_per_batch": 20,
 *            "rpc_timeout_ms": 10000, "max_fee_gwei": "300", "replace_after_blocks": 10,
 *            "disperse": "0x…", "disperse_max_items": 200 }
 * (the last four tune the hot-wallet sender, sender.ts: `disperse` is a deployed contracts/Disperse.sol through which
 * ERC-20 payouts leave in batches of at most `disperse_max_items`)
 *   "evm": { "eip712_domains": { "usdc": { "name": "USDC", "version": "2" } } }
 * (a token's EIP-712 domain name and version, by symbol, for a network without a node: the x402 facilitator's
 * `supported` names them so clients sign as on the real chain; with a node they are read from the token)
 *   "evm": { "auth_capture": { "escrow": "0x…", "erc3009_collector": "0x…", "operator_refund_collector": "0x…" } }
 * (hold and capture, docs/capture.md: the escrow Kasse operates for manual payments on this network)
 *   "evm": { "subscription_collector": "0x…" }
 * (a deployed contracts/SubscriptionCollector.sol: subscriptions charge themselves on the network, charges.ts)
 *
 * Without `forwarder_factory` Kasse cannot derive deposit addresses on the network, so no EVM adapter is registered
 * for it (test mode falls back to the simulator's addresses; live mode reports the network unavailable).
 */
import { getAddress, isAddress } from 'viem';
import { ConfigError } from '../../config.ts';
import { parseUnits } from '../../core/money.ts';
import { SettingsObject } from '../settings.ts';
import type { NetworkConfig } from '../types.ts';

/** The hold-and-capture escrow a network's holds go through (docs/capture.md; escrow.ts). */
export interface EscrowSettings {
  escrow: string;
  erc3009Collector: string;
  operatorRefundCollector: string;
}

/** Settings only EVM networks have (`NetworkConfig.settings` of an `evm` network). */
export interface EvmNetworkSettings {
  /** ForwarderFactory deployed with `kasse evm deploy-factory`; deposit addresses are its CREATE2 clones. */
  forwarderFactory: string | null;
  /** Default treasury for `kasse evm deploy-factory` (the deployed factory holds the one sweeps use). */
  treasury: string | null;
  /** First block the watcher scans when it has no cursor yet; null = the head at first start. */
  startBlock: bigint | null;
  /** Blocks per eth_getLogs range while catching up. */
  blocksPerBatch: number;
  rpcTimeoutMs: number;
  /** Hot-wallet sender (sender.ts): cap on maxFeePerGas in wei (`max_fee_gwei`); absent = the sender's default. */
  maxFeePerGas?: bigint;
  /** Hot-wallet sender: blocks a broadcast transaction may stay unmined before it is replaced (`replace_after_blocks`). */
  replaceAfterBlocks?: number;
  /** Hot-wallet sender: the Disperse contract ERC-20 payouts are batched through (`disperse`); absent = one by one. */
  disperse?: string;
  /** Hot-wallet sender: most payouts in one batch transaction (`disperse_max_items`, default 200). */
  disperseMaxItems?: number;
  /** Hold and capture (`auth_capture`): the escrow and its collectors; absent = no coin of the network can be held. */
  authCapture?: EscrowSettings;
  /** EIP-712 domains of tokens by symbol (`eip712_domains`), for a network served without a node. */
  eip712Domains: Record<string, { name: string; version: string }>;
  /** The SubscriptionCollector grants are given to and charged through (`subscription_collector`); absent: none. */
  subscriptionCollector?: string;
}

export const EVM_DEFAULTS = { blocksPerBatch: 20, rpcTimeoutMs: 10_000 } as const;

/** The `evm` settings of a network as parsed when the networks file was read (the defaults if it had none). */
export function evmSettings(network: NetworkConfig): EvmNetworkSettings {
  return (network.settings as EvmNetworkSettings | undefined) ?? parseEvmSettings(undefined, network.id);
}

/** Parses the `evm` object (`at` names it in error messages); undefined/null gives the defaults. */
export function parseEvmSettings(raw: unknown, at: string): EvmNetworkSettings {
  if (raw === undefined || raw === null)
    return { forwarderFactory: null, treasury: null, startBlock: null, eip712Domains: {}, ...EVM_DEFAULTS };
  const settings = new SettingsObject(raw, at, [
    'forwarder_factory',
    'treasury',
    'start_block',
    'blocks_per_batch',
    'rpc_timeout_ms',
    'max_fee_gwei',
    'replace_after_blocks',
    'disperse',
    'disperse_max_items',
    'eip712_domains',
    'auth_capture',
    'subscription_collector',
  ]);
  const o = settings.values;
  const address = (k: string): string | null =>
    o[k] === undefined || o[k] === null ? null : nonZeroAddress(o[k], `${at}.${k}`);
  return {
    forwarderFactory: address('forwarder_factory'),
    treasury: address('treasury'),
    startBlock: settings.start('start_block', 'a block number'),
    blocksPerBatch: settings.int('blocks_per_batch', 1, EVM_DEFAULTS.blocksPerBatch),
    rpcTimeoutMs: settings.int('rpc_timeout_ms', 100, EVM_DEFAULTS.rpcTimeoutMs),
    eip712Domains: domains(o.eip712_domains, `${at}.eip712_domains`),
    ...senderSettings(settings),
    ...(o.auth_capture !== undefined && o.auth_capture !== null
      ? { authCapture: escrowSettings(o.auth_capture, `${at}.auth_capture`) }
      : {}),
    ...(address('disperse')
      ? { disperse: address('disperse')!, disperseMaxItems: settings.int('disperse_max_items', 2, 200) }
      : {}),
    ...(address('subscription_collector') ? { subscriptionCollector: address('subscription_collector')! } : {}),
  };
}

/** A configured contract or wallet address (`where` names the setting), checksummed; the zero address is refused. */
function nonZeroAddress(v: unknown, where: string): string {
  if (typeof v !== 'string' || !isAddress(v, { strict: false }) || /^0x0{40}$/i.test(v))
    throw new ConfigError(`${where} must be a non-zero EVM address`);
  return getAddress(v);
}

/**
 * `{"escrow": "0x…", "erc3009_collector": "0x…", "operator_refund_collector": "0x…"}`: for a live network the canonical
 * commerce-payments deployment (AUTH_CAPTURE_V1_1 in escrow.ts), for a local node where `kasse evm deploy-escrow`
 * placed the same contracts.
 */
function escrowSettings(raw: unknown, at: string): EscrowSettings {
  const v = new SettingsObject(raw, at, ['escrow', 'erc3009_collector', 'operator_refund_collector']).values;
  const address = (k: string): string => nonZeroAddress(v[k], `${at}.${k}`);
  return {
    escrow: address('escrow'),
    erc3009Collector: address('erc3009_collector'),
    operatorRefundCollector: address('operator_refund_collector'),
  };
}

/** `{"<symbol>": {"name": …, "version": …}}`, each a non-empty string; absent: none. */
function domains(raw: unknown, at: string): Record<string, { name: string; version: string }> {
  if (raw === undefined || raw === null) return {};
  const all = new SettingsObject(raw, at, Object.keys(raw as object), 'an object of token symbols').values;
  const out: Record<string, { name: string; version: string }> = {};
  for (const [symbol, d] of Object.entries(all)) {
    if (symbol === '$comment') continue;
    const v = new SettingsObject(d, `${at}.${symbol}`, ['name', 'version']).values;
    if (typeof v.name !== 'string' || !v.name || typeof v.version !== 'string' || !v.version)
      throw new ConfigError(`${at}.${symbol} must have a non-empty name and version`);
    out[symbol.toLowerCase()] = { name: v.name, version: v.version };
  }
  return out;
}

/** The hot-wallet sender's optional settings: `max_fee_gwei` (decimal gwei, a string or number) and `replace_after_blocks`. */
function senderSettings(settings: SettingsObject): Pick<EvmNetworkSettings, 'maxFeePerGas' | 'replaceAfterBlocks'> {
  const { at, values: o } = settings;
  const out: Pick<EvmNetworkSettings, 'maxFeePerGas' | 'replaceAfterBlocks'> = {};
  const fee = o.max_fee_gwei;
  if (fee !== undefined && fee !== null) {
    let wei = 0n;
    try {
      wei = parseUnits(String(fee), 9);
    } catch {
      // reported below
    }
    if ((typeof fee !== 'string' && typeof fee !== 'number') || wei <= 0n)
      throw new ConfigError(`${at}.max_fee_gwei must be a positive amount of gwei`);
    out.maxFeePerGas = wei;
  }
  const blocks = settings.int('replace_after_blocks', 1, null);
  if (blocks !== null) out.replaceAfterBlocks = blocks;
  return out;
}
