/**
 * `UtxoAdapter`: one Bitcoin or Litecoin network in one mode behind the ChainAdapter interface. Deposit addresses
 * are BIP-84 P2WPKH addresses derived from the master seed (address.ts), payment URIs are BIP-21, and the watcher
 * (watcher.ts) and sender (sender.ts) talk to a Bitcoin Core or Litecoin Core node over its RPC (rpc.ts).
 */
import type { HDKey } from '@scure/bip32';
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Mode } from '../../core/mode.ts';
import type { Secrets } from '../../core/secrets.ts';
import type { Db } from '../../db/index.ts';
import type { ChainAdapter } from '../plugin.ts';
import type { NetworkHealth } from '../health.ts';
import type { DepositSink } from '../ports.ts';
import type { NetworkConfig, TokenConfig } from '../types.ts';
import { accountKey, bip21Uri, childKey, isValidUtxoAddress, p2wpkhAddress, rootKey } from './address.ts';
import { utxoSettings, type UtxoSettings } from './config.ts';
import { UtxoRpc } from './rpc.ts';
import type { UtxoSender } from './sender.ts';
import { UtxoWatcher, type UtxoWatcherOptions } from './watcher.ts';
import { NetworkAdapter, type NetworkRpcOptions } from '../network-adapter.ts';
import { watcherBasics } from '../loops.ts';

export interface UtxoAdapterDeps {
  /** Where its watcher reports whether the nodes answer. */
  health?: NetworkHealth;
  db: Db;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  secrets: Pick<Secrets, 'masterSeed'>;
}

export class UtxoAdapter extends NetworkAdapter<UtxoSettings, UtxoRpc, UtxoAdapterDeps> implements ChainAdapter {
  private account: HDKey | null = null;
  /** Hot-wallet sender of refunds, payouts and sweeps (sender.ts); attached when the family loads, where a node is configured. */
  sender?: UtxoSender;

  constructor(network: NetworkConfig, mode: Mode, deps: UtxoAdapterDeps) {
    super(network, mode, deps, 'utxo', utxoSettings);
  }

  /** The BIP-84 account key of this network (derived on first use). */
  accountKey(): HDKey {
    this.account ??= accountKey(rootKey(this.deps.secrets.masterSeed), this.settings.params, this.settings.account);
    return this.account;
  }

  /** The key of deposit address `index`. */
  depositKey(index: bigint): HDKey {
    return childKey(this.accountKey(), 0, index);
  }

  /** The hot wallet's key: change chain, index 0. */
  hotWalletKey(): HDKey {
    return childKey(this.accountKey(), 1, 0n);
  }

  hotWalletAddress(): string {
    return p2wpkhAddress(this.hotWalletKey().publicKey!, this.settings.params);
  }

  async deriveAddress(index: bigint): Promise<string> {
    return p2wpkhAddress(this.depositKey(index).publicKey!, this.settings.params);
  }

  paymentUri(token: TokenConfig, address: string, amount: bigint): string | null {
    return bip21Uri(this.settings.params, address, amount, token.decimals);
  }

  isValidAddress(address: string): boolean {
    return isValidUtxoAddress(address, this.settings.params);
  }

  protected newRpc(options: NetworkRpcOptions): UtxoRpc {
    return new UtxoRpc(options);
  }

  /** A watcher reporting to `sink`, not started (tests tick it by hand). */
  watcher(sink: DepositSink, overrides: Partial<UtxoWatcherOptions> = {}): UtxoWatcher {
    return new UtxoWatcher({
      ...watcherBasics(this.deps, this.network, this.mode, sink),
      clock: this.deps.clock,
      params: this.settings.params,
      rpc: this.rpc(),
      ownAddresses: [this.hotWalletAddress()],
      startHeight: this.settings.startHeight,
      mempoolPollMs: this.settings.mempoolPollMs,
      blocks: this.sender,
      ...overrides,
    });
  }

  /** A watcher follows this network: not paused, with RPC URLs. */
  get watched(): boolean {
    return !this.network.paused && this.network.rpcUrls.length > 0;
  }
}
