/**
 * The composer of subscription mail (registered with the email outbox for the kinds in mail.ts): builds the
 * invoices, reminders and notices of many stored mails at once from what their references name — the invoice row,
 * its payment and subscription, the merchant's name and brand — in a few queries whatever their number. A reference that
 * names nothing of the mail's own merchant and mode builds nothing (that mail fails rather than say something wrong).
 */
import type { DbOrTx } from '../../db/index.ts';
import type { ComposedMail, MailComposer, MailRef } from '../email/index.ts';
import { mailBrand, merchantBrands } from '../merchants/index.ts';
import type { PaymentSummary } from '../payments/index.ts';
import {
  cancelledMail,
  MAIL_KINDS,
  PERIOD_MAILS,
  parseMailRef,
  periodMail,
  type ChargeFacts,
  type MailContext,
} from './mail.ts';
import { chargesOf, type ChargeRow } from './store/charges.ts';
import { endsAt } from './policy.ts';
import type { Presenter } from './presenter.ts';
import { invoicesByPayment, subscriptionsByIds, type InvoiceRow, type SubscriptionRow } from './store/subscriptions.ts';

export function subscriptionMailComposer(p: Presenter): MailComposer {
  const deps = p.deps;
  return async (db: DbOrTx, mails: readonly MailRef[]): Promise<Map<string, ComposedMail>> => {
    const parsed = mails.map((m) => ({ mail: m, ref: parseMailRef(m.ref) }));
    const paymentIds = parsed.filter((p) => p.ref?.about.startsWith('pay_')).map((p) => p.ref!.about);
    const invoices = new Map<string, InvoiceRow>(
      (await invoicesByPayment(db, paymentIds)).map((i) => [i.payment_id, i]),
    );
    const subIds = new Set(parsed.filter((p) => p.ref?.about.startsWith('sub_')).map((p) => p.ref!.about));
    for (const i of invoices.values()) subIds.add(i.subscription_id);
    const subs = new Map<string, SubscriptionRow>((await subscriptionsByIds(db, [...subIds])).map((s) => [s.id, s]));
    const payments = await p.paymentsOf(db, subs.values(), invoices.values());
    const brands = await merchantBrands(
      db,
      [...subs.values()].map((s) => s.merchant_id),
    );
    const charged = new Set([MAIL_KINDS.charged, MAIL_KINDS.chargeFailed] as string[]);
    const charges = await chargesOf(db, [
      ...new Set(
        parsed
          .filter((x) => charged.has(x.mail.kind))
          .flatMap((x) => {
            const i = x.ref && invoices.get(x.ref.about);
            return i ? [i.subscription_id] : [];
          }),
      ),
    ]);

    const out = new Map<string, ComposedMail>();
    for (const { mail, ref } of parsed) {
      if (!ref) continue;
      const invoice = invoices.get(ref.about);
      const sub = subs.get(invoice ? invoice.subscription_id : ref.about);
      if (!sub || sub.merchant_id !== mail.merchantId || sub.mode !== mail.mode) continue;
      const ctx: MailContext = {
        merchantName: brands.get(sub.merchant_id)?.name ?? '',
        sub,
        customerUrl: deps.links.url(sub.id, ref.linkExpires),
      };
      const composed = build(
        mail.kind,
        ctx,
        invoice,
        invoice && payments.get(invoice.payment_id),
        invoice ? chargeFactsOf(mail.kind, invoice, charges) : null,
      );
      const brand = brands.get(sub.merchant_id);
      if (composed && brand) composed.content.brand = mailBrand(brand, deps.links.checkoutBase());
      if (composed) out.set(mail.ref, composed);
    }
    return out;
  };
}

/** One mail of `kind`: the notice names its subscription; the invoice and the reminder their invoice's payment. */
function build(
  kind: string,
  ctx: MailContext,
  invoice: InvoiceRow | undefined,
  payment: PaymentSummary | undefined,
  charge: ChargeFacts | null,
): ComposedMail | null {
  if (kind === MAIL_KINDS.cancelled)
    return !invoice && ctx.sub.cancellation_reason ? cancelledMail(ctx, ctx.sub.cancellation_reason) : null;
  const name = PERIOD_MAILS.get(kind);
  if (!invoice || !payment || !name) return null;
  const ends = endsAt(invoice.issued_at, invoice.grace_ends_at);
  return periodMail(name, ctx, { period: invoice.period, due: invoice.due_at, endsAt: ends, payment, charge });
}

/**
 * What a charge mail says of its charge: the receipt, the charge that paid its payment; the failure notice, the
 * period's first failed attempt and its next one (if any).
 */
function chargeFactsOf(kind: string, invoice: InvoiceRow, charges: readonly ChargeRow[]): ChargeFacts | null {
  const mine = charges.filter((c) => c.subscription_id === invoice.subscription_id && c.period === invoice.period);
  if (kind === MAIL_KINDS.charged) {
    const paid = mine.find((c) => c.status === 'succeeded' && c.payment_id === invoice.payment_id);
    return paid ? { transaction: paid.tx_hash, reason: null, nextAttempt: null } : null;
  }
  if (kind !== MAIL_KINDS.chargeFailed) return null;
  const failed = mine.find((c) => c.status === 'failed');
  if (!failed) return null;
  const next = mine.find((c) => c.attempt === failed.attempt + 1 && c.status !== 'cancelled');
  return { transaction: failed.tx_hash, reason: failed.failure_reason, nextAttempt: next ? next.due_at : null };
}
