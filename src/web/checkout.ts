/**
 * The hosted checkout on the checkout host, for payers (no key):
 *
 *   GET  /p/<id>           the page: coin picker, then address, amount, QR code and countdown, then the outcome
 *   POST /p/<id>/attempts  choose a coin (JSON → 201 / Error body; a no-JS form post → 303 back to the page)
 *   GET  /p/<id>/events    server-sent events: the page's `main` re-rendered whenever the stored payment changes
 *
 * Everything goes through the payments service; the payment id (unguessable) is the payer's capability. Public
 * answers never include the merchant's metadata.
 */
import type { FastifyReply } from 'fastify';
import { ApiError, invalid, invalidState, notFound } from '../core/errors.ts';
import type { Kasse } from '../kasse.ts';
import { sendError } from '../http/frame.ts';
import { payerActor } from '../modules/audit/index.ts';
import type { Payment, PublicPayment } from '../modules/payments/index.ts';
import {
  checkoutMain,
  checkoutPage,
  coinOptions,
  FINAL_STATUSES,
  phaseOf,
  posMain,
  quietStatus,
  statusLine,
  unpricedSymbols,
  viewKey,
  type CheckoutContext,
  type CoinOption,
} from './checkout-view.ts';
import { checkoutScripts, walletButtons } from './extensions.ts';
import { PaymentWatch } from './live.ts';
import {
  addFormParser,
  asApiError,
  assertSameOrigin,
  bodyFields,
  isJson,
  messagePage,
  sendPage,
  type Framing,
} from './page.ts';
import { payerMessage } from './payer-text.ts';
import { t, type Locale } from '../core/i18n/index.ts';
import { langQuery, pageLocale, pickedLocale } from './lang.ts';
import type { CheckoutRoute } from './routes.ts';

interface PageQuery {
  lang?: string;
  embed?: string;
  origin?: string;
  error?: string;
}

/** The merchant page's origin as checkout.js passes it, or null when absent or not an origin. */
function parentOrigin(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 300) return null;
  try {
    const u = new URL(value);
    return (u.protocol === 'https:' || u.protocol === 'http:') && u.origin === value ? value : null;
  } catch {
    return null;
  }
}

const framing = (found: PublicPayment): Framing => found.mode;

/** Coins the payer may choose for this payment now, and those left out for want of a price (only when the page shows a picker). */
async function coinsFor(kasse: Kasse, found: PublicPayment): Promise<{ coins: CoinOption[]; unpriced: string[] }> {
  const p = found.payment;
  const phase = phaseOf(p);
  if (p.status !== 'waiting' || (phase !== 'pick' && phase !== 'pay')) return { coins: [], unpriced: [] };
  const currencies = await kasse.payments.catalogue.currencies(found.mode);
  const offered = coinOptions(kasse.chains, found.mode, currencies, p.price_amount);
  return {
    // A held payment is paid only in coins that can be held (docs/capture.md).
    coins: p.authorization ? offered.filter((c) => kasse.chains.holdable(found.mode, c.token)) : offered,
    unpriced: unpricedSymbols(currencies),
  };
}

async function context(
  kasse: Kasse,
  found: PublicPayment,
  q: { locale: Locale; picked?: Locale | null; embed: boolean; origin: string | null; error?: string | null },
): Promise<CheckoutContext> {
  return {
    locale: q.locale,
    picked: q.picked ?? null,
    ...(await coinsFor(kasse, found)),
    closed: !kasse.chains.anyAvailable(found.mode),
    payment: found.payment,
    mode: found.mode,
    merchantName: found.merchantName,
    brand: await kasse.merchants.brands.of(found.merchantId),
    chains: kasse.chains,
    now: kasse.clock.now(),
    embed: q.embed,
    parentOrigin: q.origin,
    error: q.error ?? null,
    walletButtons: (choice) => walletButtons(kasse, choice),
    scripts: checkoutScripts(kasse),
  };
}

function notFoundPage(reply: FastifyReply, l: Locale) {
  return sendPage(reply, 404, messagePage(l, t(l, 'page.payment_not_found'), t(l, 'page.payment_not_found_text')));
}

/** The fields of the public answer to choosing a coin: the payment's state and the new coin choice, no metadata. */
function publicAttempt(p: Payment) {
  const a = p.attempts[p.attempts.length - 1]!;
  return {
    payment_id: p.id,
    status: p.status,
    attempt: {
      id: a.id,
      chain: a.chain,
      token: a.token,
      symbol: a.symbol,
      address: a.address,
      pay_amount: a.pay_amount,
      pay_amount_display: a.pay_amount_display,
      expires_at: a.expires_at,
      uri: a.uri,
    },
  };
}

