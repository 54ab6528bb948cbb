/**
 * The payment domain as plain data: what the state machine reads and returns. No I/O, no HTTP types.
 * Amounts are bigint smallest units; cents are integers.
 */

export const PAYMENT_STATUSES = [
  'waiting',
  'detected',
  'confirming',
  'authorized',
  'paid',
  'underpaid',
  'expired',
  'late',
  'refunded',
  'cancelled',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export type AttemptStatus = Exclude<PaymentStatus, 'cancelled'>;
export const ATTEMPT_STATUSES = PAYMENT_STATUSES.filter((s) => s !== 'cancelled') as AttemptStatus[];
export const DEPOSIT_STATUSES = ['pending', 'confirmed', 'final', 'orphaned'] as const;
export type DepositStatus = (typeof DEPOSIT_STATUSES)[number];

export const EVENT_TYPES = [
  'payment.detected',
  'payment.confirming',
  'payment.paid',
  'payment.underpaid',
  'payment.overpaid',
  'payment.expired',
  'payment.late',
  'payment.wrong_asset',
  'payment.reorged',
  'payment.refunded',
  'payment.cancelled',
  'payment.authorized',
  'payment.captured',
] as const;
export type PaymentEventType = (typeof EVENT_TYPES)[number];

/**
 * `automatic` (the spec's payments: money sent is money paid) or `manual`: the payer authorizes a hold the merchant
 * captures later, in parts, or voids (docs/capture.md). `authorized` and the hold's events exist only for `manual`.
 */
export const CAPTURE_METHODS = ['automatic', 'manual'] as const;
export type CaptureMethod = (typeof CAPTURE_METHODS)[number];

export const SIMULATE_OUTCOMES = ['paid', 'underpaid', 'expired', 'late', 'wrong_asset', 'authorized'] as const;
export type SimulateOutcome = (typeof SIMULATE_OUTCOMES)[number];

/** NOTE: spec limits. */
export const COIN_HOLD_MS = 10 * 60 * 1000;
export const PAYMENT_LIFETIME_MS = 24 * 60 * 60 * 1000;
export const LATE_ACCEPT_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Late payments are auto-accepted when the coin's price moved by at most this many basis points (3 %). */
export const LATE_ACCEPT_MAX_MOVE_BPS = 300;
export const MAX_ATTEMPTS = 3;
/**
 * NOTE: a manual payment's hold (docs/capture.md). Captures until `capture_before`: 7 days after creation unless the
 * merchant asks for another time, at most 30 days ahead (a card authorization's usual span; the escrow itself has no
 * limit). Refunds go back through the escrow for 30 days after that (`refund_before`), later from the hot wallet.
 */
export const HOLD_DEFAULT_DAYS = 7;
export const HOLD_MAX_DAYS = 30;
export const HOLD_REFUND_DAYS = 30;

export interface DepositState {
  id: string;
  token: string;
  amount: bigint;
  status: DepositStatus;
  confirmations: number;
  /** When Kasse first saw the transfer (mempool or block). */
  seenAt: Date;
  /** US cents the deposit is worth at the time it was seen (used for the wrong-asset minimum). */
  valueCents: bigint | null;
  /** Whether the deposit's token is at least that coin's minimum amount. */
  atLeastTokenMinimum: boolean;
}

export interface AttemptState {
  id: string;
  token: string;
  status: AttemptStatus;
  payAmount: bigint;
  /** USD per whole coin when the attempt was issued. */
  rate: string;
  /** End of the 10-minute coin hold. */
  expiresAt: Date;
  overpaid: boolean;
  wrongAsset: boolean;
  deposits: DepositState[];
}

export interface PaymentState {
  id: string;
  status: PaymentStatus;
  createdAt: Date;
  /** End of the 24-hour payment lifetime. */
  expiresAt: Date;
  paidAt: Date | null;
  paidAttemptId: string | null;
  /**
   * Confirmed amount of the paid attempt when the payment was last marked paid (set by the state machine, null when
   * not paid). A reorg is a drop below min(payAmount, paidAmount), so an accepted short payment is measured against
   * what it was accepted with; absent is read as payAmount. Persist it with the payment.
   */
  paidAmount?: bigint | null;
  /** Paid with a confirmed amount short of the pay amount within the merchant's tolerance (not by `accept`). */
  paidWithinTolerance?: boolean;
  /** Absent: `automatic`. A `manual` payment's money arrives only by captures of its hold (docs/capture.md). */
  captureMethod?: CaptureMethod;
  /**
   * A manual payment's hold was released (voided, voided at its deadline, or reclaimed by the payer): nothing more can
   * be captured. Captures are the deposits of the held coin choice.
   */
  holdReleased?: boolean;
  attempts: AttemptState[];
}
