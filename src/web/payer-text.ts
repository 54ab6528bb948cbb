/**
 * What payers read when something they did on a page cannot go through. The API's messages are written for the
 * merchant's developers (`amount_usd_cents must be …`) and may name what only the operator can fix; pages show
 * payers these instead. Every error a payer page shows goes through `payerMessage`.
 */
import type { ApiError } from '../core/errors.ts';
import { usd } from './page.ts';

/** Bounds of an amount the payer types, as the merchant set them (null = none set). */
export interface AmountBounds {
  min: number | null;
  max: number | null;
  /** The smallest amount any payment may have, in cents. */
  floor: number;
}

/** The hint under an amount field: only what the merchant set, or the smallest amount when nothing was set. */
export function amountHint(b: AmountBounds): string {
  if (b.min !== null && b.max !== null) return `From ${usd(b.min)} to ${usd(b.max)}.`;
  if (b.min !== null) return `${usd(b.min)} or more.`;
  if (b.max !== null) return `Up to ${usd(b.max)}.`;
  return `Any amount of ${usd(b.floor)} or more.`;
}

/** What to ask for when the amount is out of bounds. */
function amountRequest(b: AmountBounds): string {
  const min = b.min ?? b.floor;
  return b.max !== null
    ? `Enter an amount from ${usd(min)} to ${usd(b.max)}.`
    : `Enter an amount of ${usd(min)} or more.`;
}

/** The payer's version of an error raised while starting a payment or choosing a coin. */
export function payerMessage(e: ApiError, bounds?: AmountBounds): string {
  switch (e.param) {
    case 'amount':
      // Raised by the page itself for what the payer typed; already written for them.
      return e.message;
    case 'amount_usd_cents':
      return bounds ? amountRequest(bounds) : 'Choose one of the amounts shown.';
    case 'email':
      return 'Enter your email address, like name@example.com.';
    case 'Origin':
      return 'This form was sent from another site. Please open the payment page again.';
  }
  switch (e.code) {
    case 'rate_limited':
      return 'Too many payments were started from this device. Please wait a minute and try again.';
    case 'chain_paused':
      return 'That network cannot take payments right now. Please choose another coin.';
    case 'price_unavailable':
      return 'The price of that coin cannot be fetched right now. Please choose another coin or try again in a few minutes.';
    case 'too_many_attempts':
      return 'This payment has used all its coin choices. Please ask the merchant for a new payment.';
    case 'amount_too_small':
      return `${e.message} Please choose another coin.`;
    case 'invalid_state':
      // Written for payers where raised (a link turned off or used up, a payment already final).
      return e.message;
    case 'not_found':
      return 'This payment page no longer exists. Please check the link you were given.';
    default:
      return 'This did not go through. Please check what you entered and try again.';
  }
}
