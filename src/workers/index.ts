/**
 * The workers role: thin loops that select due rows and call module services. Every loop reads its work from
 * PostgreSQL, so a restart (or another worker process) picks up exactly where this one stopped.
 */
import type { Kasse } from '../kasse.ts';
import { solanaLoops } from '../chains/solana/workers.ts';
import { evmSenderLoop } from './evm-sender.ts';
import { Loop } from './loop.ts';
import { paymentLoops } from './payments.ts';
import { webhookDeliveryLoop } from './webhooks.ts';

export interface Workers {
  loops: Loop[];
  stop(): Promise<void>;
}

export function startWorkers(kasse: Kasse): Workers {
  const loops = [new Loop('ratelimit-prune', 60_000, () => kasse.rateLimiter.prune(), kasse.log)];
  loops.push(webhookDeliveryLoop(kasse));
  loops.push(...paymentLoops(kasse));
  loops.push(evmSenderLoop(kasse));
  loops.push(...solanaLoops(kasse));
  for (const l of loops) l.start();
  // Chain watchers of registered adapters (EVM: networks with RPC URLs that are not paused).
  const watchers = kasse.chains.startWatchers(kasse.payments.deposits);
  return {
    loops,
    stop: async () => {
      await watchers.stop();
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
}
