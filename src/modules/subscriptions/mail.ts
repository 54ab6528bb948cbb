/**
 * The emails a subscription sends its customer: the invoice of each period, the reminder with a fresh payment while
 * a period is overdue, and the notice that the subscription ended; for a charged subscription, the receipt of each
 * charge and the notice that a charge failed, with the period's payment to pay by hand. Built with the shared email layout, so every
 * merchant and customer string is escaped in the HTML part; every mail carries the customer's signed link.
 *
 * They go into the outbox by reference (`subscriptionMail`): the invoice and the reminder name their payment, the
 * notice its subscription, each with the expiry of the customer's link; the composer (composer.ts) builds them from
 * the stored rows when they are sent or shown. So the merchant's name is the one it has when the mail is sent.
 * Each is written in the subscription's `locale` (English when none was given), through the message catalogs.
 */
import { chooseLocale, day, type Locale, moment, money, t } from '../../core/i18n/index.ts';
import type { ComposedMail, EmailContent, MailReference } from '../email/index.ts';
import { dueAt, type Interval } from './calendar.ts';
import type { CancellationReason, ChargeFailureReason } from './model.ts';
import type { SubscriptionRow } from './store/subscriptions.ts';

/** The kinds of subscription mail, all stored by reference. */
export const MAIL_KINDS = {
  invoice: 'subscription.invoice',
  reminder: 'subscription.reminder',
  cancelled: 'subscription.cancelled',
  charged: 'subscription.charged',
  chargeFailed: 'subscription.charge_failed',
} as const;
export type SubscriptionMailKind = (typeof MAIL_KINDS)[keyof typeof MAIL_KINDS];

/**
 * A subscription mail to enqueue: `about` is the payment (invoice, reminder) or the subscription (notice) it is
 * built from, `linkExpires` when the customer's link it carries stops working. At most one per `dedupeKey`.
 */
export function subscriptionMail(
  sub: SubscriptionRow,
  kind: SubscriptionMailKind,
  about: string,
  linkExpires: Date,
  dedupeKey: string,
): MailReference {
  const ref = `${about}.${Math.floor(linkExpires.getTime() / 1000)}`;
  return {
    merchantId: sub.merchant_id,
    mode: sub.mode,
    kind,
    to: sub.customer_email,
    toName: sub.customer_name,
    ref,
    dedupeKey,
  };
}

/** The payment or subscription and the link expiry a reference names; null for a malformed one. */
export function parseMailRef(ref: string): { about: string; linkExpires: Date } | null {
  const m = /^(pay_[0-9A-Z]{36}|sub_[0-9A-Z]{26})\.(\d{1,12})$/.exec(ref);
  return m ? { about: m[1]!, linkExpires: new Date(Number(m[2]) * 1000) } : null;
}

export interface MailContext {
  merchantName: string;
  sub: SubscriptionRow;
  /** The customer's signed link to the subscription. */
  customerUrl: string;
}

export interface InvoicePayment {
  checkout_url: string;
  expires_at: Date;
  price_amount: number;
}

export { day, moment };

/** "every month", "every 3 months" in the locale. */
export function every(interval: Interval, count: number, locale: Locale = 'en'): string {
  return t(locale, `every.${interval}`, { count });
}

/** The language of a subscription's mail: its `locale`, else English. */
const localeOf = (c: MailContext): Locale => chooseLocale({ stored: c.sub.locale });

function periodRange(l: Locale, sub: SubscriptionRow, period: number): string {
  const start = dueAt(sub.started_at, sub.interval, sub.interval_count, period);
  const end = dueAt(sub.started_at, sub.interval, sub.interval_count, period + 1);
  return t(l, 'mail.period_value', { period, start: day(l, start), end: day(l, end) });
}

/** The names every message of a mail may use. */
function words(c: MailContext, amount: number) {
  const l = localeOf(c);
  return {
    l,
    v: { merchant: c.merchantName, title: c.sub.title, amount: money(l, amount) },
  };
}

const footer = (c: MailContext, l: Locale) => [
  t(l, 'mail.footer', {
    merchant: c.merchantName,
    title: c.sub.title,
    amount: money(l, c.sub.amount_usd_cents),
    every: every(c.sub.interval, c.sub.interval_count, l),
  }),
];
const manage = (c: MailContext, l: Locale) => [{ label: t(l, 'mail.manage'), url: c.customerUrl }];

const WHY = {
  customer: 'mail.why_customer',
  merchant: 'mail.why_merchant',
  unpaid: 'mail.why_unpaid',
} as const satisfies Record<CancellationReason, string>;

/** The subscription ended (no more invoices). */
export function cancelledMail(c: MailContext, reason: CancellationReason): ComposedMail {
  const { l, v } = words(c, c.sub.amount_usd_cents);
  const body: EmailContent = {
    lang: l,
    heading: t(l, 'mail.cancelled_heading', v),
    paragraphs: [t(l, 'mail.cancelled_text', v), t(l, WHY[reason], v)],
    details: [[t(l, 'mail.amount'), `${v.amount} ${every(c.sub.interval, c.sub.interval_count, l)}`]],
    footer: [t(l, 'mail.footer_ended', v)],
    links: [{ label: t(l, 'mail.see'), url: c.customerUrl }],
  };
  return { subject: t(l, 'mail.cancelled_subject', v), content: body };
}

