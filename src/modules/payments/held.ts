/**
 * What a payment holds uncredited: the confirmed coins of its deposits less what its standing credit took into
 * custody and what sent refunds returned, valued at the rate of their attempt (a wrong asset at its worth when
 * seen). Dust of another coin is not money and is not held. The ledger posts the difference (ledger/holds.ts).
 */
import type { ChainRegistry } from '../../chains/registry.ts';
import { ImpossibleState } from '../../core/errors.ts';
import { unitsToCents } from '../../core/money.ts';
import type { Tx } from '../../db/index.ts';
import type { HeldLot, HeldTarget } from '../ledger/index.ts';
import type { Loaded } from './store/payments.ts';

/** A payment's coins that sent refunds returned, by attempt (amounts in smallest units). */
export type Returned = Array<{ attempt_id: string; token: string; amount: string }>;
/** What sent refunds returned of a payment, read in the payment change's transaction (the refunds module answers). */
export type ReturnedCoins = (tx: Tx, paymentId: string) => Promise<Returned>;

const settled = (status: string) => status === 'confirmed' || status === 'final';

/** Held lots of the payment `l` (as persisted in `tx`), given whether its last credit stands. */
export async function heldTarget(
  tx: Tx,
  chains: ChainRegistry,
  l: Loaded,
  credited: boolean,
  sentRefunds: ReturnedCoins,
): Promise<HeldTarget> {
  const lots: HeldLot[] = [];
  const target = { mode: l.row.mode, merchantId: l.row.merchant_id, paymentId: l.row.id, lots };
  if (!l.deposits.some((d) => settled(d.status))) return target;
  const refunds = await sentRefunds(tx, l.row.id);
  for (const a of l.attempts) {
    const returned = (token: string) =>
      refunds.filter((r) => r.attempt_id === a.id && r.token === token).reduce((s, r) => s + BigInt(r.amount), 0n);
    const deposits = l.deposits.filter((d) => d.attempt_id === a.id && settled(d.status));
    // The attempt's own coin: valued at the attempt's rate.
    let own = deposits.filter((d) => d.token === a.token).reduce((s, d) => s + BigInt(d.amount), 0n);
    const ids = { payment: l.row.id, attempt: a.id };
    if (credited && a.id === l.row.paid_attempt_id) {
      if (l.row.paid_amount === null)
        throw new ImpossibleState('a standing credit has no paid amount to take out of what is held', ids);
      own -= BigInt(l.row.paid_amount);
    }
    own -= returned(a.token);
    if (own > 0n)
      lots.push({
        token: a.token,
        amount: own,
        valueCents: unitsToCents(own, a.rate, chains.countedToken(a.mode, a.token, ids).decimals),
      });
    // Other coins worth at least their minimum: valued at what they were worth when seen, pro rata after a refund.
    for (const token of new Set(deposits.filter((d) => d.token !== a.token && d.at_least_min).map((d) => d.token))) {
      const wrong = deposits.filter((d) => d.token === token && d.at_least_min);
      const total = wrong.reduce((s, d) => s + BigInt(d.amount), 0n);
      const value = wrong.reduce((s, d) => s + (d.value_cents ?? 0n), 0n);
      const left = total - returned(token);
      if (left > 0n) lots.push({ token, amount: left, valueCents: (value * left) / total });
    }
  }
  return target;
}
