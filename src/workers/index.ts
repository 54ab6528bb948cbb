/**
 * The workers role: thin loops that select due rows and call module services. Every loop reads its work from
 * PostgreSQL, so a restart (or another worker process) picks up exactly where this one stopped.
 */
import type { FamilyWorker } from '../chains/plugin.ts';
import { Loop } from '../core/loop.ts';
import type { Kasse } from '../kasse.ts';
import { paymentLoops } from './payments.ts';
import { webhookDeliveryLoop } from './webhooks.ts';
import { emailLoop } from './email.ts';
import { subscriptionLoop } from './subscriptions.ts';

export interface Workers {
  loops: Loop[];
  stop(): Promise<void>;
}

export function startWorkers(kasse: Kasse): Workers {
  const loops = [new Loop('ratelimit-prune', 60_000, () => kasse.rateLimiter.prune(), kasse.log)];
  loops.push(webhookDeliveryLoop(kasse));
  loops.push(...paymentLoops(kasse));
  loops.push(emailLoop(kasse));
  // Monthly statements by email: due schedule rows, checked every minute (the mail itself goes through the outbox).
  loops.push(new Loop('statement-emails', 60_000, () => kasse.statementEmails.runOnce(), kasse.log));
  loops.push(subscriptionLoop(kasse));
  loops.push(new Loop('disbursements-due', 5_000, () => kasse.disbursements.runDue(), kasse.log));
  // x402 settlements a crash or an expired wait left pending: submitted again and recorded when they land.
  loops.push(new Loop('x402-resume', 5_000, () => kasse.x402.resume(), kasse.log));
  loops.push(new Loop('signin-throttle-prune', 15 * 60_000, () => kasse.users.throttle.prune(), kasse.log));
  for (const l of loops) l.start();
  // The chain families' loops: watchers of the networks they follow, senders of outgoing transfers.
  const chainWorkers: FamilyWorker[] = kasse.families.flatMap((f) => f.loaded.workers?.() ?? []);
  for (const w of chainWorkers) w.start();
  return {
    loops,
    stop: async () => {
      await Promise.all(chainWorkers.map((w) => w.stop()));
      await Promise.all(loops.map((l) => l.stop()));
    },
  };
}
