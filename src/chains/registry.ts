/**
 * The chain registry: the configured networks of each mode and the adapter serving each of them.
 *
 * Chain families register their adapters when Kasse opens (plugin.ts). A network without one is served by a
 * built-in fallback that derives deterministic addresses from the operator's secret key (HMAC over
 * `mode|chain|index`) in the family's address format, so the test-mode simulator can finish payments on any coin.
 * NOTE: nobody holds keys to fallback addresses, so a live network without a registered adapter counts as
 * unavailable (503 `chain_paused`).
 */
import { createHmac } from 'node:crypto';
import { ImpossibleState } from '../core/errors.ts';
import type { NetworkHealth } from './health.ts';
import { explorerTxUrl, NO_FAMILY } from './networks.ts';
import type { AddressFormat, ChainAdapter, PaymentUriContext } from './plugin.ts';
import type { OutgoingSender } from './ports.ts';
import type { Mode, NetworkConfig, TokenConfig } from './types.ts';

/** Addresses of networks no family serves (`none`): opaque simulator strings, no payment URI. */
const SIMULATOR_FORMAT: AddressFormat = {
  isValidAddress: (address) => /^[A-Za-z0-9]{20,128}$/.test(address),
  addressFromBytes: (bytes) => `sim${Buffer.from(bytes.subarray(0, 20)).toString('hex')}`,
  paymentUri: () => null,
};

/**
 * Where a network of a mode stands: `running` (a chain adapter serves it), `simulated` (test mode without an adapter:
 * payments are issued and finished with the simulator, nothing is watched) or `paused` (no new coin choices: paused
 * by the operator, no adapter in live mode, or its nodes do not answer its watcher). For the last two, `reason` says
 * why in words an operator can act on (the setting, the command: `kasse … status`, GET /currencies, the log, the
 * dashboard's Going live page), and `plain` in words for merchants and payers, who cannot act on those.
 */
export interface NetworkStatus {
  state: 'running' | 'simulated' | 'paused';
  reason: string | null;
  plain: string | null;
}

/** Why a network takes no payments, for merchants and payers: no settings, commands or files. */
export const PLAIN_REASONS = {
  operator: 'paused by whoever runs this Kasse',
  nodes: 'its connection to the network is down; it resumes by itself when the network answers again',
  setup: 'not set up for live payments yet',
  simulated: 'test payments on it are finished with the simulator',
} as const;

export class ChainRegistry {
  private readonly registered = new Map<string, ChainAdapter>();
  private readonly fallbacks = new Map<string, ChainAdapter>();
  /** Why a family serves no adapter for a network (`mode:chain` → reason), as the family said. */
  private readonly missing = new Map<string, string>();
  private readonly formats: Map<string, AddressFormat>;

  constructor(
    private readonly sets: Record<Mode, NetworkConfig[]>,
    private readonly secretKey: Buffer,
    /** The address format of each installed family, by family name. */
    formats: ReadonlyArray<{ name: string; format: AddressFormat }>,
    /** Whether the networks' nodes answer their watchers; without it every served network counts as answering. */
    private readonly health?: NetworkHealth,
  ) {
    this.formats = new Map([[NO_FAMILY, SIMULATOR_FORMAT], ...formats.map((f) => [f.name, f.format] as const)]);
  }

  networks(mode: Mode): NetworkConfig[] {
    return this.sets[mode];
  }

  network(mode: Mode, id: string): NetworkConfig | undefined {
    return this.sets[mode].find((n) => n.id === id);
  }

  token(mode: Mode, tokenId: string): TokenConfig | undefined {
    return this.network(mode, tokenId.split(':')[0]!)?.tokens.find((t) => t.id === tokenId);
  }

  /**
   * The configuration of a coin that money is being counted in. Its decimals and kind decide values, so a coin gone
   * from the networks file while its payments still change is not guessed at: this throws, naming `ids`.
   */
  countedToken(mode: Mode, tokenId: string, ids: Record<string, string | null>): TokenConfig {
    const token = this.token(mode, tokenId);
    if (!token)
      throw new ImpossibleState(
        `${tokenId} is not configured in ${mode} mode, so money in it cannot be valued; put it back in the networks file`,
        ids,
      );
    return token;
  }

  /** Every coin of `mode`, or of both modes (unique by id, live first) for the price refresh. */
  tokens(mode?: Mode): TokenConfig[] {
    const byId = new Map<string, TokenConfig>();
    for (const m of mode ? [mode] : (['live', 'test'] as const)) {
      for (const t of this.sets[m].flatMap((n) => n.tokens)) if (!byId.has(t.id)) byId.set(t.id, t);
    }
    return [...byId.values()];
  }

  /** The address format of a network's family. */
  format(network: NetworkConfig): AddressFormat {
    const format = this.formats.get(network.family);
    if (!format) throw new Error(`network "${network.id}" names family "${network.family}", which is not installed`);
    return format;
  }

  /** Plugs in a real adapter for `adapter.mode` and `adapter.network.id`, replacing the fallback. */
  register(adapter: ChainAdapter): void {
    if (!this.network(adapter.mode, adapter.network.id)) {
      throw new Error(`register: network "${adapter.network.id}" is not configured in ${adapter.mode} mode`);
    }
    this.registered.set(`${adapter.mode}:${adapter.network.id}`, adapter);
  }

  hasAdapter(mode: Mode, chain: string): boolean {
    return this.registered.has(`${mode}:${chain}`);
  }

