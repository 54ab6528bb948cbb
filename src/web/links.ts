/**
 * Payment link pages on the checkout host, for payers and (POS) staff, without a key:
 *
 *   GET  /l/<slug>                  the page for the link's kind (fixed, open, tip; pos: the staff keypad terminal)
 *   POST /l/<slug>                  creates the payment (JSON → 201 `{ payment_id, checkout_url, order_id }` or the
 *                                   Error body; a form post → 303 to the checkout, or to the sale screen for pos)
 *   GET  /l/<slug>/sale/<pay_id>    POS: the sale's QR code, live status, PAID, next sale
 *
 * An unknown slug is 404; a link turned off, expired or used up is 410 and creates nothing. Payment creation is rate
 * limited per client address (the page is public). A fixed-amount link also answers x402 clients (agents paying with
 * `PAYMENT-SIGNATURE`, src/web/x402-links.ts); browsers keep getting the page.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid, notFound } from '../core/errors.ts';
import { sendError } from '../http/frame.ts';
import type { Kasse } from '../kasse.ts';
import { payerActor } from '../modules/audit/index.ts';
import { LINK_LIMITS, type LinkAvailability, type LinkRow, unavailableMessage } from '../modules/links/index.ts';
import { agentPayable, answerAgent, isAgentRequest } from './x402-links.ts';
import { AMOUNT_FORMAT, AMOUNT_MISSING, amountHint, payerMessage, type AmountBounds } from './payer-text.ts';
import { type Locale, money, t } from '../core/i18n/index.ts';
import { langField, langQuery, pageLocale, pickedLocale, switcher } from './lang.ts';
import type { MerchantBrand } from './brand.ts';
import { posSalePage } from './checkout-view.ts';
import {
  addFormParser,
  asApiError,
  assertSameOrigin,
  bodyFields,
  html,
  isJson,
  messagePage,
  renderPage,
  sendPage,
  type Html,
} from './page.ts';
import type { CheckoutRoute } from './routes.ts';
import { actorOf, checkSessionCsrf, clientMeta, posAccess } from './dashboard/context.ts';

/** NOTE: payments one client address may create through link pages per minute. */
export const LINK_PAYMENTS_PER_MINUTE = 60;

/** "12.34", "$12", "12,5" → cents; null when not an amount with at most two decimals. */
export function parseDollars(text: string): number | null {
  const m = /^\$?(\d{1,9})(?:[.,](\d{1,2}))?$/.exec(text.replace(/\s+/g, ''));
  if (!m) return null;
  return Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
}

interface Merchant {
  name: string;
  brand: MerchantBrand | null;
}

async function merchantOf(kasse: Kasse, link: LinkRow): Promise<Merchant> {
  const brand = await kasse.merchants.brands.of(link.merchant_id);
  return { name: brand?.name ?? '', brand };
}

function header(link: LinkRow, merchant: Merchant, price: Html | string = ''): Html {
  return html`<header class="k-head">
<p class="k-merchant">${merchant.name}</p>
<h1 class="k-title">${link.title}</h1>
${price}${link.description ? html`<p class="k-desc">${link.description}</p>` : ''}
</header>`;
}

/** The link's form for a payer (fixed, open, tip) or the staff keypad (pos). */
/** The bounds the merchant set on the amount typed on a link page, and the smallest amount of any payment. */
const boundsOf = (link: LinkRow): AmountBounds => ({
  min: link.min_usd_cents,
  max: link.max_usd_cents,
  floor: LINK_LIMITS.centsMin,
});

/** A link's availability as the payer reads it. */
const availabilityText = (l: Locale, a: LinkAvailability) =>
  t(l, a === 'inactive' || a === 'expired' || a === 'used_up' ? `link.${a}` : 'link.unavailable');

