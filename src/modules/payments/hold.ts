/**
 * A manual payment's hold terms, fixed when the payment is created (docs/capture.md): captures until `captureBefore`
 * (asked for, or HOLD_DEFAULT_DAYS after creation), refunds through the escrow until `refundBefore`
 * (HOLD_REFUND_DAYS later). The payer's authorization names both, so they never change afterwards.
 */
import { invalid } from '../../core/errors.ts';
import { HOLD_DEFAULT_DAYS, HOLD_MAX_DAYS, HOLD_REFUND_DAYS, PAYMENT_LIFETIME_MS } from './model.ts';

const DAY_MS = 86_400_000;

export interface HoldTerms {
  captureBefore: Date;
  refundBefore: Date;
}

/**
 * The terms of a payment created at `now` (null for an automatic one). `captureBefore` must be later than the
 * payment's 24 hours (the payer may authorize until then) and at most HOLD_MAX_DAYS ahead; 400 naming the field
 * otherwise, and for a deadline on an automatic payment.
 */
export function holdTerms(manual: boolean, captureBefore: string | undefined, now: Date): HoldTerms | null {
  if (!manual) {
    if (captureBefore !== undefined)
      throw invalid('capture_before is for payments with capture_method manual', 'capture_before');
    return null;
  }
  let before = new Date(now.getTime() + HOLD_DEFAULT_DAYS * DAY_MS);
  if (captureBefore !== undefined) {
    const at = Date.parse(captureBefore);
    if (Number.isNaN(at)) throw invalid('capture_before must be a date-time (ISO 8601)', 'capture_before');
    if (at <= now.getTime() + PAYMENT_LIFETIME_MS)
      throw invalid(
        "capture_before must be later than the payment's 24 hours, in which the payer may authorize it",
        'capture_before',
      );
    if (at > now.getTime() + HOLD_MAX_DAYS * DAY_MS)
      throw invalid(`capture_before must be at most ${HOLD_MAX_DAYS} days ahead`, 'capture_before');
    // Whole seconds: the escrow counts time in seconds.
    before = new Date(Math.floor(at / 1000) * 1000);
  } else {
    before = new Date(Math.floor(before.getTime() / 1000) * 1000);
  }
  return { captureBefore: before, refundBefore: new Date(before.getTime() + HOLD_REFUND_DAYS * DAY_MS) };
}
