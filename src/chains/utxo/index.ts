/**
 * The UTXO chain family: Bitcoin and Litecoin (Bitcoin Core and Litecoin Core nodes, the same RPC). Networks of
 * family `utxo` carry a `utxo` object naming the coin and network (config.ts); when Kasse opens, every such network
 * with RPC URLs (a node of the operator's) gets a `UtxoAdapter` (BIP-84 deposit addresses from the master seed,
 * BIP-21 URIs) with its sender, and the workers role runs a watcher per network and one sender loop. Everything Bitcoin lives in this folder. Docs: docs/utxo.md.
 */
import { bech32 } from '@scure/base';
import { watcherAndSenderLoops } from '../loops.ts';
import { servedNetworks } from '../served.ts';
import type { ChainFamily, FamilyContext, FamilyWorker, LoadedFamily } from '../plugin.ts';
import { UtxoAdapter } from './adapter.ts';
import { bip21Uri, isValidOnAnyNetwork, isValidUtxoAddress } from './address.ts';
import { parseUtxoSettings, utxoSettings } from './config.ts';
import * as m0024 from './migrations/0024_utxo.ts';
import * as u0001 from './migrations/0001_change_wait.ts';
import './schema.ts';
import { UtxoSender } from './sender.ts';
import { utxoCommands } from './commands.ts';

/** How often the sender loop looks for due transfers when nothing woke it. */
const SENDER_INTERVAL_MS = 5_000;

export { UtxoAdapter } from './adapter.ts';

function load(ctx: FamilyContext): LoadedFamily {
  // Served only with a node to watch it: without one, live mode is paused and test mode simulated (the simulator's
  // addresses then have the network's prefix).
  const adapters = servedNetworks(ctx, 'utxo', (network) =>
    network.rpcUrls.length === 0
      ? 'no "rpc_urls": point it at a Bitcoin Core or Litecoin Core node you run (docs/utxo.md)'
      : null,
  ).map(({ network, mode }) => new UtxoAdapter(network, mode, ctx));
  for (const adapter of adapters) {
    const { mode, network } = adapter;
    adapter.sender = new UtxoSender(adapter, {
      db: ctx.db,
      clock: ctx.clock,
      log: ctx.log,
      metrics: ctx.metrics,
      sink: ctx.transfers,
      fundedAddresses: () => ctx.payments.fundedAddresses(mode, network.id),
    });
  }
  return { adapters, workers: () => workers(ctx, adapters) };
}

/**
 * A watcher per network that is not paused and has RPC URLs, and one sender loop driving every network's due
 * transfers every 5 seconds, or at once when one was recorded in this process.
 */
function workers(ctx: FamilyContext, adapters: UtxoAdapter[]): FamilyWorker[] {
  return watcherAndSenderLoops('utxo', adapters, ctx.deposits, SENDER_INTERVAL_MS, ctx.log);
}

const utxo: ChainFamily = {
  name: 'utxo',
  format: {
    isValidAddress: (address, network) =>
      network ? isValidUtxoAddress(address, utxoSettings(network).params) : isValidOnAnyNetwork(address),
    addressFromBytes: (bytes, network) => {
      const hrp = network ? utxoSettings(network).params.address.bech32 : 'bc';
      return bech32.encode(hrp, [0, ...bech32.toWords(bytes.subarray(0, 20))]);
    },
    paymentUri: (network, token, address, amount) =>
      bip21Uri(utxoSettings(network).params, address, amount, token.decimals),
  },
  networks: { settings: parseUtxoSettings },
  migrations: { '0024_utxo': m0024, 'utxo/0001_change_wait': u0001 },
  commands: utxoCommands,
  load,
};

export default utxo;