function linkForm(
  l: Locale,
  link: LinkRow,
  values: { amount?: string; email?: string; error?: string | null; csrf?: string; picked?: Locale | null },
): Html {
  const range = amountHint(l, boundsOf(link));
  const email = link.collect_email
    ? html`<label for="k-email">${t(l, 'link.email')}</label><input id="k-email" name="email" type="email" required maxlength="${LINK_LIMITS.emailMax}" autocomplete="email" value="${values.email ?? ''}" aria-describedby="k-email-h"><p class="k-hint" id="k-email-h">${t(l, 'link.email_hint')}</p>`
    : '';
  const amountInput = (label: string, required: boolean) =>
    html`<label for="k-amount">${label}</label><div class="k-money"><span aria-hidden="true">$</span><input id="k-amount" name="amount" inputmode="decimal" autocomplete="off" pattern="\\$?[0-9]{1,9}([.,][0-9]{1,2})?"${required ? html` required` : ''} value="${values.amount ?? ''}" aria-describedby="k-amount-h"></div><p class="k-hint" id="k-amount-h">${range}</p>`;
  const error = html`<p class="k-error" role="alert">${values.error ?? ''}</p>`;
  const open = html`<form method="post" action="/l/${link.slug}" class="k-form${link.kind === 'pos' ? ' k-terminal' : ''}" data-once${link.kind === 'pos' ? html` data-keypad` : ''} novalidate>${langField(values.picked)}`;
  switch (link.kind) {
    case 'fixed':
      return html`${open}${email}<button type="submit" class="k-btn">${t(l, 'link.pay', { amount: money(l, link.amount_usd_cents!) })}</button>${error}</form>`;
    case 'open':
      return html`${open}${amountInput(t(l, 'link.amount'), true)}${email}<button type="submit" class="k-btn">${t(l, 'link.continue')}</button>${error}</form>`;
    case 'tip':
      return html`${open}${email}<fieldset class="k-presets"><legend>${t(l, 'link.choose_amount')}</legend>${link.presets_usd_cents.map(
        (c) =>
          html`<button type="submit" name="amount_usd_cents" value="${c}" class="k-preset">${money(l, c)}</button>`,
      )}</fieldset>${amountInput(t(l, 'link.other_amount'), false)}<button type="submit" name="custom" value="1" class="k-btn k-alt">${t(l, 'link.pay_this')}</button>${error}</form>`;
    case 'pos':
      return html`${open}<input type="hidden" name="_csrf" value="${values.csrf ?? ''}">
<label for="k-amount">${t(l, 'pos.amount')}</label>
<div class="k-money k-display"><span aria-hidden="true">$</span><input id="k-amount" name="amount" inputmode="decimal" autocomplete="off" required pattern="\\$?[0-9]{1,9}([.,][0-9]{1,2})?" value="${values.amount ?? ''}" placeholder="0.00" aria-describedby="k-amount-h"></div><p class="k-hint" id="k-amount-h">${range}</p>
<div class="k-keypad" hidden>${['1', '2', '3', '4', '5', '6', '7', '8', '9', '00', '0'].map((k) => html`<button type="button" data-key="${k}">${k}</button>`)}<button type="button" data-key="back" aria-label="${t(l, 'pos.delete_digit')}">⌫</button></div>
<button type="button" class="k-link" data-key="clear" hidden>${t(l, 'pos.clear')}</button>
<button type="submit" class="k-btn k-charge">${t(l, 'pos.charge')}</button>${error}</form>`;
  }
}

/** The page's footer: who secures it and the language switcher (back to the link's own address). */
const footer = (l: Locale, link: LinkRow) =>
  html`<footer class="k-foot"><span class="k-brand">${t(l, 'page.secured')}</span>${switcher(l, `/l/${link.slug}`)}</footer>`;

function linkPage(
  l: Locale,
  link: LinkRow,
  merchant: Merchant,
  values: { amount?: string; email?: string; error?: string | null; csrf?: string; picked?: Locale | null },
): string {
  const price = link.kind === 'fixed' ? html`<p class="k-price">${money(l, link.amount_usd_cents!)}</p>` : '';
  const body = html`<div class="k-card${link.kind === 'pos' ? ' k-pos' : ''}">${header(link, merchant, price)}<main id="k-main">${linkForm(l, link, values)}</main>${footer(l, link)}</div>`;
  return renderPage({
    locale: l,
    title: `${link.title} · ${merchant.name}`,
    body,
    test: link.mode === 'test',
    brand: merchant.brand,
  });
}

function unavailablePage(l: Locale, link: LinkRow, merchant: Merchant, message: string, heading?: string): string {
  return renderPage({
    locale: l,
    title: `${link.title} · ${merchant.name}`,
    body: html`<div class="k-card">${header(link, merchant)}<main id="k-main" class="k-message"><h2>${heading ?? t(l, 'link.not_available')}</h2><p>${message}</p></main>${footer(l, link)}</div>`,
    test: link.mode === 'test',
    brand: merchant.brand,
  });
}

/** The page of a link whose mode has no network that can take payments (a live installation not set up yet). */
const closedPage = (l: Locale, link: LinkRow, merchant: Merchant) =>
  unavailablePage(l, link, merchant, t(l, 'closed.text', { merchant: merchant.name }), t(l, 'closed.heading'));

const linkNotFound = (reply: FastifyReply, l: Locale) =>
  sendPage(reply, 404, messagePage(l, t(l, 'link.not_found'), t(l, 'link.not_found_text')));

