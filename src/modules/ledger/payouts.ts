/**
 * Payout postings: the rule every payout (a disbursement item) follows, so that statements count payouts from the
 * ledger alone. Three facts per payout, each posted once (dedupe key `payout:<id>:<fact>`):
 *
 * - `payout_release` when its batch is released: the amount is taken from the merchant's balance into the payouts
 *   account (money on its way out);
 * - `payout_sent` when the transfer is confirmed sent: the money leaves the payouts account and the settlement asset,
 *   and the coins leave for the payee;
 * - `payout_failed` when it finally fails: the amount goes back to the merchant's balance.
 *
 * Statements: `payouts.requested_*` counts releases, `payouts.count`/`usd_cents` counts sends, and releases less
 * failures are what payouts took from the balance. Rules: docs/ledger.md.
 */
import type { Mode } from '../../core/mode.ts';
import type { Tx } from '../../db/index.ts';
import { accounts, USD, type LedgerService } from './ledger.ts';

export const PAYOUT_KINDS = { release: 'payout_release', sent: 'payout_sent', failed: 'payout_failed' } as const;

export interface PayoutPosting {
  mode: Mode;
  merchantId: string;
  /** The payout's id (`po_…`). */
  payoutId: string;
  usdCents: number | bigint;
  /** The payout coin (`base:usdc`). */
  token: string;
}

function post(
  ledger: LedgerService,
  tx: Tx,
  p: PayoutPosting,
  fact: keyof typeof PAYOUT_KINDS,
  lines: { account: string; currency: string; amount: bigint }[],
) {
  return ledger.post(tx, {
    mode: p.mode,
    merchantId: p.merchantId,
    kind: PAYOUT_KINDS[fact],
    dedupeKey: `payout:${p.payoutId}:${fact}`,
    token: p.token,
    lines,
  });
}

/** The batch was released: the payout's amount is taken from the merchant's balance. */
export function postPayoutRelease(ledger: LedgerService, tx: Tx, p: PayoutPosting): Promise<string | null> {
  const usd = BigInt(p.usdCents);
  return post(ledger, tx, p, 'release', [
    { account: accounts.merchant(p.mode, p.merchantId), currency: USD, amount: usd },
    { account: accounts.payouts(p.mode), currency: USD, amount: -usd },
  ]);
}

/** The payout's transfer was sent: `amount` of `token` left for the payee. */
export function postPayoutSent(
  ledger: LedgerService,
  tx: Tx,
  p: PayoutPosting & { amount: bigint },
): Promise<string | null> {
  const usd = BigInt(p.usdCents);
  return post(ledger, tx, p, 'sent', [
    { account: accounts.payouts(p.mode), currency: USD, amount: usd },
    { account: accounts.settlement(p.mode), currency: USD, amount: -usd },
    { account: accounts.payees(p.mode), currency: p.token, amount: p.amount },
    { account: accounts.custody(p.mode, p.merchantId), currency: p.token, amount: -p.amount },
  ]);
}

/** The payout failed for good: its amount goes back to the merchant's balance. */
export function postPayoutFailed(ledger: LedgerService, tx: Tx, p: PayoutPosting): Promise<string | null> {
  const usd = BigInt(p.usdCents);
  return post(ledger, tx, p, 'failed', [
    { account: accounts.payouts(p.mode), currency: USD, amount: usd },
    { account: accounts.merchant(p.mode, p.merchantId), currency: USD, amount: -usd },
  ]);
}
