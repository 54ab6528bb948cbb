/**
 * `SolanaAdapter`: one Solana network in one mode behind the ChainAdapter interface. Deposit addresses are
 * SLIP-0010 keys of the master seed (keys.ts), payment URIs are Solana Pay transfer requests with a per-address
 * reference (pay.ts), the watcher (watcher.ts) reads confirmed blocks over the network's RPC URLs (rpc.ts), and the
 * crash-safe sender (sender.ts) sends refunds and payouts, opens token accounts, sweeps and relays from the hot
 * wallet.
 */
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import type { Mode } from '../../core/mode.ts';
import type { Db, Tx } from '../../db/index.ts';
import type { ChainAdapter, IssuedAddress, PaymentUriContext } from '../plugin.ts';
import type { NetworkHealth } from '../health.ts';
import type { DepositSink } from '../ports.ts';
import type { NetworkConfig, TokenConfig } from '../types.ts';
import { isSolanaAddress } from './address.ts';
import { solanaSettings, type SolanaNetworkSettings } from './config.ts';
import type { SolanaKeys } from './keys.ts';
import { transferRequestUri } from './pay.ts';
import { SolanaRpc } from './rpc.ts';
import type { SolanaSender } from './sender.ts';
import { associatedTokenAccount } from './transactions.ts';
import { SolanaWatcher, type SolanaWatcherOptions } from './watcher.ts';
import { NetworkAdapter, type NetworkRpcOptions } from '../network-adapter.ts';
import { watcherBasics } from '../loops.ts';
import type { PushSpec } from '../push.ts';

export interface SolanaAdapterDeps {
  /** Where its watcher reports whether the nodes answer. */
  health?: NetworkHealth;
  db: Db;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  keys: SolanaKeys;
}

export class SolanaAdapter
  extends NetworkAdapter<SolanaNetworkSettings, SolanaRpc, SolanaAdapterDeps>
  implements ChainAdapter
{
  /** The hot-wallet sender (sender.ts); attached when the family registers its adapters. */
  sender?: SolanaSender;

  constructor(network: NetworkConfig, mode: Mode, deps: SolanaAdapterDeps) {
    super(network, mode, deps, 'solana', solanaSettings);
  }

  async deriveAddress(index: bigint): Promise<string> {
    return this.deps.keys.deposit(this.mode, index).address;
  }

  /** Solana Pay transfer request to the deposit key, with the key's reference. */
  paymentUri(token: TokenConfig, address: string, amount: bigint, context: PaymentUriContext = {}): string | null {
    return transferRequestUri({
      recipient: address,
      amount,
      token,
      reference: this.deps.keys.reference(address),
      label: context.label,
      message: context.message,
    });
  }

  /** A 32-byte base58 public key (on or off the curve: token accounts of program-owned wallets work too). */
  isValidAddress(address: string): boolean {
    return isSolanaAddress(address);
  }

  protected newRpc(options: NetworkRpcOptions): SolanaRpc {
    return new SolanaRpc(options);
  }

  /**
   * A coin choice was issued on this network (called inside the transaction that stores it): the key is
   * remembered for sweeps, and for an SPL coin its associated token account is opened from the hot wallet
   * (recorded here, sent by the sender's worker), so the payer needs no SOL for its rent.
   */
  async addressIssued(tx: Tx, issued: IssuedAddress): Promise<void> {
    const spl = issued.token.kind === 'spl' && issued.token.contract ? issued.token.contract : null;
    const tokenAccount = spl ? await associatedTokenAccount(issued.address, spl) : null;
    await tx
      .insertInto('solana_addresses')
      .values({
        mode: this.mode,
        chain: this.network.id,
        address: issued.address,
        address_index: issued.index,
        token: issued.token.id,
        token_account: tokenAccount,
        created_at: this.deps.clock.now(),
      })
      .onConflict((oc) => oc.columns(['mode', 'chain', 'address']).doNothing())
      .execute();
    if (spl && this.sender) await this.sender.openTokenAccount(tx, issued.address, spl);
  }

  /** Whether a watcher follows this network: it is not paused. */
  get watched(): boolean {
    return !this.network.paused;
  }

  /**
   * What wakes the watcher over the network's `ws_urls`: `slotSubscribe`, each new slot and root (push.ts); the
   * watcher reads each notification's news itself (slot-news.ts).
   */
  push(): PushSpec {
    return { urls: this.network.wsUrls ?? [], subscribe: [{ method: 'slotSubscribe', params: [] }] };
  }

  watcher(sink: DepositSink, overrides: Partial<SolanaWatcherOptions> = {}): SolanaWatcher {
    return new SolanaWatcher({
      ...watcherBasics(this.deps, this.network, this.mode, sink),
      push: this.push(),
      rpc: this.rpc(),
      maxSlotsPerTick: this.settings.maxSlotsPerTick,
      startSlot: this.settings.startSlot,
      ...overrides,
    });
  }
}
