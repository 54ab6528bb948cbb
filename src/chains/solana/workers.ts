/**
 * Solana worker loops: the hot-wallet sender of every Solana network (every 2 seconds, or at once when a transfer
 * was recorded in this process; transfers are leased in PostgreSQL, so several worker processes share them), and
 * the sweep of networks whose operator set `solana.sweep_interval_s`.
 */
import type { Kasse } from '../../kasse.ts';
import { Loop } from '../../workers/loop.ts';
import { SolanaAdapter } from './adapter.ts';
import { recordSweeps } from './sweep.ts';

export function solanaAdapters(kasse: Kasse): SolanaAdapter[] {
  const out: SolanaAdapter[] = [];
  for (const mode of ['live', 'test'] as const) {
    for (const network of kasse.chains.networks(mode)) {
      if (network.family !== 'solana' || !kasse.chains.hasAdapter(mode, network.id)) continue;
      const a = kasse.chains.adapter(mode, network.id);
      if (a instanceof SolanaAdapter) out.push(a);
    }
  }
  return out;
}

export function solanaLoops(kasse: Kasse): Loop[] {
  const adapters = solanaAdapters(kasse);
  if (adapters.length === 0) return [];
  const sender = new Loop(
    'solana-sender',
    2_000,
    async () => {
      for (const a of adapters) {
        try {
          await a.sender?.runDue();
        } catch (err) {
          kasse.log.error({ err, chain: a.network.id, mode: a.mode }, 'solana sender pass failed');
        }
      }
    },
    kasse.log,
  );
  for (const a of adapters) a.sender?.onWork(() => sender.wake());
  const loops = [sender];
  for (const a of adapters) {
    if (a.settings.sweepIntervalSeconds <= 0 || !a.settings.treasury) continue;
    loops.push(new Loop(`solana-sweep:${a.mode}:${a.network.id}`, a.settings.sweepIntervalSeconds * 1000, () => recordSweeps(a), kasse.log));
  }
  return loops;
}
