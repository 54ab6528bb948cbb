/**
 * Networks and coins: `config/networks.live.json` and `config/networks.test.json` (or the files named by
 * `KASSE_LIVE_NETWORKS_FILE` and `KASSE_NETWORKS_FILE`, which replace them) parsed into `NetworkConfig`/`TokenConfig`
 * and validated once at start. A bad file stops the program with a message naming the file and the field. File format: docs/payments.md.
 *
 * A network's `family` is an installed chain family (or `none`: served by the test-mode simulator alone); the
 * family's rules check what is its own (a chain id, token contract addresses, its settings object), and a token's
 * `kind` is `native` or one of the token kinds the family declares (any installed family's on a `none` network).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, KASSE_HOME, type Config } from '../config.ts';
import { parseUnits } from '../core/money.ts';
import type { ChainFamily } from './plugin.ts';
import type { ConfirmationTier, Mode, NetworkConfig, TokenConfig } from './types.ts';

const CONFIG_DIR = join(KASSE_HOME, 'config');
/** The family of networks no installed family serves: test-mode simulator addresses only. */
export const NO_FAMILY = 'none';
const ID = /^[a-z0-9][a-z0-9-]{0,31}$/;
const SYMBOL = /^[a-z0-9]{1,16}$/;

/** The test-mode and live-mode network sets, as loaded from the configuration files. */
export function loadNetworks(
  config: Pick<Config, 'networksFile'> & Partial<Pick<Config, 'liveNetworksFile'>>,
  families: readonly ChainFamily[],
): Record<Mode, NetworkConfig[]> {
  return {
    live: readNetworks(config.liveNetworksFile ?? join(CONFIG_DIR, 'networks.live.json'), families),
    test: readNetworks(config.networksFile ?? join(CONFIG_DIR, 'networks.test.json'), families),
  };
}

export function readNetworks(path: string, families: readonly ChainFamily[]): NetworkConfig[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(
      `${path}: ${err instanceof SyntaxError ? 'not valid JSON' : 'cannot be read'} (${(err as Error).message})`,
    );
  }
  return parseNetworks(raw, path, families);
}

/** Parses and validates a networks document (`{ networks: [...] }`); `source` names it in error messages. */
export function parseNetworks(raw: unknown, source: string, families: readonly ChainFamily[]): NetworkConfig[] {
  const doc = obj(raw, source);
  const list = doc.networks;
  if (!Array.isArray(list) || list.length === 0)
    throw new ConfigError(`${source}: "networks" must be a non-empty array`);
  const seen = new Set<string>();
  const networks = list.map((n, i) => {
    const net = parseNetwork(n, `${source}: networks[${i}]`, families);
    if (seen.has(net.id)) throw new ConfigError(`${source}: network id "${net.id}" appears twice`);
    seen.add(net.id);
    return net;
  });
  const defaults = networks.flatMap((n) => n.tokens.filter((t) => t.default).map((t) => t.id));
  if (defaults.length > 1)
    throw new ConfigError(`${source}: only one token may be "default": true (${defaults.join(', ')} are)`);
  return networks;
}

