/**
 * What every family's adapter (a ChainAdapter, plugin.ts) keeps the same way: its network and mode, its settings
 * parsed from the network's family block, the network's one RPC client (shared by the watcher, the sender and the
 * CLI, made on first use), and a transaction's explorer link.
 */
import type { Logger } from '../core/log.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Mode } from '../core/mode.ts';
import { networkRpcOptions } from './jsonrpc.ts';
import { explorerTxUrl } from './networks.ts';
import type { NetworkConfig } from './types.ts';

export type NetworkRpcOptions = ReturnType<typeof networkRpcOptions>;

export abstract class NetworkAdapter<
  Settings extends { rpcTimeoutMs: number },
  Rpc,
  Deps extends { metrics?: Metrics; log?: Logger },
> {
  readonly settings: Settings;
  private client: Rpc | null = null;

  protected constructor(
    readonly network: NetworkConfig,
    readonly mode: Mode,
    readonly deps: Deps,
    family: string,
    settingsOf: (network: NetworkConfig) => Settings,
  ) {
    if (network.family !== family)
      throw new Error(
        `${new.target.name}: ${network.id} is not ${/^[aeiou]/.test(family) ? 'an' : 'a'} ${family} network`,
      );
    this.settings = settingsOf(network);
  }

  /** The family's client of the network's RPC URLs. */
  protected abstract newRpc(options: NetworkRpcOptions): Rpc;

  explorerUrl(txHash: string): string | null {
    return explorerTxUrl(this.network, txHash);
  }

  /** The network's RPC client (one per adapter). */
  rpc(): Rpc {
    this.client ??= this.newRpc(networkRpcOptions(this.network, this.settings.rpcTimeoutMs, this.deps));
    return this.client;
  }
}
