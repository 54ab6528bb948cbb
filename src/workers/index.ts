/**
 * The workers role: thin loops that select due rows and call module services. Every loop reads its work from
 * PostgreSQL, so a restart (or another worker process) picks up exactly where this one stopped.
 */
import type { Kasse } from '../kasse.ts';
import { Loop } from './loop.ts';

export interface Workers {
  loops: Loop[];
  stop(): Promise<void>;
}

export function startWorkers(kasse: Kasse): Workers {
  const loops = [new Loop('ratelimit-prune', 60_000, () => kasse.rateLimiter.prune(), kasse.log)];
  for (const l of loops) l.start();
  return { loops, stop: async () => void (await Promise.all(loops.map((l) => l.stop()))) };
}
