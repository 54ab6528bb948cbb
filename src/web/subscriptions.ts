/**
 * The customer's subscription page on the checkout host, opened from the signed link in every subscription email
 * (no key, no account; the link is the capability and expires — src/modules/subscriptions/customer-link.ts):
 *
 *   GET  /s/<token>                the subscription: merchant, what is billed and how often, status, payments (open
 *                                  ones with their checkout link), and a button to cancel it; for a charged
 *                                  subscription its automatic payment: what the payer would allow on each network
 *                                  (before anything is signed) and the button to grant it with their wallet, or the
 *                                  grant in force with its charges and the button to turn it off
 *   POST /s/<token>/cancel         cancels it (a form post from this page; another site's post is refused) → 303 back
 *   POST /s/<token>/grant/offer    JSON `{network, payer}` → what the wallet signs for these terms
 *   POST /s/<token>/grant          JSON: the terms and signatures → 202, the grant recorded and its relay sent
 *   POST /s/<token>/revoke/offer   JSON `{}` → what the wallet signs to revoke
 *   POST /s/<token>/revoke         JSON: the signature → the grant revoked (charges stop at once), its relay sent
 *
 * The wallet is driven by the network's family script (its checkout script, loaded here too), which reveals its
 * buttons when the browser has a wallet. The JSON endpoints refuse another site's request, are limited per client
 * address, and answer refusals with the Error body. A link that was altered is 404; one past its expiry is 410
 * (the page) or 404 (the JSON endpoints).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError, notFound } from '../core/errors.ts';
import { day, type Locale, type MessageKey, moment, money, t } from '../core/i18n/index.ts';
import { formatUnits } from '../core/money.ts';
import type { Kasse } from '../kasse.ts';
import type { Mode } from '../core/mode.ts';
import {
  customerActor,
  every,
  type CustomerView,
  type GrantBody,
  type GrantPreview,
  type LinkCheck,
} from '../modules/subscriptions/index.ts';
import { checkoutScripts } from './extensions.ts';
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

const CHARGE_TEXT: Record<string, MessageKey> = {
  pending: 'sub.charge_pending',
  succeeded: 'sub.charge_succeeded',
  failed: 'sub.charge_failed',
  cancelled: 'sub.charge_cancelled',
};

const REASON_TEXT: Record<string, MessageKey> = {
  insufficient_funds: 'mail.reason_insufficient_funds',
  allowance_exhausted: 'mail.reason_allowance_exhausted',
  grant_revoked: 'mail.reason_grant_revoked',
  grant_expired: 'mail.reason_grant_expired',
  transaction_failed: 'mail.reason_transaction_failed',
};

/** NOTE: each grant or revoke costs RPC calls and a relayed transaction: a client address may send this many per minute. */
export const GRANT_PER_MINUTE = 10;

const say = (l: Locale, table: Record<string, MessageKey>, status: string) =>
  table[status] ? t(l, table[status]) : status;

/** What the page knows of the subscription's automatic payment beyond the Subscription object. */
interface GrantView {
  previews: GrantPreview[];
  /** A grant is being recorded on chain (its relay is on its way). */
  pending: boolean;
  /** The grant in force is the test-mode simulator's (revoked through the API, not a wallet). */
  simulated: boolean;
  /** The mode's networks: name, family and chain id (the family's script needs it), by id. */
  networks: Map<string, { name: string; family: string; chainId: number | null }>;
}

