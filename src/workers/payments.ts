/**
 * Payment loops: the payments module's due work (marked deposits, expiries and coin holds, late auto-acceptance:
 * `payments.runDue`, the same pass tests run), test-mode simulated refunds settled, holds voided at their deadline
 * (`capture.runDue`, woken at once when a void past the deadline failed) and simulated hold operations settled, and
 * the price refresh, each a thin call into a service that selects its due rows from PostgreSQL.
 */
import type { Kasse } from '../kasse.ts';
import { Loop } from '../core/loop.ts';

export function paymentLoops(kasse: Kasse): Loop[] {
  const { payments, refunds, capture, prices, chains, config, log } = kasse;
  const tokens = chains.tokens();
  const holdsDue = new Loop('holds-due', 5_000, () => capture.runDue(), log);
  capture.onWork(() => holdsDue.wake());
  return [
    new Loop('payments-due', 5_000, () => payments.runDue(), log),
    new Loop('refunds-simulated', 5_000, () => refunds.settleSimulated(), log),
    holdsDue,
    new Loop('holds-simulated', 5_000, () => capture.settleSimulated(), log),
    new Loop('prices-refresh', config.prices.refreshSeconds * 1000, () => prices.refresh(tokens), log),
  ];
}