  /** The hot-wallet sender of `chain` in `mode`, or null where no family sender runs (then test mode simulates). */
  sender(mode: Mode, chain: string): OutgoingSender | null {
    return this.registered.get(`${mode}:${chain}`)?.sender ?? null;
  }

  /**
   * Whether `tokenId` can be held (hold and capture, docs/capture.md): where an adapter runs, when its escrow holds
   * the coin; in test mode on a network served by the simulator, any coin payable by signature (`gasless`).
   */
  holdable(mode: Mode, tokenId: string): boolean {
    const token = this.token(mode, tokenId);
    if (!token) return false;
    const adapter = this.registered.get(`${mode}:${token.chain}`);
    if (adapter) return adapter.holds?.canHold(token) ?? false;
    return mode === 'test' && token.gasless;
  }

  /** The adapter serving `chain` in `mode`: the registered one, else the built-in fallback. Throws for unknown networks. */
  adapter(mode: Mode, chain: string): ChainAdapter {
    const key = `${mode}:${chain}`;
    const found = this.registered.get(key) ?? this.fallbacks.get(key);
    if (found) return found;
    const network = this.network(mode, chain);
    if (!network) throw new Error(`unknown ${mode} network "${chain}"`);
    const fallback = new FallbackAdapter(network, mode, this.secretKey, this.format(network));
    this.fallbacks.set(key, fallback);
    return fallback;
  }

  /**
   * Whether new coin choices can be issued on `chain`: configured, not paused, (live mode) served by a real adapter,
   * and its nodes answering.
   */
  available(mode: Mode, chain: string): boolean {
    return !!this.network(mode, chain) && this.status(mode, chain).state !== 'paused';
  }

  /** A chain family tells why it registers no adapter for `chain` in `mode` (shown by `status` and at start). */
  explainMissing(mode: Mode, chain: string, reason: string): void {
    this.missing.set(`${mode}:${chain}`, reason);
  }

  /** Where `chain` stands in `mode`, and why when it is not running. Throws for unknown networks. */
  status(mode: Mode, chain: string): NetworkStatus {
    const network = this.network(mode, chain);
    if (!network) throw new Error(`unknown ${mode} network "${chain}"`);
    if (network.paused)
      return {
        state: 'paused',
        reason: 'paused by the operator ("paused": true in the networks file)',
        plain: PLAIN_REASONS.operator,
      };
    if (this.hasAdapter(mode, chain)) {
      const down = this.health?.down(mode, chain);
      if (!down) return { state: 'running', reason: null, plain: null };
      const since = down.failingSince ? ` since ${down.failingSince.toISOString()}` : '';
      return {
        state: 'paused',
        reason: `${network.rpcUrls.length > 1 ? 'none of its nodes answers' : 'its node does not answer'}${since}; new coin choices resume when it does (\`kasse ${network.family} status\` says more)`,
        plain: PLAIN_REASONS.nodes,
      };
    }
    const why =
      this.missing.get(`${mode}:${chain}`) ?? `no chain support for ${network.family} networks in this installation`;
    return mode === 'test'
      ? { state: 'simulated', reason: why, plain: PLAIN_REASONS.simulated }
      : { state: 'paused', reason: why, plain: PLAIN_REASONS.setup };
  }

  /** Whether any network of `mode` can take new coin choices. */
  anyAvailable(mode: Mode): boolean {
    return this.sets[mode].some((n) => this.available(mode, n.id));
  }

  /** One line for the operator: which networks of `mode` run, and what is missing for the rest. */
  describe(mode: Mode): string {
    const by: Record<NetworkStatus['state'], string[]> = { running: [], simulated: [], paused: [] };
    const reasons = new Map<string, string[]>();
    for (const n of this.sets[mode]) {
      const { state, reason } = this.status(mode, n.id);
      by[state].push(n.id);
      if (reason) reasons.set(reason, [...(reasons.get(reason) ?? []), n.id]);
    }
    const parts = [
      ...(this.anyAvailable(mode) ? [] : ['no network can take payments']),
      ...(by.running.length > 0 ? [`running: ${by.running.join(', ')}`] : []),
      ...(by.simulated.length > 0 ? [`simulator only (nothing watched on chain): ${by.simulated.join(', ')}`] : []),
      ...(by.paused.length > 0 ? [`paused: ${by.paused.join(', ')}`] : []),
    ];
    const why = [...reasons].map(([reason, ids]) => `${ids.join(', ')}: ${reason}`);
    return `${mode} mode: ${parts.join('; ')}.${why.length > 0 ? ` Why: ${why.join('; ')}.` : ''}${mode === 'live' && by.running.length < this.sets.live.length ? ' See "Going live" in the README.' : ''}`;
  }
}

/** Addresses without keys, payment URIs and explorer links for a network that has no real adapter. */
class FallbackAdapter implements ChainAdapter {
  constructor(
    readonly network: NetworkConfig,
    readonly mode: Mode,
    private readonly secretKey: Buffer,
    private readonly format: AddressFormat,
  ) {}

  async deriveAddress(index: bigint): Promise<string> {
    return this.format.addressFromBytes(
      createHmac('sha256', this.secretKey).update(`${this.mode}|${this.network.id}|${index}`).digest(),
      this.network,
    );
  }

  paymentUri(token: TokenConfig, address: string, amount: bigint, context?: PaymentUriContext): string | null {
    return this.format.paymentUri(this.network, token, address, amount, context);
  }

  isValidAddress(address: string): boolean {
    return this.format.isValidAddress(address, this.network);
  }

  explorerUrl(txHash: string): string | null {
    return explorerTxUrl(this.network, txHash);
  }
}
