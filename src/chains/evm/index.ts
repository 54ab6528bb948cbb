/**
 * EVM chains: registers an EvmAdapter for every `evm` network of both modes that has a forwarder factory configured.
 * Called once when Kasse opens; the workers role then starts the adapters' watchers through the registry.
 */
import type { Kasse } from '../../kasse.ts';
import { EvmAdapter } from './adapter.ts';
import { attachEvmSenders } from './sender.ts';

export { EvmAdapter } from './adapter.ts';

/** Registers the EVM adapters on `kasse.chains`; returns them. */
export function registerEvmAdapters(kasse: Kasse): EvmAdapter[] {
  const out: EvmAdapter[] = [];
  for (const mode of ['live', 'test'] as const) {
    for (const network of kasse.chains.networks(mode)) {
      if (network.family !== 'evm') continue;
      if (!network.evm?.forwarderFactory) {
        kasse.chains.explainMissing(mode, network.id, 'no forwarder factory configured (deploy one with `kasse evm deploy-factory` and set "evm.forwarder_factory" in the networks file)');
        continue;
      }
      if (mode === 'live' && network.rpcUrls.length === 0) {
        // Deposits to addresses no watcher follows would never be seen.
        kasse.chains.explainMissing(mode, network.id, 'no "rpc_urls" to watch it with');
        continue;
      }
      const adapter = new EvmAdapter(network, mode, { db: kasse.db, log: kasse.log, metrics: kasse.metrics, secrets: kasse.secrets });
      kasse.chains.register(adapter);
      out.push(adapter);
    }
  }
  attachEvmSenders(kasse, out);
  return out;
}