/** Amount in cents and email from a JSON body (`amount_usd_cents`) or a form (`amount_usd_cents` preset, or `amount` in dollars). */
function payInput(req: FastifyRequest, link: LinkRow): { amountCents?: number; email?: string; amountText?: string } {
  const json = isJson(req);
  const f = bodyFields(
    req,
    json
      ? ['amount_usd_cents', 'email', '_csrf', 'lang']
      : ['amount_usd_cents', 'amount', 'email', 'custom', '_csrf', 'lang'],
  );
  if (f.email !== undefined && typeof f.email !== 'string') throw invalid('email must be a string', 'email');
  const email = f.email as string | undefined;
  if (link.kind === 'fixed') return { email };
  if (json) {
    if (f.amount_usd_cents !== undefined && !Number.isSafeInteger(f.amount_usd_cents))
      throw invalid('amount_usd_cents must be an integer', 'amount_usd_cents');
    return { amountCents: f.amount_usd_cents as number | undefined, email };
  }
  const amountText = typeof f.amount === 'string' ? f.amount.trim() : '';
  if (typeof f.amount_usd_cents === 'string' && f.custom === undefined) {
    if (!/^\d{1,9}$/.test(f.amount_usd_cents))
      throw invalid('amount_usd_cents must be a whole number of cents', 'amount_usd_cents');
    return { amountCents: Number(f.amount_usd_cents), email, amountText };
  }
  if (amountText === '') throw invalid(AMOUNT_MISSING, 'amount');
  const cents = parseDollars(amountText);
  if (cents === null) throw invalid(AMOUNT_FORMAT, 'amount');
  return { amountCents: cents, email, amountText };
}

/**
 * NOTE: a POS terminal takes payments in the shop's name, so it needs a signed-in dashboard user of the link's merchant
 * (any role): a leaked terminal URL is useless to a stranger. Others are sent to sign in (or refused: another merchant).
 */
async function posGate(kasse: Kasse, req: FastifyRequest, reply: FastifyReply, link: LinkRow, l: Locale, json = false) {
  if (link.kind !== 'pos') return { csrf: undefined, staff: null };
  const access = await posAccess(kasse, req, link.merchant_id);
  if (access === 'signin') {
    if (json) sendError(reply, new ApiError('unauthorized', 'Sign in to the dashboard to use this POS terminal.'));
    else
      reply
        .code(303)
        .header('location', `/dashboard/signin?next=${encodeURIComponent(`/l/${link.slug}`)}`)
        .send();
    return null;
  }
  if (access === 'forbidden') {
    if (json) sendError(reply, notFound('payment link'));
    else sendPage(reply, 403, messagePage(l, t(l, 'pos.not_yours'), t(l, 'pos.not_yours_text')));
    return null;
  }
  return { csrf: access.csrf, staff: access };
}

/** The `lang` a form post carries (the payer's pick of language), if any. */
const bodyLang = (req: FastifyRequest): unknown =>
  req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>).lang : undefined;

/**
 * An x402 client on a fixed-amount link (src/web/x402-links.ts): refused in the Error body when the link cannot
 * take a payment; a paid attempt counts against the per-address limit on payments made through link pages.
 */
async function payByAgent(kasse: Kasse, link: LinkRow, req: FastifyRequest, reply: FastifyReply) {
  const availability = kasse.links.availability(link);
  const paid = req.headers['payment-signature'] !== undefined;
  // A closed link still answers a retry of a payment it took (answerAgent); nothing else.
  if (availability !== 'ok' && !paid) throw new ApiError('invalid_state', unavailableMessage(availability));
  if (paid) {
    const rate = await kasse.rateLimiter.take(`ip:${req.ip}`, LINK_PAYMENTS_PER_MINUTE);
    if (!rate.allowed) throw rateLimited(rate.resetSeconds);
  }
  const closed = availability === 'ok' ? undefined : unavailableMessage(availability);
  return answerAgent({ links: kasse.links, facilitator: kasse.x402 }, link, req, reply, closed);
}

/** 429 for a client address that made too many payments through link pages this minute. */
const rateLimited = (resetSeconds: number) =>
  new ApiError('rate_limited', `Too many payments from this address; retry in ${resetSeconds} s.`, null, {
    'Retry-After': String(resetSeconds),
  });

