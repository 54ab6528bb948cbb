/**
 * The customer's subscription page on the checkout host, opened from the signed link in every subscription email
 * (no key, no account; the link is the capability and expires — src/modules/subscriptions/customer-link.ts):
 *
 *   GET  /s/<token>           the subscription: merchant, what is billed and how often, status, payments (open ones
 *                             with their checkout link), and a button to cancel it
 *   POST /s/<token>/cancel    cancels it (a form post from this page; another site's post is refused) → 303 back
 *
 * A link that was altered is 404; one past its expiry is 410 and says a newer email carries a fresh one.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { day, type Locale, type MessageKey, moment, money, t } from '../core/i18n/index.ts';
import type { Kasse } from '../kasse.ts';
import { type CustomerView, every } from '../modules/subscriptions/index.ts';
import { langField, langQuery, pageLocale, pickedLocale, switcher } from './lang.ts';
import {
  addFormParser,
  asApiError,
  assertSameOrigin,
  html,
  messagePage,
  renderPage,
  sendPage,
  type Html,
} from './page.ts';
import type { MerchantBrand } from './brand.ts';
import type { CheckoutRoute } from './routes.ts';

const STATUS_TEXT: Record<string, MessageKey> = {
  active: 'sub.active',
  past_due: 'sub.past_due',
  cancelled: 'sub.cancelled',
};

const PAYMENT_TEXT: Record<string, MessageKey> = {
  waiting: 'sub.pay_waiting',
  detected: 'sub.pay_seen',
  confirming: 'sub.pay_seen',
  paid: 'sub.pay_paid',
  underpaid: 'sub.pay_underpaid',
  late: 'sub.pay_late',
  expired: 'sub.pay_expired',
  refunded: 'sub.pay_refunded',
  cancelled: 'sub.pay_cancelled',
};

const say = (l: Locale, table: Record<string, MessageKey>, status: string) =>
  table[status] ? t(l, table[status]) : status;

function subscriptionPage(
  l: Locale,
  token: string,
  v: CustomerView,
  brand: MerchantBrand | null,
  o: { notice?: string; error?: string; picked?: Locale | null } = {},
): string {
  const s = v.subscription;
  const cancelled = s.status === 'cancelled';
  const payments: Html = html`<ul class="k-invoices">${[...s.invoices]
    .reverse()
    .map(
      (i) =>
        html`<li><span>${t(l, 'sub.period', { period: i.period, date: day(l, new Date(i.created_at)) })}</span><span>${money(l, i.amount_usd_cents)}</span><span class="k-inv-${i.status}">${say(l, PAYMENT_TEXT, i.status)}</span>${
          i.status === 'waiting'
            ? html`<a class="k-small" href="${i.checkout_url}${o.picked ? `?lang=${o.picked}` : ''}">${t(l, 'sub.pay')}</a>`
            : ''
        }</li>`,
    )}</ul>`;
  const body = html`<div class="k-card"><header class="k-head">
<p class="k-merchant">${v.merchantName}</p>
<h1 class="k-title">${s.title}</h1>
<p class="k-price">${money(l, s.amount_usd_cents)}</p>
<p class="k-desc">${every(s.interval, s.interval_count, l)}</p>
</header>
<main id="k-main">
${o.notice ? html`<p class="k-status" role="status">${o.notice}</p>` : ''}${o.error ? html`<p class="k-error" role="alert">${o.error}</p>` : ''}
<dl class="k-facts"><dt>${t(l, 'sub.status')}</dt><dd>${say(l, STATUS_TEXT, s.status)}</dd>
<dt>${t(l, 'sub.billed_to')}</dt><dd>${s.customer.name ? `${s.customer.name} · ` : ''}${s.customer.email}</dd>
<dt>${t(l, 'sub.started')}</dt><dd>${day(l, new Date(s.started_at))}</dd>
${cancelled ? html`<dt>${t(l, 'sub.cancelled_at')}</dt><dd>${moment(l, new Date(s.cancelled_at!))}</dd>` : html`<dt>${t(l, 'sub.next_due')}</dt><dd>${moment(l, new Date(s.next_due_at))}</dd>`}</dl>
${s.invoices.length > 0 ? html`<h2>${t(l, 'sub.payments')}</h2>${payments}` : ''}
${
  cancelled
    ? html`<p class="k-note">${t(l, 'sub.cancelled_note')}</p>`
    : html`<form method="post" action="/s/${token}/cancel" class="k-form" data-once>${langField(o.picked)}<h2>${t(l, 'sub.cancel_heading')}</h2><p class="k-note">${t(l, 'sub.cancel_note')}</p><button type="submit" class="k-btn k-alt">${t(l, 'sub.cancel_button')}</button></form>`
}
</main><footer class="k-foot"><span class="k-brand">${t(l, 'page.secured')}</span>${switcher(l, `/s/${token}`)}</footer></div>`;
  return renderPage({ locale: l, title: `${s.title} · ${v.merchantName}`, body, test: v.mode === 'test', brand });
}

function refused(reply: FastifyReply, l: Locale, reason: 'invalid' | 'expired' | 'missing'): FastifyReply {
  if (reason === 'expired') {
    return sendPage(reply, 410, messagePage(l, t(l, 'sub.link_expired'), t(l, 'sub.link_expired_text')));
  }
  return sendPage(reply, 404, messagePage(l, t(l, 'sub.link_invalid'), t(l, 'sub.link_invalid_text')));
}

/** The `lang` the cancel form carries (the customer's pick of language), if any. */
const bodyLang = (req: FastifyRequest): unknown =>
  req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>).lang : undefined;

