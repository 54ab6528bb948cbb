/**
 * Grants and charges on the test-mode simulator (`POST /test/subscriptions/{id}/simulate`): nothing touches a
 * chain. A simulated grant is active as soon as it is made; its wallet is funded until `insufficient_funds` empties
 * it (and `grant` on the active grant funds it again), so the next charge fails for lack of funds or goes through at
 * once with a `0xsim…` hash derived from the charge's id. Everything after that — the period's payment paid, the
 * ledger, the webhooks, the mail, retries and the past-due rules — is the real path.
 */
import { createHash } from 'node:crypto';
import { SIMULATED_TX_PREFIX } from '../../chains/types.ts';
import type { ChargeCheck, ChargeState, StoredGrant } from '../../chains/charges.ts';

/** A simulated charge's transaction hash: the same for the same charge, every time. */
export function simulatedChargeHash(chargeId: string): string {
  return SIMULATED_TX_PREFIX + createHash('sha256').update(`charge|${chargeId}`).digest('hex').slice(0, 61);
}

/** Whether a simulated grant's charge would go through now. */
export function simulatedCheck(grant: StoredGrant & { funded: boolean }, amount: bigint): ChargeCheck {
  if (amount > grant.amountPerPeriod) throw new Error(`charge of ${amount} above the grant ${grant.key}'s amount`);
  if (!grant.funded)
    return { ok: false, reason: 'insufficient_funds', message: 'The simulated wallet holds less than the amount.' };
  return { ok: true };
}

/** A simulated charge lands the moment it is submitted. */
export function simulatedState(grant: StoredGrant, chargeId: string): ChargeState {
  return {
    status: 'succeeded',
    transaction: simulatedChargeHash(chargeId),
    blockNumber: null,
    blockHash: null,
    index: 0,
    from: grant.payer,
  };
}