/** The automatic-payment part of the page: the grant in force, the one on its way, or the offer to grant. */
function grantSection(l: Locale, token: string, v: CustomerView, g: GrantView): Html {
  const s = v.subscription;
  const grant = s.grant;
  const chainAttr = (network: string) => {
    const id = g.networks.get(network)?.chainId;
    return id == null ? '' : html` data-chain-id="${String(id)}"`;
  };
  if (grant.status === 'active') {
    const network = grant.token!.split(':')[0]!;
    const simulated = g.simulated;
    return html`<section class="k-grant" aria-labelledby="k-grant-h"><h2 id="k-grant-h">${t(l, 'sub.grant_on')}</h2>
<p>${t(l, 'sub.grant_on_text', { merchant: v.merchantName, amount: money(l, s.amount_usd_cents), payer: grant.payer!, network: g.networks.get(network)?.name ?? network })}</p>
<dl class="k-facts">${grant.next_charge_at ? html`<dt>${t(l, 'sub.grant_next')}</dt><dd>${moment(l, new Date(grant.next_charge_at))}</dd>` : ''}<dt>${t(l, 'sub.grant_count')}</dt><dd>${String(grant.charges)}</dd><dt>${t(l, 'sub.grant_until')}</dt><dd>${day(l, new Date(grant.expires_at!))}</dd></dl>
${
  simulated
    ? ''
    : html`<p class="k-note">${t(l, 'sub.revoke_note')}</p><p class="k-error" role="alert" data-grant-error hidden></p><button type="button" class="k-btn k-alt" data-revoke data-family="${g.networks.get(network)?.family ?? ''}" data-network="${network}"${chainAttr(network)} data-offer="/s/${token}/revoke/offer" data-submit="/s/${token}/revoke" hidden>${t(l, 'sub.revoke_button')}</button>`
}</section>`;
  }
  if (s.collection !== 'charge_automatically' || s.status === 'cancelled') return html``;
  if (g.pending)
    return html`<section class="k-grant"><h2>${t(l, 'sub.grant_heading')}</h2><p role="status" data-grant-pending>${t(l, 'sub.grant_pending')}</p></section>`;
  if (g.previews.length === 0) return html``;
  const ended =
    grant.status === 'revoked'
      ? html`<p class="k-note">${t(l, 'sub.grant_revoked')}</p>`
      : grant.status === 'exhausted'
        ? html`<p class="k-note">${t(l, 'sub.grant_exhausted')}</p>`
        : '';
  const offers = g.previews.map((p) => {
    const symbol = p.choice.symbol.toUpperCase();
    const units = (x: string) => formatUnits(BigInt(x), p.decimals);
    const cents = (x: string) => money(l, Number(BigInt(x) / 10n ** BigInt(p.decimals - 2)));
    const terms = p.terms;
    return html`<div class="k-offer"><h3>${p.choice.name}</h3><p>${t(l, 'sub.grant_allow')}</p><ul>
<li>${t(l, 'sub.grant_amount', { amount: cents(terms.amount_per_period), token_amount: units(terms.amount_per_period), symbol, days: Math.round(terms.period_seconds / 86_400) })}</li>
<li>${t(l, 'sub.grant_receiver', { merchant: v.merchantName, receiver: terms.receiver })}</li>
<li>${t(l, 'sub.grant_period', { start: day(l, new Date(terms.start * 1000)), end: day(l, new Date(terms.end * 1000)), total: cents(terms.total), token_total: units(terms.total), symbol })}</li>
</ul>${p.unpaidBefore.length > 0 ? html`<p class="k-note" data-unpaid-before>${t(l, 'sub.grant_unpaid_before', { start: day(l, new Date(terms.start * 1000)) })}</p>` : ''}
<p class="k-note">${p.choice.enforcement === 'contract' ? t(l, 'sub.grant_contract', { network: p.choice.name }) : t(l, 'sub.grant_delegate', { network: p.choice.name })}</p>
<button type="button" class="k-btn" data-grant data-family="${p.choice.family}" data-network="${p.choice.network}"${chainAttr(p.choice.network)} data-offer="/s/${token}/grant/offer" data-submit="/s/${token}/grant" hidden>${t(l, 'sub.grant_button', { network: p.choice.name })}</button>
<p class="k-hint">${t(l, 'sub.grant_wallet', { symbol })}</p></div>`;
  });
  return html`<section class="k-grant" aria-labelledby="k-grant-h"><h2 id="k-grant-h">${t(l, 'sub.grant_heading')}</h2>${ended}
<p>${t(l, 'sub.grant_intro', { merchant: v.merchantName })}</p>${offers}
<p class="k-note">${t(l, 'sub.grant_cancel')}</p><p class="k-error" role="alert" data-grant-error hidden></p></section>`;
}

