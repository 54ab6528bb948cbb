/**
 * The customer's link to their subscription (`{checkout}/s/<token>`), carried by every subscription email: the page
 * shows the subscription and lets the customer cancel it, with no key and no account. The token is the
 * subscription id and an expiry, signed with HMAC-SHA256 under a key derived from the operator's secret key; a
 * changed id or expiry, or a link past its expiry, opens nothing.
 *
 * NOTE: a link lasts 30 days after the email that carried it, and at least until 7 days after the subscription's next
 * due time, so the customer of a yearly subscription can still cancel from the last email; each email carries a
 * fresh one.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Actor } from '../audit/index.ts';
import { DAY_MS } from './calendar.ts';

export const LINK_MIN_LIFETIME_MS = 30 * DAY_MS;
export const LINK_AFTER_NEXT_DUE_MS = 7 * DAY_MS;

const TOKEN = /^(sub_[0-9A-Z]{26})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

/** The customer acting through their emailed link (cancelling, granting, revoking): in the merchant's audit log. */
export function customerActor(ip: string | null): Actor {
  return { type: 'anonymous', id: null, label: 'customer (emailed link)', ip };
}

export type LinkCheck =
  | { ok: true; subscriptionId: string; expiresAt: Date }
  | { ok: false; reason: 'invalid' | 'expired' };

export class CustomerLinks {
  private readonly key: Buffer;

  constructor(
    secretKey: Buffer,
    readonly checkoutBase: () => string,
  ) {
    this.key = createHmac('sha256', secretKey).update('kasse subscription customer link v1').digest();
  }

  /** When a link sent at `now` for a subscription next due at `nextDue` (wall clock) stops working. */
  expiry(now: Date, nextDue: Date): Date {
    return new Date(Math.max(now.getTime() + LINK_MIN_LIFETIME_MS, nextDue.getTime() + LINK_AFTER_NEXT_DUE_MS));
  }

  token(subscriptionId: string, expiresAt: Date): string {
    const exp = Math.floor(expiresAt.getTime() / 1000);
    return `${subscriptionId}.${exp}.${this.mac(subscriptionId, exp).toString('base64url')}`;
  }

  url(subscriptionId: string, expiresAt: Date): string {
    return `${this.checkoutBase()}/s/${this.token(subscriptionId, expiresAt)}`;
  }

  /** Checks a token at `now`: the subscription it names, or why it opens nothing. */
  verify(token: string, now: Date): LinkCheck {
    const m = TOKEN.exec(token);
    if (!m) return { ok: false, reason: 'invalid' };
    const exp = Number(m[2]);
    const given = Buffer.from(m[3]!, 'base64url');
    if (!timingSafeEqual(given, this.mac(m[1]!, exp))) return { ok: false, reason: 'invalid' };
    if (exp * 1000 <= now.getTime()) return { ok: false, reason: 'expired' };
    return { ok: true, subscriptionId: m[1]!, expiresAt: new Date(exp * 1000) };
  }

  private mac(id: string, exp: number): Buffer {
    return createHmac('sha256', this.key).update(`${id}.${exp}`).digest();
  }
}
