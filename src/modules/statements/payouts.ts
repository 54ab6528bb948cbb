/**
 * What statements need from the payouts' own records. The ledger says how much payouts took and sent (see
 * ledger/payouts.ts); these records give each sent payout's details for `payouts.items` and the operational totals the
 * reconciliation compares with the ledger. The disbursements module implements this and plugs it in with
 * `StatementService.usePayouts`; until then a merchant has no payouts.
 */
import type { Tenant } from '../../core/tenant.ts';

export interface SentPayout {
  id: string;
  sentAt: Date;
  usdCents: number | bigint;
  token: string;
  /** Smallest units of `token`. */
  amount: bigint;
  destination: string;
  txHash: string | null;
}

export interface PayoutRecords {
  /** The merchant's payouts sent in [from, to), oldest first. */
  sent(tenant: Tenant, from: Date, to: Date): Promise<SentPayout[]>;
  /**
   * US cents of the merchant's payouts released in [from, to) (taken from the balance), and of payouts that failed
   * for good in [from, to) after their release (given back).
   */
  totals(tenant: Tenant, from: Date, to: Date): Promise<{ releasedUsdCents: bigint; failedUsdCents: bigint }>;
}

export const NO_PAYOUTS: PayoutRecords = {
  sent: async () => [],
  totals: async () => ({ releasedUsdCents: 0n, failedUsdCents: 0n }),
};

/**
 * What statements need from held payments' captures (docs/capture.md): a held payment is credited capture by capture,
 * so the reconciliation counts its settled captures instead of its `payment.paid`. The capture module implements
 * this and plugs it in with `StatementService.useCaptures`; until then a merchant has no captures.
 */
export interface CaptureRecords {
  /** US cents of the merchant's captures settled in [from, to). */
  capturedCents(tenant: Tenant, from: Date, to: Date): Promise<bigint>;
}

export const NO_CAPTURES: CaptureRecords = { capturedCents: async () => 0n };