/** Every charge attempt, newest first. */
function chargeList(l: Locale, v: CustomerView): Html {
  const charges = v.subscription.charges;
  if (charges.length === 0) return html``;
  return html`<h2>${t(l, 'sub.charges')}</h2><ul class="k-invoices">${[...charges].reverse().map((c) => {
    const reason = c.failure_reason ? html` · ${say(l, REASON_TEXT, c.failure_reason)}` : '';
    return html`<li><span>${t(l, 'sub.charge_row', { period: c.period, attempt: c.attempt, date: day(l, new Date(c.created_at)) })}</span><span>${money(l, v.subscription.amount_usd_cents)}</span><span class="k-charge-${c.status}">${say(l, CHARGE_TEXT, c.status)}${reason}</span></li>`;
  })}</ul>`;
}

function subscriptionPage(
  l: Locale,
  token: string,
  v: CustomerView,
  brand: MerchantBrand | null,
  g: GrantView,
  scripts: string[],
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
<p id="k-status" class="k-status" role="status">${o.notice ?? ''}</p>${o.error ? html`<p class="k-error" role="alert">${o.error}</p>` : ''}
<dl class="k-facts"><dt>${t(l, 'sub.status')}</dt><dd>${say(l, STATUS_TEXT, s.status)}</dd>
<dt>${t(l, 'sub.billed_to')}</dt><dd>${s.customer.name ? `${s.customer.name} · ` : ''}${s.customer.email}</dd>
<dt>${t(l, 'sub.started')}</dt><dd>${day(l, new Date(s.started_at))}</dd>
${cancelled ? html`<dt>${t(l, 'sub.cancelled_at')}</dt><dd>${moment(l, new Date(s.cancelled_at!))}</dd>` : html`<dt>${t(l, 'sub.next_due')}</dt><dd>${moment(l, new Date(s.next_due_at))}</dd>`}</dl>
${grantSection(l, token, v, g)}
${s.invoices.length > 0 ? html`<h2>${t(l, 'sub.payments')}</h2>${payments}` : ''}${chargeList(l, v)}
${
  cancelled
    ? html`<p class="k-note">${t(l, 'sub.cancelled_note')}</p>`
    : html`<form method="post" action="/s/${token}/cancel" class="k-form" data-once>${langField(o.picked)}<h2>${t(l, 'sub.cancel_heading')}</h2><p class="k-note">${t(l, 'sub.cancel_note')}</p><button type="submit" class="k-btn k-alt">${t(l, 'sub.cancel_button')}</button></form>`
}
</main><footer class="k-foot"><span class="k-brand">${t(l, 'page.secured')}</span>${switcher(l, `/s/${token}`)}</footer></div>`;
  return renderPage({
    locale: l,
    title: `${s.title} · ${v.merchantName}`,
    body,
    test: v.mode === 'test',
    brand,
    scripts,
  });
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

/** The page's view of the subscription's automatic payment. */
async function grantView(kasse: Kasse, check: LinkCheck & { ok: true }, mode: Mode): Promise<GrantView> {
  const state = await kasse.subscriptions.grants.state(check.subscriptionId);
  return {
    previews: state.active || state.pending ? [] : await kasse.subscriptions.grants.preview(check),
    pending: state.pending,
    simulated: state.simulated,
    networks: new Map(
      kasse.chains.networks(mode).map((n) => [n.id, { name: n.name, family: n.family, chainId: n.chainId }]),
    ),
  };
}

const Address = Type.String({ minLength: 1, maxLength: 128 });
const OfferBody = Type.Object(
  { network: Type.String({ minLength: 1, maxLength: 64 }), payer: Address },
  { additionalProperties: false },
);
const Uint = Type.String({ pattern: '^\\d{1,78}$' });
const Seconds = Type.Integer({ minimum: 0, maximum: 2 ** 48 - 1 });
const GrantBodySchema = Type.Object(
  {
    network: Type.String({ minLength: 1, maxLength: 64 }),
    payer: Address,
    terms: Type.Object(
      {
        receiver: Address,
        amount_per_period: Uint,
        period_seconds: Seconds,
        start: Seconds,
        end: Seconds,
        total: Uint,
        salt: Type.String({ maxLength: 66 }),
      },
      { additionalProperties: false },
    ),
    signatures: Type.Record(
      Type.String({ maxLength: 64 }),
      Type.Union([Type.String({ maxLength: 8192 }), Type.Integer({ minimum: 0 })]),
      {
        maxProperties: 8,
      },
    ),
  },
  { additionalProperties: false },
);
const RevokeBody = Type.Object(
  {
    signatures: Type.Record(
      Type.String({ maxLength: 64 }),
      Type.Union([Type.String({ maxLength: 8192 }), Type.Integer({ minimum: 0 })]),
      {
        maxProperties: 8,
      },
    ),
  },
  { additionalProperties: false },
);

const subscriptionRoutes: CheckoutRoute = async (app, { kasse }: { kasse: Kasse }) => {
  addFormParser(app);

  /** Sends the customer's page of the subscription `view` the link `token` opens. */
  const customerPage = async (
    reply: FastifyReply,
    status: number,
    l: Locale,
    token: string,
    check: LinkCheck & { ok: true },
    view: CustomerView,
    o: Parameters<typeof subscriptionPage>[6],
  ): Promise<FastifyReply> => {
    const brand = await kasse.merchants.brands.of(view.merchantId);
    const page = subscriptionPage(
      l,
      token,
      view,
      brand,
      await grantView(kasse, check, view.mode),
      checkoutScripts(kasse),
      o,
    );
    return sendPage(reply, status, page);
  };

  /** The link a JSON request names, refused with the Error body (404) when it opens nothing; same site, rate-limited. */
  const jsonGuard = async (req: FastifyRequest<{ Params: { token: string } }>): Promise<LinkCheck & { ok: true }> => {
    const check = kasse.subscriptionLinks.verify(req.params.token, kasse.clock.now());
    if (!check.ok) throw notFound('subscription');
    assertSameOrigin(req, kasse.urls.checkout);
    const rate = await kasse.rateLimiter.take(`grant:${req.ip}`, GRANT_PER_MINUTE);
    if (!rate.allowed)
      throw new ApiError(
        'rate_limited',
        `Too many requests from this address; retry in ${rate.resetSeconds} s.`,
        null,
        {
          'Retry-After': String(rate.resetSeconds),
        },
      );
    return check;
  };

  app.post<{ Params: { token: string }; Body: { network: string; payer: string } }>(
    '/s/:token/grant/offer',
    { schema: { body: OfferBody } },
    async (req) => kasse.subscriptions.grants.offer(await jsonGuard(req), req.body.network, req.body.payer),
  );

  app.post<{ Params: { token: string }; Body: GrantBody }>(
    '/s/:token/grant',
    { schema: { body: GrantBodySchema } },
    async (req, reply) => {
      const check = await jsonGuard(req);
      const subscription = await kasse.subscriptions.grants.submit(check, req.body, customerActor(req.ip ?? null));
      return reply.code(202).send({ grant: subscription.grant, status: 'pending' });
    },
  );

  app.post<{ Params: { token: string } }>('/s/:token/revoke/offer', async (req) => ({
    sign: await kasse.subscriptions.grants.revokeOffer(await jsonGuard(req)),
  }));

  app.post<{ Params: { token: string }; Body: { signatures: Record<string, unknown> } }>(
    '/s/:token/revoke',
    { schema: { body: RevokeBody } },
    async (req) => {
      const check = await jsonGuard(req);
      const subscription = await kasse.subscriptions.grants.revoke(
        check,
        req.body.signatures,
        customerActor(req.ip ?? null),
      );
      return { grant: subscription.grant };
    },
  );

  app.get<{ Params: { token: string }; Querystring: { done?: string } }>('/s/:token', async (req, reply) => {
    const check = kasse.subscriptionLinks.verify(req.params.token, kasse.clock.now());
    if (!check.ok) return refused(reply, pageLocale(req), check.reason);
    const view = await kasse.subscriptions.forCustomer(check);
    if (!view) return refused(reply, pageLocale(req), 'missing');
    const l = pageLocale(req, view.subscription.locale);
    const notice = req.query.done === 'cancelled' ? t(l, 'sub.cancel_done') : undefined;
    return customerPage(reply, 200, l, req.params.token, check, view, { notice, picked: pickedLocale(req) });
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
      return customerPage(reply, e.status, l, req.params.token, check, view, {
        error: message,
        picked: pickedLocale(req, bodyLang(req)),
      });
    }
  });
};

export default subscriptionRoutes;
