/**
 * Webhook delivery loop: pumps the delivery worker when woken — an event published in this process (after
 * commit), `NOTIFY kasse_webhooks` from any process, results recorded (slots free, followers due) — and once a
 * second for retries that have fallen due.
 */
import type { Kasse } from '../kasse.ts';
import { Loop } from '../core/loop.ts';

export function webhookDeliveryLoop(kasse: Kasse): Loop {
  const loop = new Loop('webhook-delivery', 1_000, () => kasse.webhooks.delivery.pump(), kasse.log);
  kasse.webhooks.onWork(() => loop.wake());
  return loop;
}
