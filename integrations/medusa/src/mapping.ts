/**
 * What the provider decides without Medusa or the network: the options it accepts, Medusa's decimal amounts as
 * Kasse's integer cents and back, Kasse's payment statuses and webhook events as Medusa's session statuses and
 * webhook actions, and which address a refund can go back to. Kept free of imports so every rule here is checked
 * by pure tests.
 */

/** The provider's options, as written in `medusa-config.ts`. */
export interface KasseProviderOptions {
  /** A Kasse API key: `kasse_test_…` against the test API, `kasse_live_…` against the live API. */
  apiKey: string;
  /** Kasse's API base URL including `/v1`, e.g. `https://api.pay.example.com/v1`. */
  baseUrl: string;
  /** The account's webhook secret (`whsec_…`), which Kasse signs every webhook with. */
  webhookSecret: string;
  /** `automatic` (default): a payment is captured when paid. `manual`: it is authorized, captured from Medusa. */
  capture?: 'automatic' | 'manual';
}

const OPTION_NAMES = ['apiKey', 'baseUrl', 'webhookSecret', 'capture'] as const;

/** The first problem with `options`, in words that name the option, or null when they are usable. */
export function optionsProblem(options: unknown): string | null {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    return 'options are missing: give { apiKey, baseUrl, webhookSecret } in medusa-config.ts';
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o))
    if (!(OPTION_NAMES as readonly string[]).includes(key))
      return `unknown option ${key} (the options are ${OPTION_NAMES.join(', ')})`;
  for (const key of ['apiKey', 'baseUrl', 'webhookSecret'] as const)
    if (o[key] === undefined || o[key] === null || o[key] === '') return `option ${key} is missing`;
  if (typeof o.apiKey !== 'string' || !/^kasse_(test|live)_\S+$/.test(o.apiKey))
    return 'option apiKey is not a Kasse API key (kasse_test_… or kasse_live_…)';
  if (typeof o.webhookSecret !== 'string' || !/^whsec_\S+$/.test(o.webhookSecret))
    return "option webhookSecret is not a Kasse webhook secret (whsec_…, shown on the dashboard's Developers page)";
  let url: URL;
  try {
    url = new URL(String(o.baseUrl));
  } catch {
    return `option baseUrl is not a URL: ${String(o.baseUrl)}`;
  }
  if (typeof o.baseUrl !== 'string' || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    return 'option baseUrl must be an http(s) URL';
  if (!/\/v1\/?$/.test(url.pathname))
    return `option baseUrl must be Kasse's API base URL ending in /v1 (e.g. https://api.pay.example.com/v1), not ${o.baseUrl}`;
  if (o.capture !== undefined && o.capture !== 'automatic' && o.capture !== 'manual')
    return `option capture must be "automatic" or "manual", not ${JSON.stringify(o.capture)}`;
  return null;
}

/** Kasse's largest `price_amount` (US cents). */
export const MAX_CENTS = 100_000_000;

/**
 * A decimal amount in US dollars (`"25.5"`, `"10.825"`) as integer cents, exactly: no floating point. Fractions of a
 * cent (tax computed on a total) round half up, as Medusa rounds to the currency's precision.
 */
export function toCents(decimal: string): number {
  const m = /^(\d+)(?:\.(\d*))?$/.exec(decimal.trim());
  if (!m) throw new RangeError(`${decimal} is not a positive decimal amount`);
  const frac = (m[2] ?? '').padEnd(3, '0');
  let cents = BigInt(m[1]!) * 100n + BigInt(frac.slice(0, 2));
  if (frac[2]! >= '5') cents += 1n;
  if (cents < 1n) throw new RangeError(`${decimal} USD is less than a cent`);
  if (cents > BigInt(MAX_CENTS))
    throw new RangeError(`${decimal} USD is more than Kasse's largest payment, 1,000,000.00 USD`);
  return Number(cents);
}

