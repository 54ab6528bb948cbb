/**
 * `EvmAdapter`: one EVM network in one mode behind the ChainAdapter interface. Deposit addresses are CREATE2
 * forwarder addresses of the network's ForwarderFactory (address.ts), payment URIs are EIP-681, and the watcher
 * (watcher.ts) follows the chain over the network's RPC URLs (rpc.ts).
 */
import type { Address } from 'viem';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Secrets } from '../../core/secrets.ts';
import type { Db } from '../../db/index.ts';
import type { ChainAdapter } from '../plugin.ts';
import type { NetworkHealth } from '../health.ts';
import type { DepositSink } from '../ports.ts';
import type { Mode, NetworkConfig, TokenConfig } from '../types.ts';
import { eip681Uri, forwarderAddress, forwarderSalt, forwarderSaltKey, isValidEvmAddress } from './address.ts';
import { evmSettings, type EvmNetworkSettings } from './config.ts';
import { RpcClient } from './rpc.ts';
import type { EvmHolds } from './holds.ts';
import type { EvmSender } from './sender.ts';
import { EvmWatcher, TRANSFER_TOPIC, type EvmWatcherOptions } from './watcher.ts';
import { NetworkAdapter, type NetworkRpcOptions } from '../network-adapter.ts';
import { watcherBasics } from '../loops.ts';
import type { PushSpec } from '../push.ts';

export interface EvmAdapterDeps {
  /** Where its watcher reports whether the nodes answer. */
  health?: NetworkHealth;
  db: Db;
  log: Logger;
  metrics?: Metrics;
  secrets: Pick<Secrets, 'masterSeed'>;
}

const saltKeys = new WeakMap<object, Buffer>();

/** The salt key of a secrets object, derived once (PBKDF2 is slow on purpose). */
function saltKeyOf(secrets: Pick<Secrets, 'masterSeed'>): Buffer {
  let key = saltKeys.get(secrets);
  if (!key) {
    key = forwarderSaltKey(secrets.masterSeed);
    saltKeys.set(secrets, key);
  }
  return key;
}

/**
 * What wakes an EVM watcher over the network's `ws_urls`: `newHeads`, and `logs` of Transfer events of the
 * configured ERC-20 contracts (push.ts), once per block whichever announces it first.
 */
export function evmPush(network: NetworkConfig): PushSpec {
  const contracts = network.tokens.flatMap((t) => (t.kind === 'erc20' && t.contract ? [t.contract] : []));
  return {
    urls: network.wsUrls ?? [],
    subscribe: [
      { method: 'eth_subscribe', params: ['newHeads'] },
      ...(contracts.length > 0
        ? [{ method: 'eth_subscribe', params: ['logs', { address: contracts, topics: [TRANSFER_TOPIC] }] }]
        : []),
    ],
    // A head and the logs of its block announce the same block: one wake-up (a replaced block is news).
    news: (r) => {
      const o = r as { hash?: unknown; blockHash?: unknown } | null;
      const hash = o?.hash ?? o?.blockHash;
      return typeof hash === 'string' ? hash.toLowerCase() : null;
    },
  };
}

export class EvmAdapter extends NetworkAdapter<EvmNetworkSettings, RpcClient, EvmAdapterDeps> implements ChainAdapter {
  readonly factory: Address;
  private readonly saltKey: Buffer;
  /** Hot-wallet sender of refunds, payouts and gasless relays (sender.ts); attached when the family loads. */
  sender?: EvmSender;
  /** Hold and capture through the network's escrow (holds.ts); attached when the family loads, where configured. */
  holds?: EvmHolds;

  constructor(network: NetworkConfig, mode: Mode, deps: EvmAdapterDeps) {
    super(network, mode, deps, 'evm', evmSettings);
    if (!this.settings.forwarderFactory)
      throw new Error(`EvmAdapter: ${mode} network ${network.id} has no evm.forwarder_factory`);
    this.factory = this.settings.forwarderFactory as Address;
    this.saltKey = saltKeyOf(deps.secrets);
  }

  /** The CREATE2 salt of deposit address `index` (the sweep passes it to the factory). */
  salt(index: bigint): `0x${string}` {
    return forwarderSalt(this.saltKey, this.mode, this.network.id, index);
  }

  async deriveAddress(index: bigint): Promise<string> {
    return this.addressOf(index);
  }

  /** Synchronous deriveAddress (checksummed). */
  addressOf(index: bigint): Address {
    return forwarderAddress(this.factory, this.salt(index));
  }

  paymentUri(token: TokenConfig, address: string, amount: bigint): string | null {
    return eip681Uri(this.network, token, address, amount);
  }

  isValidAddress(address: string): boolean {
    return isValidEvmAddress(address);
  }

  protected newRpc(options: NetworkRpcOptions): RpcClient {
    return new RpcClient(options);
  }

  /** A watcher reporting to `sink`, not started (tests call `tick()` on it directly). */
  watcher(sink: DepositSink, overrides: Partial<EvmWatcherOptions> = {}): EvmWatcher {
    return new EvmWatcher({
      ...watcherBasics(this.deps, this.network, this.mode, sink),
      push: evmPush(this.network),
      rpc: this.rpc(),
      blocksPerBatch: this.settings.blocksPerBatch,
      startBlock: this.settings.startBlock,
      ...overrides,
    });
  }

  /** Whether a watcher follows this network: it is not paused and has RPC URLs. */
  get watched(): boolean {
    return !this.network.paused && this.network.rpcUrls.length > 0;
  }
}
