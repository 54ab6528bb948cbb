/**
 * Subscription loop: the scheduler's due-work pass (`subscriptions.runDue`, the same pass tests run) every 5 seconds,
 * or at once when a payment it waits for changed in this process. Due times live in PostgreSQL, so any number of
 * worker processes share the work.
 */
import type { Kasse } from '../kasse.ts';
import { Loop } from '../core/loop.ts';

export function subscriptionLoop(kasse: Kasse): Loop {
  const loop = new Loop('subscriptions-due', 5_000, () => kasse.subscriptions.runDue(), kasse.log);
  kasse.subscriptions.onWork(() => loop.wake());
  return loop;
}
