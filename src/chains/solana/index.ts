/**
 * Solana: registers a SolanaAdapter with its hot-wallet sender for every `solana` network that has RPC URLs: in test
 * mode always, in live mode once the networks file names a `solana.treasury` (the operator has set up where swept
 * funds go; until then live Solana is unavailable, 503 `chain_paused`). Keys derive from the master seed (keys.ts);
 * refunds settle into the payments module's TransferSink.
 */
import type { Kasse } from '../../kasse.ts';
import { SolanaAdapter } from './adapter.ts';
import { SolanaKeys } from './keys.ts';
import { SolanaSender } from './sender.ts';

export { SolanaAdapter } from './adapter.ts';

const keysBySecrets = new WeakMap<object, SolanaKeys>();

/** Kasse's Solana keys for a secrets object (derived once per process). */
export function solanaKeys(secrets: { masterSeed: string }): SolanaKeys {
  let k = keysBySecrets.get(secrets);
  if (!k) {
    k = new SolanaKeys(secrets.masterSeed);
    keysBySecrets.set(secrets, k);
  }
  return k;
}

export function registerSolanaAdapters(kasse: Kasse): SolanaAdapter[] {
  const out: SolanaAdapter[] = [];
  const keys = solanaKeys(kasse.secrets);
  for (const mode of ['live', 'test'] as const) {
    for (const network of kasse.chains.networks(mode)) {
      if (network.family !== 'solana' || network.rpcUrls.length === 0) continue;
      if (mode === 'live' && !network.solana?.treasury) {
        kasse.log.debug({ chain: network.id }, 'live solana network without solana.treasury: no adapter registered');
        continue;
      }
      const adapter = new SolanaAdapter(network, mode, { db: kasse.db, clock: kasse.clock, log: kasse.log, metrics: kasse.metrics, keys });
      adapter.sender = new SolanaSender(adapter, { db: kasse.db, clock: kasse.clock, log: kasse.log, keys, sinks: { refund: kasse.payments.refunds } });
      kasse.chains.register(adapter);
      out.push(adapter);
    }
  }
  return out;
}
