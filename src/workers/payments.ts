/**
 * Payment loops: expiries and coin holds, late auto-acceptance, test-mode simulated refunds and the price refresh,
 * each a thin call into a service that selects its due rows from PostgreSQL.
 */
import type { Kasse } from '../kasse.ts';
import { Loop } from '../core/loop.ts';

export function paymentLoops(kasse: Kasse): Loop[] {
  const { payments, prices, chains, config, log } = kasse;
  const tokens = chains.tokens();
  return [
    new Loop('payments-due', 5_000, () => payments.tickDue(), log),
    new Loop('payments-late', 30_000, () => payments.tickLate(), log),
    new Loop('refunds-simulated', 5_000, () => payments.refunds.settleSimulated(), log),
    new Loop('prices-refresh', config.prices.refreshSeconds * 1000, () => prices.refresh(tokens), log),
  ];
}
