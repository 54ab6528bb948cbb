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
import type { FastifyReply } from 'fastify';
import { ApiError } from '../core/errors.ts';
import type { Kasse } from '../kasse.ts';
import { day, every, moment } from '../modules/subscriptions/mail.ts';
import type { CustomerView } from '../modules/subscriptions/service.ts';
import {
  addFormParser,
  asApiError,
  assertSameOrigin,
  html,
  messagePage,
  renderPage,
  sendPage,
  usd,
  type Html,
} from './page.ts';
import { brandOf, type MerchantBrand } from './brand.ts';
import type { CheckoutRoute } from './routes.ts';

const STATUS_TEXT: Record<string, string> = {
  active: 'Active',
  past_due: 'Payment overdue',
  cancelled: 'Cancelled',
};

const PAYMENT_TEXT: Record<string, string> = {
  waiting: 'Open',
  detected: 'Payment seen, confirming',
  confirming: 'Payment seen, confirming',
  paid: 'Paid',
  underpaid: 'Partly paid',
  late: 'Paid late, being checked',
  expired: 'Expired unpaid',
  refunded: 'Refunded',
  cancelled: 'Withdrawn',
};

function subscriptionPage(
  token: string,
  v: CustomerView,
  brand: MerchantBrand | null,
  o: { notice?: string; error?: string } = {},
): string {
  const s = v.subscription;
  const cancelled = s.status === 'cancelled';
  const payments: Html = html`<ul class="k-invoices">${[...s.invoices]
    .reverse()
    .map(
      (i) =>
        html`<li><span>Period ${i.period} · ${day(new Date(i.created_at))}</span><span>${usd(i.amount_usd_cents)}</span><span class="k-inv-${i.status}">${PAYMENT_TEXT[i.status] ?? i.status}</span>${
          i.status === 'waiting' ? html`<a class="k-small" href="${i.checkout_url}">Pay</a>` : ''
        }</li>`,
    )}</ul>`;
  const body = html`<div class="k-card"><header class="k-head">
<p class="k-merchant">${v.merchantName}</p>
<h1 class="k-title">${s.title}</h1>
<p class="k-price">${usd(s.amount_usd_cents)}</p>
<p class="k-desc">${every(s.interval, s.interval_count)}</p>
</header>
<main id="k-main">
${o.notice ? html`<p class="k-status" role="status">${o.notice}</p>` : ''}${o.error ? html`<p class="k-error" role="alert">${o.error}</p>` : ''}
<dl class="k-facts"><dt>Status</dt><dd>${STATUS_TEXT[s.status] ?? s.status}</dd>
<dt>Billed to</dt><dd>${s.customer.name ? `${s.customer.name} · ` : ''}${s.customer.email}</dd>
<dt>Started</dt><dd>${day(new Date(s.started_at))}</dd>
${cancelled ? html`<dt>Cancelled</dt><dd>${moment(new Date(s.cancelled_at!))}</dd>` : html`<dt>Next payment due</dt><dd>${moment(new Date(s.next_due_at))}</dd>`}</dl>
${s.invoices.length > 0 ? html`<h2>Payments</h2>${payments}` : ''}
${
  cancelled
    ? html`<p class="k-note">This subscription is cancelled. You will not be billed for it again.</p>`
    : html`<form method="post" action="/s/${token}/cancel" class="k-form" data-once><h2>Cancel</h2><p class="k-note">Cancelling stops every future payment at once; open payments are withdrawn. It cannot be undone.</p><button type="submit" class="k-btn k-alt">Cancel subscription</button></form>`
}
</main><footer class="k-foot"><span class="k-brand">Secured by Kasse</span></footer></div>`;
  return renderPage({ title: `${s.title} · ${v.merchantName}`, body, test: v.mode === 'test', brand });
}

function refused(reply: FastifyReply, reason: 'invalid' | 'expired' | 'missing'): FastifyReply {
  if (reason === 'expired') {
    return sendPage(
      reply,
      410,
      messagePage(
        'Link expired',
        'This subscription link has expired. Every email about your subscription carries a fresh one: open the link in the most recent email.',
      ),
    );
  }
  return sendPage(
    reply,
    404,
    messagePage(
      'Link not valid',
      'This subscription link is not valid. Open the link from an email about your subscription exactly as it was sent.',
    ),
  );
}

const subscriptionRoutes: CheckoutRoute = async (app, { kasse }: { kasse: Kasse }) => {
  addFormParser(app);

  app.get<{ Params: { token: string }; Querystring: { done?: string } }>('/s/:token', async (req, reply) => {
    const check = kasse.subscriptionLinks.verify(req.params.token, kasse.clock.now());
    if (!check.ok) return refused(reply, check.reason);
    const view = await kasse.subscriptions.forCustomer(check);
    if (!view) return refused(reply, 'missing');
    const notice =
      req.query.done === 'cancelled'
        ? 'Your subscription is cancelled. A confirmation is on its way by email.'
        : undefined;
    return sendPage(
      reply,
      200,
      subscriptionPage(req.params.token, view, await brandOf(kasse, view.merchantId), { notice }),
    );
  });

  app.post<{ Params: { token: string } }>('/s/:token/cancel', async (req, reply) => {
    const check = kasse.subscriptionLinks.verify(req.params.token, kasse.clock.now());
    if (!check.ok) return refused(reply, check.reason);
    try {
      assertSameOrigin(req, kasse.urls.checkout);
      await kasse.subscriptions.cancelByCustomer(check, req.ip ?? null);
      return reply.code(303).header('location', `/s/${req.params.token}?done=cancelled`).send();
    } catch (err) {
      const e = asApiError(err);
      const view = await kasse.subscriptions.forCustomer(check);
      if (!view) return refused(reply, 'missing');
      const message =
        e.code === 'invalid_state'
          ? 'This subscription was already cancelled.'
          : e instanceof ApiError && e.param === 'Origin'
            ? 'The cancellation must be sent from this page.'
            : 'That did not work. Try again.';
      return sendPage(
        reply,
        e.status,
        subscriptionPage(req.params.token, view, await brandOf(kasse, view.merchantId), { error: message }),
      );
    }
  });
};

export default subscriptionRoutes;