const checkoutRoutes: CheckoutRoute = async (app, { kasse }) => {
  addFormParser(app);
  const watch = new PaymentWatch(kasse);
  const streams = new Set<FastifyReply>();
  app.addHook('preClose', async () => {
    watch.stop();
    for (const s of streams) s.raw.end();
  });

  app.get<{ Params: { id: string }; Querystring: PageQuery }>('/p/:id', async (req, reply) => {
    const found = await kasse.payments.reader.publicPayment(req.params.id);
    if (!found) return notFoundPage(reply, pageLocale(req));
    const embed = req.query.embed === '1';
    const ctx = await context(kasse, found, {
      locale: pageLocale(req, found.payment.locale),
      picked: pickedLocale(req),
      embed,
      origin: embed ? parentOrigin(req.query.origin) : null,
      error: null,
    });
    return sendPage(reply, 200, await checkoutPage(ctx), framing(found));
  });

  app.post<{ Params: { id: string } }>('/p/:id/attempts', async (req, reply) => {
    const json = isJson(req);
    const fields = bodyFields(req, ['token', 'chain', 'embed', 'origin', 'lang']);
    let locale = pageLocale(req, null, fields.lang);
    const embed = fields.embed === '1';
    const origin = embed ? parentOrigin(fields.origin) : null;
    let found: PublicPayment | null = null;
    try {
      assertSameOrigin(req, kasse.urls.checkout);
      found = await kasse.payments.reader.publicPayment(req.params.id);
      if (!found) throw notFound('payment');
      locale = pageLocale(req, found.payment.locale, fields.lang);
      const token = fields.token;
      if (typeof token !== 'string' || token.length === 0 || token.length > 64)
        throw invalid('token is required', 'token');
      if (fields.chain !== undefined && typeof fields.chain !== 'string')
        throw invalid('chain must be a string', 'chain');
      if (found.payment.status !== 'waiting')
        throw invalidState(`This payment is ${found.payment.status}; no coin can be chosen now.`);
      const payment = await kasse.payments.createAttempt(
        { mode: found.mode, merchantId: found.merchantId },
        found.payment.id,
        { token, ...(typeof fields.chain === 'string' ? { chain: fields.chain } : {}) },
        payerActor(req.ip),
      );
      if (json) return reply.code(201).send(publicAttempt(payment));
      const q = embed ? `?embed=1${origin ? `&origin=${encodeURIComponent(origin)}` : ''}` : '';
      return reply
        .code(303)
        .header('location', `/p/${payment.id}${q}${langQuery(req, q === '', fields.lang)}`)
        .send();
    } catch (err) {
      const api = asApiError(err);
      // The page's script shows the message to the payer as it is, so both answers carry the payer's wording.
      const e = new ApiError(api.code, payerMessage(locale, api), api.param, api.headers);
      if (json) return sendError(reply, e);
      if (!found)
        return e.status === 404
          ? notFoundPage(reply, locale)
          : sendPage(reply, e.status, messagePage(locale, t(locale, 'page.wrong'), e.message));
      const fresh = (await kasse.payments.reader.publicPayment(found.payment.id)) ?? found;
      const ctx = await context(kasse, fresh, {
        locale,
        picked: pickedLocale(req, fields.lang),
        embed,
        origin,
        error: e.message,
      });
      return sendPage(reply, e.status, await checkoutPage(ctx), framing(fresh));
    }
  });

  app.get<{
    Params: { id: string };
    Querystring: { view?: string; fp?: string; embed?: string; slug?: string; lang?: string };
  }>('/p/:id/events', async (req, reply) => {
    const id = req.params.id;
    const first = await kasse.payments.reader.publicPayment(id);
    if (!first) return sendError(reply, notFound('payment'));
    const view = req.query.view === 'pos' ? 'pos' : 'checkout';
    const embed = req.query.embed === '1';
    const slug = typeof req.query.slug === 'string' && /^[0-9a-z]{12}$/.test(req.query.slug) ? req.query.slug : '';
    const locale = pageLocale(req, first.payment.locale);
    let lastKey = typeof req.query.fp === 'string' ? req.query.fp : '';
    // Behind EventSource's automatic reconnect (retry), a restarted server resumes the stream from the stored state.
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
      'content-security-policy': "default-src 'none'",
      'x-content-type-options': 'nosniff',
    });
    res.write('retry: 2000\n\n');
    streams.add(reply);

    let busy = false;
    let again = false;
    const push = async (): Promise<void> => {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      try {
        do {
          again = false;
          const found = await kasse.payments.reader.publicPayment(id);
          if (!found || res.writableEnded) return;
          const key = viewKey(found.payment);
          if (key === lastKey) continue;
          lastKey = key;
          const p = found.payment;
          const main =
            view === 'pos'
              ? await posMain({
                  locale,
                  picked: pickedLocale(req),
                  payment: p,
                  mode: found.mode,
                  linkTitle: '',
                  slug,
                  now: kasse.clock.now(),
                })
              : await checkoutMain(
                  await context(kasse, found, { locale, picked: pickedLocale(req), embed, origin: null }),
                );
          const data = {
            fp: key,
            status: p.status,
            phase: phaseOf(p),
            say: statusLine(locale, p, view),
            quiet: quietStatus(p, view),
            final: FINAL_STATUSES.includes(p.status),
            redirect: view === 'checkout' && !embed ? p.success_url : null,
            html: main.value,
          };
          res.write(`event: state\ndata: ${JSON.stringify(data)}\n\n`);
        } while (again);
      } catch (err) {
        kasse.log.warn({ err, paymentId: id }, 'checkout status push failed');
      } finally {
        busy = false;
      }
    };
    const unsubscribe = watch.subscribe(id, () => void push());
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), 20_000);
    heartbeat.unref();
    req.raw.on('close', () => {
      clearInterval(heartbeat);
      unsubscribe();
      streams.delete(reply);
    });
    await push();
  });
};

export default checkoutRoutes;
