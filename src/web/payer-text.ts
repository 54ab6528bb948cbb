/**
 * What payers read when something they did on a page cannot go through. The API's messages are written for the
 * merchant's developers (`amount_usd_cents must be …`), stay English, and may name what only the operator can fix;
 * pages show payers these instead, in the page's language. Every error a payer page shows goes through
 * `payerMessage`.
 */
import type { ApiError } from '../core/errors.ts';
import { type Locale, money, t } from '../core/i18n/index.ts';

/** Bounds of an amount the payer types, as the merchant set them (null = none set). */
export interface AmountBounds {
  min: number | null;
  max: number | null;
  /** The smallest amount any payment may have, in cents. */
  floor: number;
}

/** The messages a link page raises (param `amount`) for what the payer typed; shown translated. */
export const AMOUNT_MISSING = 'Enter an amount.';
export const AMOUNT_FORMAT = 'Enter an amount in dollars, like 12.50.';

/** The hint under an amount field: only what the merchant set, or the smallest amount when nothing was set. */
export function amountHint(l: Locale, b: AmountBounds): string {
  if (b.min !== null && b.max !== null) return t(l, 'amount.from_to', { min: money(l, b.min), max: money(l, b.max) });
  if (b.min !== null) return t(l, 'amount.min', { min: money(l, b.min) });
  if (b.max !== null) return t(l, 'amount.max', { max: money(l, b.max) });
  return t(l, 'amount.any', { min: money(l, b.floor) });
}

/** What to ask for when the amount is out of bounds. */
function amountRequest(l: Locale, b: AmountBounds): string {
  const min = money(l, b.min ?? b.floor);
  return b.max !== null
    ? t(l, 'amount.enter_from_to', { min, max: money(l, b.max) })
    : t(l, 'amount.enter_min', { min });
}

/**
 * The payer's version of an error raised while starting a payment (a link page: `bounds` given) or choosing a coin
 * (the checkout).
 */
export function payerMessage(l: Locale, e: ApiError, bounds?: AmountBounds): string {
  switch (e.param) {
    case 'amount':
      return e.message === AMOUNT_MISSING ? t(l, 'amount.missing') : t(l, 'amount.format', { example: '12.50' });
    case 'amount_usd_cents':
      return bounds ? amountRequest(l, bounds) : t(l, 'err.choose_preset');
    case 'email':
      return t(l, 'err.email');
    case 'Origin':
      return t(l, 'err.origin');
  }
  switch (e.code) {
    case 'rate_limited':
      return t(l, 'err.rate_limited');
    case 'chain_paused':
      return t(l, 'err.chain_paused');
    case 'price_unavailable':
      return t(l, 'err.price_unavailable');
    case 'too_many_attempts':
      return t(l, 'err.too_many_attempts');
    case 'amount_too_small':
      return t(l, 'err.amount_too_small');
    case 'invalid_state':
      // A link turned off or used up meanwhile (link pages), or a payment already final (the checkout).
      return t(l, bounds ? 'link.unavailable' : 'err.final');
    case 'not_found':
      return t(l, 'err.not_found');
    default:
      return t(l, 'err.other');
  }
}
