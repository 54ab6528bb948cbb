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

/**
 * The body of a mail about a period's payment: amount and period first among its details, then `more`; the pay
 * button when the customer is to pay `payment`; the subscription's footer and manage link.
 */
function periodBody(
  c: MailContext,
  l: Locale,
  period: number,
  amount: string,
  parts: { heading: string; paragraphs: string[]; more: [string, string][]; pay: InvoicePayment | null },
): EmailContent {
  return {
    lang: l,
    heading: parts.heading,
    paragraphs: parts.paragraphs,
    details: [[t(l, 'mail.amount'), amount], [t(l, 'mail.period'), periodRange(l, c.sub, period)], ...parts.more],
    ...(parts.pay ? { action: { label: t(l, 'mail.pay_now'), url: parts.pay.checkout_url } } : {}),
    footer: footer(c, l),
    links: manage(c, l),
  };
}

/** The invoice of a period: merchant, amount, period, due date and the checkout link. */
export function invoiceMail(c: MailContext, period: number, due: Date, payment: InvoicePayment): ComposedMail {
  const { l, v } = words(c, payment.price_amount);
  const name = c.sub.customer_name;
  const body = periodBody(c, l, period, v.amount, {
    heading: t(l, 'mail.invoice_heading', v),
    paragraphs: [
      name
        ? t(l, 'mail.invoice_text_named', { ...v, name, due: day(l, due) })
        : t(l, 'mail.invoice_text', { ...v, due: day(l, due) }),
    ],
    more: [
      [t(l, 'mail.due'), moment(l, due)],
      [t(l, 'mail.pay_by'), moment(l, payment.expires_at)],
    ],
    pay: payment,
  });
  return { subject: t(l, 'mail.invoice_subject', { ...v, due: day(l, due) }), content: body };
}

/** A fresh payment for an overdue period: it is overdue, and the subscription ends at `endsAt` unless paid. */
export function reminderMail(
  c: MailContext,
  period: number,
  due: Date,
  endsAt: Date,
  payment: InvoicePayment,
): ComposedMail {
  const { l, v } = words(c, payment.price_amount);
  const body = periodBody(c, l, period, v.amount, {
    heading: t(l, 'mail.reminder_heading', v),
    paragraphs: [
      t(l, 'mail.reminder_text', { ...v, due: day(l, due) }),
      t(l, 'mail.reminder_ends', { ends: moment(l, endsAt) }),
    ],
    more: [
      [t(l, 'mail.was_due'), moment(l, due)],
      [t(l, 'mail.ends'), moment(l, endsAt)],
    ],
    pay: payment,
  });
  return { subject: t(l, 'mail.reminder_subject', { ...v, ends: day(l, endsAt) }), content: body };
}

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

/** The receipt of a charge made under the customer's grant. */
export function chargedMail(
  c: MailContext,
  period: number,
  payment: InvoicePayment,
  charge: ChargeFacts,
): ComposedMail {
  const { l, v } = words(c, payment.price_amount);
  const body = periodBody(c, l, period, v.amount, {
    heading: t(l, 'mail.charged_heading', v),
    paragraphs: [t(l, 'mail.charged_text', v), t(l, 'mail.charged_limit', v)],
    more: charge.transaction ? [[t(l, 'mail.transaction'), charge.transaction]] : [],
    pay: null,
  });
  return { subject: t(l, 'mail.charged_subject', v), content: body };
}

const REASON = {
  insufficient_funds: 'mail.reason_insufficient_funds',
  allowance_exhausted: 'mail.reason_allowance_exhausted',
  grant_revoked: 'mail.reason_grant_revoked',
  grant_expired: 'mail.reason_grant_expired',
  transaction_failed: 'mail.reason_transaction_failed',
} as const satisfies Record<ChargeFailureReason, string>;

/** A charge failed: why, whether it is tried again, and the period's payment to pay by hand. */
export function chargeFailedMail(
  c: MailContext,
  period: number,
  payment: InvoicePayment,
  charge: ChargeFacts,
): ComposedMail {
  const { l, v } = words(c, payment.price_amount);
  const body = periodBody(c, l, period, v.amount, {
    heading: t(l, 'mail.charge_failed_heading', v),
    paragraphs: [
      t(l, 'mail.charge_failed_text', { ...v, reason: t(l, REASON[charge.reason ?? 'transaction_failed']) }),
      charge.nextAttempt
        ? t(l, 'mail.charge_failed_retry', { next: moment(l, charge.nextAttempt) })
        : t(l, 'mail.charge_failed_by_hand', v),
    ],
    more: [[t(l, 'mail.pay_by'), moment(l, payment.expires_at)]],
    pay: payment,
  });
  return { subject: t(l, 'mail.charge_failed_subject', v), content: body };
}