const subscriptionRoutes: CheckoutRoute = async (app, { kasse }: { kasse: Kasse }) => {
  addFormParser(app);

  app.get<{ Params: { token: string }; Querystring: { done?: string } }>('/s/:token', async (req, reply) => {
    const check = kasse.subscriptionLinks.verify(req.params.token, kasse.clock.now());
    if (!check.ok) return refused(reply, pageLocale(req), check.reason);
    const view = await kasse.subscriptions.forCustomer(check);
    if (!view) return refused(reply, pageLocale(req), 'missing');
    const l = pageLocale(req, view.subscription.locale);
    const notice = req.query.done === 'cancelled' ? t(l, 'sub.cancel_done') : undefined;
    return sendPage(
      reply,
      200,
      subscriptionPage(l, req.params.token, view, await kasse.merchants.brands.of(view.merchantId), {
        notice,
        picked: pickedLocale(req),
      }),
    );
  });

  app.post<{ Params: { token: string } }>('/s/:token/cancel', async (req, reply) => {
    const check = kasse.subscriptionLinks.verify(req.params.token, kasse.clock.now());
    if (!check.ok) return refused(reply, pageLocale(req, null, bodyLang(req)), check.reason);
    try {
      assertSameOrigin(req, kasse.urls.checkout);
      await kasse.subscriptions.cancelByCustomer(check, req.ip ?? null);
      return reply
        .code(303)
        .header('location', `/s/${req.params.token}?done=cancelled${langQuery(req, false, bodyLang(req))}`)
        .send();
    } catch (err) {
      const e = asApiError(err);
      const view = await kasse.subscriptions.forCustomer(check);
      if (!view) return refused(reply, pageLocale(req, null, bodyLang(req)), 'missing');
      const l = pageLocale(req, view.subscription.locale, bodyLang(req));
      const message =
        e.code === 'invalid_state'
          ? t(l, 'sub.already_cancelled')
          : e instanceof ApiError && e.param === 'Origin'
            ? t(l, 'sub.from_this_page')
            : t(l, 'sub.try_again');
      return sendPage(
        reply,
        e.status,
        subscriptionPage(l, req.params.token, view, await kasse.merchants.brands.of(view.merchantId), {
          error: message,
          picked: pickedLocale(req, bodyLang(req)),
        }),
      );
    }
  });
};

export default subscriptionRoutes;