const linkRoutes: CheckoutRoute = async (app, { kasse }) => {
  addFormParser(app);

  app.get<{ Params: { slug: string } }>('/l/:slug', async (req, reply) => {
    const link = await kasse.links.bySlug(req.params.slug);
    const agent = isAgentRequest(req);
    if (!link) return agent ? sendError(reply, notFound('payment link')) : linkNotFound(reply, pageLocale(req));
    if (agent && agentPayable(link)) return payByAgent(kasse, link, req, reply);
    const l = pageLocale(req, link.locale);
    const merchant = await merchantOf(kasse, link);
    const gate = await posGate(kasse, req, reply, link, l);
    if (!gate) return reply;
    const availability = kasse.links.availability(link);
    if (availability !== 'ok')
      return sendPage(reply, 410, unavailablePage(l, link, merchant, availabilityText(l, availability)));
    if (!kasse.chains.anyAvailable(link.mode)) return sendPage(reply, 200, closedPage(l, link, merchant));
    return sendPage(reply, 200, linkPage(l, link, merchant, { csrf: gate.csrf, picked: pickedLocale(req) }));
  });

  app.post<{ Params: { slug: string } }>('/l/:slug', async (req, reply) => {
    const json = isJson(req);
    const link = await kasse.links.bySlug(req.params.slug);
    if (!link) return json ? sendError(reply, notFound('payment link')) : linkNotFound(reply, pageLocale(req));
    const l = pageLocale(req, link.locale, bodyLang(req));
    const gate = await posGate(kasse, req, reply, link, l, json);
    if (!gate) return reply;
    let values: { amount?: string; email?: string; csrf?: string } = { csrf: gate.csrf };
    try {
      assertSameOrigin(req, kasse.urls.checkout);
      if (gate.staff) checkSessionCsrf(kasse, req, gate.staff.session, (req.body ?? {}) as Record<string, unknown>);
      if (!kasse.chains.anyAvailable(link.mode)) {
        throw new ApiError('chain_paused', `No network can take payments in ${link.mode} mode now; try again later.`);
      }
      const input = payInput(req, link);
      values = { amount: input.amountText, email: input.email, csrf: gate.csrf };
      const rate = await kasse.rateLimiter.take(`ip:${req.ip}`, LINK_PAYMENTS_PER_MINUTE);
      if (!rate.allowed) throw rateLimited(rate.resetSeconds);
      const payment = await kasse.links.pay(
        link,
        input,
        gate.staff ? actorOf(gate.staff.user, clientMeta(req)) : payerActor(req.ip),
      );
      if (json)
        return reply
          .code(201)
          .send({ payment_id: payment.id, checkout_url: payment.checkout_url, order_id: payment.order_id });
      return reply
        .code(303)
        .header(
          'location',
          `${link.kind === 'pos' ? `/l/${link.slug}/sale/${payment.id}` : `/p/${payment.id}`}${langQuery(req, true, bodyLang(req))}`,
        )
        .send();
    } catch (err) {
      const e = asApiError(err);
      if (json) return sendError(reply, e);
      const merchant = await merchantOf(kasse, link);
      const fresh = (await kasse.links.bySlug(link.slug)) ?? link;
      const availability = kasse.links.availability(fresh);
      if (availability !== 'ok')
        return sendPage(reply, 410, unavailablePage(l, fresh, merchant, availabilityText(l, availability)));
      if (!kasse.chains.anyAvailable(fresh.mode)) return sendPage(reply, 503, closedPage(l, fresh, merchant));
      for (const [k, v] of Object.entries(e.headers)) reply.header(k, v);
      return sendPage(
        reply,
        e.status,
        linkPage(l, fresh, merchant, {
          ...values,
          picked: pickedLocale(req, bodyLang(req)),
          error: payerMessage(l, e, boundsOf(fresh)),
        }),
      );
    }
  });

  app.get<{ Params: { slug: string; id: string } }>('/l/:slug/sale/:id', async (req, reply) => {
    const link = await kasse.links.bySlug(req.params.slug);
    const found = link && link.kind === 'pos' ? await kasse.payments.reader.publicPayment(req.params.id) : null;
    if (!link || !found || found.payment.metadata.link_id !== link.id) {
      const l = pageLocale(req, link?.locale);
      return sendPage(reply, 404, messagePage(l, t(l, 'pos.sale_not_found'), t(l, 'pos.sale_not_found_text')));
    }
    const l = pageLocale(req, found.payment.locale);
    if (!(await posGate(kasse, req, reply, link, l))) return reply;
    return sendPage(
      reply,
      200,
      await posSalePage({
        locale: l,
        picked: pickedLocale(req),
        payment: found.payment,
        mode: found.mode,
        linkTitle: link.title,
        slug: link.slug,
        now: kasse.clock.now(),
        brand: await kasse.merchants.brands.of(link.merchant_id),
      }),
    );
  });
};

export default linkRoutes;