/** Integer cents as a decimal amount in US dollars with two places (`2550` → `"25.50"`). */
export function fromCents(cents: number): string {
  if (!Number.isSafeInteger(cents) || cents < 0) throw new RangeError(`${cents} is not a whole number of cents`);
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** Medusa's payment session statuses. */
export type SessionStatus = 'authorized' | 'captured' | 'pending' | 'requires_more' | 'error' | 'canceled';

/**
 * A Kasse payment as a Medusa session status. `paid` is captured; a manual payment is captured once all of its hold
 * is (until then Medusa's captures record each part, below). `refunded` is canceled: the money went back, so a cart
 * whose payment was refunded never becomes a paid order. `late` (money after the coin's hold, which Kasse accepts or
 * the merchant decides) and a status this version does not know are not money yet: pending.
 */
export function sessionStatus(payment: Pick<PaymentFacts, 'status' | 'authorization'>): SessionStatus {
  switch (payment.status) {
    case 'paid': {
      const hold = payment.authorization;
      return hold && hold.captured_usd_cents < hold.amount_usd_cents ? 'authorized' : 'captured';
    }
    case 'authorized':
      return 'authorized';
    case 'underpaid':
      return 'requires_more';
    case 'expired':
    case 'cancelled':
    case 'refunded':
      return 'canceled';
    default:
      return 'pending';
  }
}

/** Medusa's webhook actions. */
export type WebhookAction =
  | 'authorized'
  | 'captured'
  | 'failed'
  | 'pending'
  | 'requires_more'
  | 'canceled'
  | 'not_supported';

/** The events that tell Medusa something; `payment.refunded` is not one (Medusa has no webhook action for a refund). */
const REPORTED_EVENTS = new Set([
  'payment.paid',
  'payment.captured',
  'payment.authorized',
  'payment.cancelled',
  'payment.expired',
  'payment.underpaid',
  'payment.detected',
  'payment.confirming',
  'payment.late',
  'payment.reorged',
]);

/**
 * What Medusa is told of a Kasse event: the action and US cents come from the payment as Kasse answers for it now
 * (`payment`, read by the provider), the event only says that something changed. An automatic payment that is paid
 * is captured for its price. A manual payment's captures reach Medusa only through `payment.captured`, for what Kasse
 * has captured beyond what Medusa recorded (`medusaCaptured`; unknown outside Medusa: none): each Kasse capture is
 * recorded once, and Medusa's own captures, which Kasse made for it, are not recorded again.
 */
export function webhookReport(
  eventType: string,
  payment: PaymentFacts,
  medusaCaptured: number | null,
): { action: WebhookAction; cents: number } {
  const none = { action: 'not_supported' as const, cents: 0 };
  if (!REPORTED_EVENTS.has(eventType)) return none;
  const hold = payment.authorization;
  if (hold) {
    if (eventType === 'payment.captured') {
      const beyond = hold.captured_usd_cents - (medusaCaptured ?? 0);
      return beyond > 0 ? { action: 'captured', cents: beyond } : none;
    }
    const status = sessionStatus(payment);
    return { action: status === 'captured' ? 'authorized' : ACTIONS[status], cents: payment.price_amount };
  }
  return { action: ACTIONS[sessionStatus(payment)], cents: payment.price_amount };
}

const ACTIONS: Record<SessionStatus, WebhookAction> = {
  authorized: 'authorized',
  captured: 'captured',
  pending: 'pending',
  requires_more: 'requires_more',
  canceled: 'canceled',
  error: 'failed',
};

/** The parts of a Kasse Payment the rules below read. */
export interface PaymentFacts {
  id: string;
  status: string;
  price_amount: number;
  paid_attempt_id: string | null;
  metadata: Record<string, unknown>;
  attempts: Array<{
    id: string;
    token: string;
    deposits: Array<{ token: string; from: string | null; status: string }>;
  }>;
  authorization?: {
    amount_usd_cents: number;
    captured_usd_cents: number;
    pending_usd_cents: number;
    voided: boolean;
  } | null;
}

/**
 * Where a refund of the payment can go: the one address the paid attempt's confirmed money came from. Null when
 * Kasse does not know it (no sender recorded, as for a UTXO payment) or the money came from several addresses.
 */
export function payerAddress(payment: PaymentFacts): string | null {
  const paid = payment.attempts.find((a) => a.id === payment.paid_attempt_id);
  if (!paid) return null;
  const senders = new Map<string, string>();
  for (const d of paid.deposits) {
    if (d.token !== paid.token || (d.status !== 'confirmed' && d.status !== 'final')) continue;
    if (d.from === null) return null;
    if (!senders.has(d.from.toLowerCase())) senders.set(d.from.toLowerCase(), d.from);
  }
  return senders.size === 1 ? [...senders.values()][0]! : null;
}

/** US cents the merchant holds of the payment: what was captured of a manual one, else its price. */
export function capturedCents(payment: PaymentFacts): number {
  return payment.authorization ? payment.authorization.captured_usd_cents : payment.price_amount;
}

/** The Medusa payment session a Kasse payment belongs to (set by the provider when it creates it), or null. */
export function sessionOf(payment: Pick<PaymentFacts, 'metadata'>): string | null {
  const id = payment.metadata?.medusa_session_id;
  return typeof id === 'string' && id !== '' ? id : null;
}