function parseNetwork(raw: unknown, at: string, families: readonly ChainFamily[]): NetworkConfig {
  const n = obj(raw, at);
  const id = str(n, 'id', at);
  if (!ID.test(id)) throw new ConfigError(`${at}.id: "${id}" must be lower case letters, digits and dashes`);
  at = `${at} (${id})`;
  const family = oneOf(n, 'family', [...families.map((f) => f.name), NO_FAMILY], at);
  const rules = families.find((f) => f.name === family)?.networks ?? {};
  const chainId = n.chain_id ?? null;
  if (chainId !== null && !(Number.isSafeInteger(chainId) && (chainId as number) > 0))
    throw new ConfigError(`${at}.chain_id must be a positive integer or null`);
  if (rules.requiresChainId && chainId === null)
    throw new ConfigError(`${at}.chain_id is required for networks of the ${family} family`);
  const rpcUrls = n.rpc_urls ?? [];
  if (!Array.isArray(rpcUrls) || !rpcUrls.every((u) => typeof u === 'string' && /^(https?|wss?):\/\/./.test(u))) {
    throw new ConfigError(`${at}.rpc_urls must be an array of http(s) or ws(s) URLs`);
  }
  const wsUrls = n.ws_urls ?? [];
  if (!Array.isArray(wsUrls) || !wsUrls.every((u) => typeof u === 'string' && /^wss?:\/\/./.test(u))) {
    throw new ConfigError(`${at}.ws_urls must be an array of ws(s) URLs`);
  }
  const explorer = n.explorer_tx_url ?? null;
  if (explorer !== null && (typeof explorer !== 'string' || !/^https?:\/\//.test(explorer)))
    throw new ConfigError(`${at}.explorer_tx_url must be an http(s) URL or null`);
  const tiers = parseTiers(n.confirmation_tiers, `${at}.confirmation_tiers`);
  const finality = posInt(n, 'finality_confirmations', at);
  if (finality < tiers[tiers.length - 1]!.confirmations)
    throw new ConfigError(`${at}.finality_confirmations must be at least the largest tier's confirmations`);
  const paused = n.paused ?? false;
  if (typeof paused !== 'boolean') throw new ConfigError(`${at}.paused must be true or false`);
  if (!Array.isArray(n.tokens) || n.tokens.length === 0)
    throw new ConfigError(`${at}.tokens must be a non-empty array`);
  const kinds = [
    'native',
    ...(family === NO_FAMILY ? families : families.filter((f) => f.name === family)).flatMap((f) => f.tokenKinds ?? []),
  ];
  const tokens = n.tokens.map((t, i) => parseToken(t, id, rules, kinds, `${at}.tokens[${i}]`));
  if (new Set(tokens.map((t) => t.id)).size !== tokens.length)
    throw new ConfigError(`${at}.tokens: a symbol appears twice`);
  return {
    id,
    name: str(n, 'name', at),
    family,
    chainId: chainId as number | null,
    rpcUrls: rpcUrls as string[],
    wsUrls: wsUrls as string[],
    explorerTxUrl: explorer as string | null,
    confirmationTiers: tiers,
    finalityConfirmations: finality,
    pollIntervalMs: n.poll_interval_ms === undefined ? 10_000 : posInt(n, 'poll_interval_ms', at),
    ...(n.sender_lease_ms === undefined ? {} : { senderLeaseMs: posInt(n, 'sender_lease_ms', at) }),
    paused,
    tokens,
    ...(rules.settings ? { settings: rules.settings(n[family], `${at}.${family}`) } : {}),
  };
}

function parseTiers(raw: unknown, at: string): ConfirmationTier[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new ConfigError(`${at} must be a non-empty array`);
  const tiers = raw.map((t, i) => {
    const o = obj(t, `${at}[${i}]`);
    const max = o.max_usd_cents ?? null;
    if (max !== null && !(Number.isSafeInteger(max) && (max as number) > 0))
      throw new ConfigError(`${at}[${i}].max_usd_cents must be a positive integer or null`);
    return { maxUsdCents: max as number | null, confirmations: posInt(o, 'confirmations', `${at}[${i}]`) };
  });
  tiers.forEach((t, i) => {
    const last = i === tiers.length - 1;
    if ((t.maxUsdCents === null) !== last)
      throw new ConfigError(`${at}: exactly the last tier must have max_usd_cents null`);
    if (i > 0 && t.maxUsdCents !== null && t.maxUsdCents <= tiers[i - 1]!.maxUsdCents!)
      throw new ConfigError(`${at}: max_usd_cents must ascend`);
  });
  return tiers;
}

function parseToken(
  raw: unknown,
  chain: string,
  rules: NonNullable<ChainFamily['networks']>,
  kinds: readonly string[],
  at: string,
): TokenConfig {
  const t = obj(raw, at);
  const symbol = str(t, 'symbol', at);
  if (!SYMBOL.test(symbol)) throw new ConfigError(`${at}.symbol: "${symbol}" must be lower case letters and digits`);
  at = `${at} (${chain}:${symbol})`;
  const decimals = t.decimals;
  if (!Number.isInteger(decimals) || (decimals as number) < 0 || (decimals as number) > 36)
    throw new ConfigError(`${at}.decimals must be an integer from 0 to 36`);
  const kind = oneOf(t, 'kind', [...new Set(kinds)], at);
  let contract = t.contract ?? null;
  if (contract !== null && typeof contract !== 'string')
    throw new ConfigError(`${at}.contract must be a string or null`);
  if (kind === 'native' && contract !== null) throw new ConfigError(`${at}.contract must be null for a native coin`);
  if (contract !== null && rules.contract) {
    const canonical = rules.contract.canonical(contract as string);
    if (canonical === null) throw new ConfigError(`${at}.contract is not ${rules.contract.name}`);
    contract = canonical;
  }
  let minAmount: bigint;
  try {
    minAmount = parseUnits(str(t, 'min_amount', at), decimals as number);
  } catch {
    throw new ConfigError(`${at}.min_amount must be a decimal amount of whole coins with at most ${decimals} decimals`);
  }
  if (minAmount <= 0n) throw new ConfigError(`${at}.min_amount must be positive`);
  const stable = t.stable ?? false;
  const gasless = t.gasless ?? false;
  const isDefault = t.default ?? false;
  if (typeof stable !== 'boolean' || typeof gasless !== 'boolean' || typeof isDefault !== 'boolean')
    throw new ConfigError(`${at}: stable, gasless and default must be true or false`);
  const coingeckoId = optStr(t, 'coingecko_id', at);
  const binanceSymbol = optStr(t, 'binance_symbol', at);
  if (!stable && coingeckoId === null && binanceSymbol === null)
    throw new ConfigError(`${at}: a coin that is not stable needs coingecko_id or binance_symbol`);
  return {
    id: `${chain}:${symbol}`,
    chain,
    symbol: symbol.toUpperCase(),
    name: str(t, 'name', at),
    decimals: decimals as number,
    kind,
    contract: contract as string | null,
    minAmount,
    stable,
    coingeckoId,
    binanceSymbol,
    gasless,
    default: isDefault,
  };
}

/** Explorer page of a transaction: `{tx}` in the network's template is replaced, or the hash is appended. */
export function explorerTxUrl(network: NetworkConfig, txHash: string): string | null {
  const t = network.explorerTxUrl;
  if (!t) return null;
  return t.includes('{tx}') ? t.replace('{tx}', encodeURIComponent(txHash)) : t + encodeURIComponent(txHash);
}

/** The confirmation tier (1-based) and confirmations required for a payment of `priceCents`. */
export function confirmationTier(network: NetworkConfig, priceCents: number): { tier: number; confirmations: number } {
  const i = network.confirmationTiers.findIndex((t) => t.maxUsdCents === null || priceCents <= t.maxUsdCents);
  return { tier: i + 1, confirmations: network.confirmationTiers[i]!.confirmations };
}

/**
 * The confirmation tier of `amount` smallest units of a USD-pegged token (its whole cents, rounded down): how a payment
 * priced in the coin itself (an x402 settlement) picks its confirmations, like every payment of that many cents.
 */
export function tokenAmountTier(
  network: NetworkConfig,
  token: TokenConfig,
  amount: bigint,
): { tier: number; confirmations: number } {
  return confirmationTier(network, Number(amount / 10n ** BigInt(Math.max(0, token.decimals - 2))));
}

type Obj = Record<string, unknown>;

function obj(v: unknown, at: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ConfigError(`${at} must be an object`);
  return v as Obj;
}
function str(o: Obj, k: string, at: string): string {
  const v = o[k];
  if (typeof v !== 'string' || v === '') throw new ConfigError(`${at}.${k} must be a non-empty string`);
  return v;
}
function optStr(o: Obj, k: string, at: string): string | null {
  return o[k] === undefined || o[k] === null ? null : str(o, k, at);
}
function posInt(o: Obj, k: string, at: string): number {
  const v = o[k];
  if (!Number.isSafeInteger(v) || (v as number) < 1) throw new ConfigError(`${at}.${k} must be a positive integer`);
  return v as number;
}
function oneOf<T extends string>(o: Obj, k: string, values: readonly T[], at: string): T {
  const v = o[k];
  if (!values.includes(v as T)) throw new ConfigError(`${at}.${k} must be one of ${values.join(', ')}`);
  return v as T;
}
