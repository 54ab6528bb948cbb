/**
 * The EVM chain family (Ethereum, Base, Polygon, Arbitrum, … and local Hardhat nodes): its networks' `evm` settings,
 * its address format, its tables, and when Kasse opens, an `EvmAdapter` for every `evm` network of both modes that
 * has a forwarder factory configured, each with the hot-wallet sender (one hot wallet for every EVM network); the
 * workers role's loops (a watcher per followed network, one sender loop); the checkout's wallet buttons and gasless
 * relay; and the `kasse evm …` commands. Everything EVM lives in this folder. Docs: docs/evm.md.
 */
import { getAddress, isAddress, type LocalAccount } from 'viem';
import { watcherAndSenderLoops } from '../loops.ts';
import { servedNetworks } from '../served.ts';
import type { ChainFamily, FamilyContext, FamilyWorker, LoadedFamily } from '../plugin.ts';
import { EvmAdapter } from './adapter.ts';
import { eip681Uri, isValidEvmAddress } from './address.ts';
import { checkoutExtension } from './checkout.ts';
import { evmCommands } from './commands.ts';
import { evmSettings, parseEvmSettings } from './config.ts';
import { GaslessRelay } from './gasless.ts';
import { EvmHolds } from './holds.ts';
import * as m0004 from './migrations/0004_evm.ts';
import * as m0006 from './migrations/0006_evm_sender.ts';
import * as m0020 from './migrations/0020_evm_disperse.ts';
import * as x0001 from './migrations/evm_0001_x402.ts';
import * as x0002 from './migrations/evm_0002_holds.ts';
import './schema.ts';
import { EvmSender } from './sender.ts';
import { hotWalletAccount } from './wallet.ts';
import { EvmHoldX402 } from './x402-hold.ts';
import { EvmX402 } from './x402.ts';

export { EvmAdapter } from './adapter.ts';

/** How often the sender loop looks for due transfers when nothing woke it. */
const SENDER_INTERVAL_MS = 2_000;

function load(ctx: FamilyContext): LoadedFamily {
  const adapters = servedNetworks(ctx, 'evm', (network, mode) => {
    if (!evmSettings(network).forwarderFactory)
      return 'no forwarder factory configured (deploy one with `kasse evm deploy-factory` and set "evm.forwarder_factory" in the networks file)';
    // Deposits to addresses no watcher follows would never be seen.
    if (mode === 'live' && network.rpcUrls.length === 0) return 'no "rpc_urls" to watch it with';
    return null;
  }).map(({ network, mode }) => new EvmAdapter(network, mode, ctx));
  // One hot wallet for every EVM network, derived on first use (an HD derivation costs a few hundred ms).
  let account: LocalAccount | null = null;
  const senderDeps = {
    db: ctx.db,
    clock: ctx.clock,
    log: ctx.log,
    metrics: ctx.metrics,
    account: () => (account ??= hotWalletAccount(ctx.secrets)),
    sink: ctx.transfers,
  };
  for (const adapter of adapters) {
    adapter.sender = new EvmSender(adapter, senderDeps);
    const escrow = evmSettings(adapter.network).authCapture;
    if (escrow) adapter.holds = new EvmHolds(adapter, escrow);
  }
  const relay = new GaslessRelay({
    db: ctx.db,
    clock: ctx.clock,
    log: ctx.log,
    chains: ctx.chains,
    payments: ctx.payments,
  });
  const x402Deps = { db: ctx.db, clock: ctx.clock, log: ctx.log, chains: ctx.chains };
  return {
    adapters,
    workers: () => workers(ctx, adapters),
    checkout: checkoutExtension(relay, ctx),
    x402: new EvmX402(x402Deps),
    x402Hold: new EvmHoldX402(x402Deps),
  };
}

/**
 * The workers role's EVM loops: a watcher per network that is not paused and has RPC URLs (polling every
 * `poll_interval_ms` from its stored cursor), and one sender loop that drives every network's due transfers every
 * 2 seconds, or at once when a transfer was recorded in this process (leased in PostgreSQL, so several worker
 * processes share them).
 */
function workers(ctx: FamilyContext, adapters: EvmAdapter[]): FamilyWorker[] {
  return watcherAndSenderLoops('evm', adapters, ctx.deposits, SENDER_INTERVAL_MS, ctx.log);
}

const evm: ChainFamily = {
  name: 'evm',
  format: {
    isValidAddress: isValidEvmAddress,
    addressFromBytes: (bytes) => getAddress(`0x${Buffer.from(bytes.subarray(0, 20)).toString('hex')}`),
    paymentUri: eip681Uri,
  },
  networks: {
    requiresChainId: true,
    contract: {
      canonical: (value) => (isAddress(value, { strict: false }) ? getAddress(value) : null),
      name: 'an EVM address',
    },
    settings: parseEvmSettings,
  },
  tokenKinds: ['erc20'],
  // A private key of the hot-wallet account instead of the one derived from the master seed (wallet.ts).
  hotWalletKey: { description: '0x + 64 hex characters', isValid: (key) => /^0x[0-9a-fA-F]{64}$/.test(key) },
  migrations: {
    '0004_evm': m0004,
    '0006_evm_sender': m0006,
    '0020_evm_disperse': m0020,
    'evm/0001_x402': x0001,
    'evm/0002_holds': x0002,
  },
  commands: evmCommands,
  payouts: true,
  load,
};

export default evm;
