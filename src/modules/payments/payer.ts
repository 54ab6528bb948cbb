/**
 * Which coin choice the payer sees of a payment, and how far its confirmations are: one rule for every payer view
 * (hosted checkout and modal, link pages, the POS sale screen, the live status feed). The payer follows the money as
 * the engine does: the paid choice; else the one holding money of its own coin, by the state machine's own `holder`
 * rule; else, while no choice holds any, the last one chosen. Pure: reads the Payment as the API shows it.
 */
import type { Attempt, Payment } from './schema.ts';
import { counts, holder } from './state.ts';

/** The coin choice the payer is shown; undefined before any coin was chosen. */
export function shownAttempt(p: Payment): Attempt | undefined {
  const paid = p.attempts.find((a) => a.id === p.paid_attempt_id);
  if (paid) return paid;
  const held = holder(
    p.attempts.map((a) => ({
      attempt: a,
      token: a.token,
      payAmount: BigInt(a.pay_amount),
      deposits: a.deposits.map((d) => ({ token: d.token, amount: BigInt(d.amount), status: d.status })),
    })),
  );
  return held?.attempt ?? p.attempts[p.attempts.length - 1];
}

/**
 * Confirmations of the choice's money so far (the least-confirmed of its own coin's deposits still on chain, at most
 * the number required) and the number required; null when the choice has no such deposit or no count to reach.
 */
export function confirmationProgress(a: Attempt | undefined): { have: number; need: number } | null {
  if (!a || a.confirmations_required === null) return null;
  const need = Number(a.confirmations_required);
  const counted = a.deposits.filter((d) => counts(a, d));
  if (!Number.isSafeInteger(need) || counted.length === 0) return null;
  return { have: counted.reduce((least, d) => Math.min(least, d.confirmations), need), need };
}
