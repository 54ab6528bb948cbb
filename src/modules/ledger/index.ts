/**
 * The ledger module's front door: double-entry postings balanced per currency (ledger.ts), held money in suspense
 * (holds.ts), the payout posting rule (payouts.ts), and the reads statements make — balances at past instants
 * (checkpoints.ts) and a merchant's postings in a period (months.ts).
 */
export { balanceBefore } from './checkpoints.ts';
export { syncHeld, type HeldLot, type HeldTarget } from './holds.ts';
export {
  accounts,
  CREDIT_KINDS,
  LedgerService,
  REVERSAL_KINDS,
  USD,
  type PaymentCreditTotals,
} from './ledger.ts';
export { firstPosting, heldAt, postingGroups, type PostingGroup } from './months.ts';
export { PAYOUT_KINDS, postPayoutFailed, postPayoutRelease, postPayoutSent } from './payouts.ts';
