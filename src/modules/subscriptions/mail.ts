/**
 * The emails a subscription sends its customer: the invoice of each period, the reminder with a fresh payment while
 * a period is overdue, and the notice that the subscription ended. Built with the shared email layout, so every
 * merchant and customer string is escaped in the HTML part; every mail carries the customer's signed link.
 *
 * They go into the outbox by reference (`subscriptionMail`): the invoice and the reminder name their payment, the
 * notice its subscription, each with the expiry of the customer's link; the composer (composer.ts) builds them from
 * the stored rows when they are sent or shown. So the merchant's name is the one it has when the mail is sent.
 */
import { formatCents } from '../../core/money.ts';
import type { ComposedMail, MailReference } from '../email/service.ts';
import type { EmailContent } from '../email/template.ts';
import { dueAt, type Interval } from './calendar.ts';
import type { CancellationReason } from './model.ts';
import type { SubscriptionRow } from './store.ts';
import { dayText } from '../../core/dates.ts';

/** The kinds of subscription mail, all stored by reference. */
export const MAIL_KINDS = {
  invoice: 'subscription.invoice',
  reminder: 'subscription.reminder',
  cancelled: 'subscription.cancelled',
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

/** "1 March 2026" (UTC). */
export const day = dayText;

/** "1 March 2026, 12:00 UTC". */
export function moment(d: Date): string {
  return `${day(d)}, ${d.toISOString().slice(11, 16)} UTC`;
}

export const usd = (cents: number) => `$${formatCents(cents).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;

/** "every month", "every 3 months". */
export function every(interval: Interval, count: number): string {
  return count === 1 ? `every ${interval}` : `every ${count} ${interval}s`;
}

function periodRange(sub: SubscriptionRow, period: number): string {
  const start = dueAt(sub.started_at, sub.interval, sub.interval_count, period);
  const end = dueAt(sub.started_at, sub.interval, sub.interval_count, period + 1);
  return `${day(start)} – ${day(end)}`;
}

const footer = (c: MailContext) => [
  `You receive this email because ${c.merchantName} bills you for ${c.sub.title} (${usd(c.sub.amount_usd_cents)} ${every(c.sub.interval, c.sub.interval_count)}) through Kasse.`,
];
const manage = (c: MailContext) => [{ label: 'See or cancel your subscription', url: c.customerUrl }];

/** The invoice of a period: merchant, amount, period, due date and the checkout link. */
export function invoiceMail(c: MailContext, period: number, due: Date, payment: InvoicePayment): ComposedMail {
  const body: EmailContent = {
    heading: `${c.merchantName}: invoice for ${c.sub.title}`,
    paragraphs: [
      `${c.sub.customer_name ? `Hello ${c.sub.customer_name}, y` : 'Y'}our payment of ${usd(payment.price_amount)} to ${c.merchantName} for ${c.sub.title} is due on ${day(due)}.`,
    ],
    details: [
      ['Amount', usd(payment.price_amount)],
      ['Period', `${period} (${periodRange(c.sub, period)})`],
      ['Due', moment(due)],
      ['Pay by', moment(payment.expires_at)],
    ],
    action: { label: 'Pay now', url: payment.checkout_url },
    footer: footer(c),
    links: manage(c),
  };
  return {
    subject: `Invoice from ${c.merchantName}: ${c.sub.title}, ${usd(payment.price_amount)} due ${day(due)}`,
    content: body,
  };
}

/** A fresh payment for an overdue period: it is overdue, and the subscription ends at `endsAt` unless paid. */
export function reminderMail(
  c: MailContext,
  period: number,
  due: Date,
  endsAt: Date,
  payment: InvoicePayment,
): ComposedMail {
  const body: EmailContent = {
    heading: `Payment overdue: ${c.sub.title}`,
    paragraphs: [
      `Your payment of ${usd(payment.price_amount)} to ${c.merchantName} for ${c.sub.title}, due on ${day(due)}, has not arrived and is overdue.`,
      `Unless it is paid, your subscription will end on ${moment(endsAt)}. Here is a new payment link.`,
    ],
    details: [
      ['Amount', usd(payment.price_amount)],
      ['Period', `${period} (${periodRange(c.sub, period)})`],
      ['Was due', moment(due)],
      ['Subscription ends', moment(endsAt)],
    ],
    action: { label: 'Pay now', url: payment.checkout_url },
    footer: footer(c),
    links: manage(c),
  };
  return { subject: `Overdue: ${c.sub.title} from ${c.merchantName}, ends ${day(endsAt)} unless paid`, content: body };
}

const WHY: Record<CancellationReason, (c: MailContext) => string> = {
  customer: () => 'You cancelled it with the link from our emails.',
  merchant: (c) => `${c.merchantName} cancelled it.`,
  unpaid: () => 'The payment for a period was not received before its grace period ended.',
};

/** The subscription ended (no more invoices). */
export function cancelledMail(c: MailContext, reason: CancellationReason): ComposedMail {
  const body: EmailContent = {
    heading: `Subscription cancelled: ${c.sub.title}`,
    paragraphs: [
      `Your subscription to ${c.sub.title} from ${c.merchantName} has been cancelled. You will not be billed for it again.`,
      WHY[reason](c),
    ],
    details: [['Amount', `${usd(c.sub.amount_usd_cents)} ${every(c.sub.interval, c.sub.interval_count)}`]],
    footer: [`You receive this email because ${c.merchantName} billed you for ${c.sub.title} through Kasse.`],
    links: [{ label: 'See your subscription', url: c.customerUrl }],
  };
  return { subject: `Subscription cancelled: ${c.sub.title} from ${c.merchantName}`, content: body };
}
