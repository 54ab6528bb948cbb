/**
 * Email loop: sends (or keeps) due mail when woken — mail enqueued in this process (after commit) or
 * `NOTIFY kasse_email` from any process — and every 5 seconds for retries that have fallen due.
 */
import type { Kasse } from '../kasse.ts';
import { Loop } from '../core/loop.ts';

export function emailLoop(kasse: Kasse): Loop {
  const loop = new Loop('email', 5_000, () => kasse.email.runOnce(), kasse.log);
  kasse.email.onWork(() => loop.wake());
  return loop;
}