/** What a charge mail tells of its charge. */
export interface ChargeFacts {
  transaction: string | null;
  reason: ChargeFailureReason | null;
  /** When the period is tried again (null: it is not). */
  nextAttempt: Date | null;
}

/**
 * The mails about a period's payment, by the name their messages carry (`mail.<name>_subject`, `mail.<name>_heading`):
 * the invoice of a period, the reminder with a fresh payment for an overdue one (the subscription ends at `endsAt`
 * unless paid), the receipt of a charge made under the customer's grant, and the notice that a charge failed, with
 * the period's payment to pay by hand.
 */
export type PeriodMailName = 'invoice' | 'reminder' | 'charged' | 'charge_failed';

/** The period mail each kind is. */
export const PERIOD_MAILS: ReadonlyMap<string, PeriodMailName> = new Map([
  [MAIL_KINDS.invoice, 'invoice'],
  [MAIL_KINDS.reminder, 'reminder'],
  [MAIL_KINDS.charged, 'charged'],
  [MAIL_KINDS.chargeFailed, 'charge_failed'],
]);

/** What a period mail is written from; `charge` is the one a charge mail tells of. */
export interface PeriodFacts {
  period: number;
  due: Date;
  endsAt: Date;
  payment: InvoicePayment;
  charge: ChargeFacts | null;
}

/** The names every message of a period mail may use. */
type PeriodWords = ReturnType<typeof words>['v'] & { due: string; ends: string };

/** What a period mail says after its heading; `more` follows amount and period in its details. */
interface PeriodParts {
  paragraphs: string[];
  more: [string, string][];
  /** Whether it carries the button to pay the period's payment. */
  pay: boolean;
}

const REASON = {
  insufficient_funds: 'mail.reason_insufficient_funds',
  allowance_exhausted: 'mail.reason_allowance_exhausted',
  grant_revoked: 'mail.reason_grant_revoked',
  grant_expired: 'mail.reason_grant_expired',
  transaction_failed: 'mail.reason_transaction_failed',
} as const satisfies Record<ChargeFailureReason, string>;

/** Each period mail's own parts (null: a charge mail without its charge is not sent). */
const PERIOD_PARTS: Record<
  PeriodMailName,
  (c: MailContext, l: Locale, v: PeriodWords, f: PeriodFacts) => PeriodParts | null
> = {
  invoice: (c, l, v, f) => ({
    paragraphs: [
      c.sub.customer_name
        ? t(l, 'mail.invoice_text_named', { ...v, name: c.sub.customer_name })
        : t(l, 'mail.invoice_text', v),
    ],
    more: [
      [t(l, 'mail.due'), moment(l, f.due)],
      [t(l, 'mail.pay_by'), moment(l, f.payment.expires_at)],
    ],
    pay: true,
  }),
  reminder: (_c, l, v, f) => ({
    paragraphs: [t(l, 'mail.reminder_text', v), t(l, 'mail.reminder_ends', { ends: moment(l, f.endsAt) })],
    more: [
      [t(l, 'mail.was_due'), moment(l, f.due)],
      [t(l, 'mail.ends'), moment(l, f.endsAt)],
    ],
    pay: true,
  }),
  charged: (_c, l, v, { charge }) =>
    charge && {
      paragraphs: [t(l, 'mail.charged_text', v), t(l, 'mail.charged_limit', v)],
      more: charge.transaction ? [[t(l, 'mail.transaction'), charge.transaction]] : [],
      pay: false,
    },
  charge_failed: (_c, l, v, { charge, payment }) =>
    charge && {
      paragraphs: [
        t(l, 'mail.charge_failed_text', { ...v, reason: t(l, REASON[charge.reason ?? 'transaction_failed']) }),
        charge.nextAttempt
          ? t(l, 'mail.charge_failed_retry', { next: moment(l, charge.nextAttempt) })
          : t(l, 'mail.charge_failed_by_hand', v),
      ],
      more: [[t(l, 'mail.pay_by'), moment(l, payment.expires_at)]],
      pay: true,
    },
};

/**
 * A mail about a period's payment: its parts, amount and period first among its details, the pay button when the
 * customer is to pay, the subscription's footer and manage link. Null for a charge mail without its charge.
 */
export function periodMail(name: PeriodMailName, c: MailContext, f: PeriodFacts): ComposedMail | null {
  const { l, v: common } = words(c, f.payment.price_amount);
  const v = { ...common, due: day(l, f.due), ends: day(l, f.endsAt) };
  const parts = PERIOD_PARTS[name](c, l, v, f);
  if (!parts) return null;
  return {
    subject: t(l, `mail.${name}_subject`, v),
    content: {
      lang: l,
      heading: t(l, `mail.${name}_heading`, v),
      paragraphs: parts.paragraphs,
      details: [[t(l, 'mail.amount'), v.amount], [t(l, 'mail.period'), periodRange(l, c.sub, f.period)], ...parts.more],
      ...(parts.pay ? { action: { label: t(l, 'mail.pay_now'), url: f.payment.checkout_url } } : {}),
      footer: footer(c, l),
      links: manage(c, l),
    },
  };
}
