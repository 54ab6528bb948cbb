/**
 * What every page of the checkout host shares: an HTML template tag that escapes every interpolated value unless it
 * is already `Html` (so a merchant's title can only ever become text), the page frame (one stylesheet, one script,
 * both from this host), the Content-Security-Policy, and the helpers the payer-facing POST endpoints share (form
 * bodies, same-origin check, JSON-or-HTML answers, QR codes).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { gzipSync } from 'node:zlib';
import { ApiError, invalid } from '../core/errors.ts';
import { loadOnce } from '../core/lazy.ts';
import { formatCents } from '../core/money.ts';
import { escapeHtml, Html, html, raw } from '../core/html.ts';
import { assetUrl } from './assets.ts';
import { brandHead, brandLogo, type MerchantBrand } from './brand.ts';
import { dirOf, type Locale, t } from '../core/i18n/index.ts';
import { clientText, switcher } from './lang.ts';

export { Html, html, raw };

/** The start of every page's head (checkout and dashboard): charset, viewport, no referrer, not indexed, no icon. */
export const PAGE_HEAD = raw(`<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<link rel="icon" href="data:,">`);

/** "$12.34" for 1234 cents. */
export const usd = (cents: number) => `$${formatCents(cents).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;

/**
 * `frame-ancestors`: payment pages may be framed by the checkout.js modal on any https site (and any http site for test
 * payments, so merchants can develop on localhost); every other page by nobody.
 */
export type Framing = 'none' | 'live' | 'test';

export function contentSecurityPolicy(framing: Framing): string {
  const ancestors = framing === 'none' ? "'none'" : framing === 'live' ? 'https:' : 'https: http:';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    `frame-ancestors ${ancestors}`,
    "base-uri 'none'",
  ].join('; ');
}

export interface PageOptions {
  /** The page's language: `<html lang dir>`, the test banner, and the few strings pay.js shows. */
  locale: Locale;
  title: string;
  body: Html;
  /** Extra head markup (no-JS refreshes). */
  head?: Html;
  /** Attributes for <html> (data-embed, data-parent-origin), already escaped by `html`. */
  rootAttrs?: Html;
  /** Test-mode banner. */
  test?: boolean;
  /** Further scripts (asset names) loaded after the page's own, in order: the chain families' wallet scripts. */
  scripts?: readonly string[];
  /** The merchant's colour and logo (brand.ts). */
  brand?: MerchantBrand | null;
}

/** A whole document: one stylesheet and deferred scripts from this host, nothing inline. */
export function renderPage(o: PageOptions): string {
  return html`<!doctype html>
<html lang="${o.locale}" dir="${dirOf(o.locale)}" data-text="${clientText(o.locale)}"${o.rootAttrs ?? ''}>
<head>
${PAGE_HEAD}
<title>${o.title}</title>
<link rel="stylesheet" href="${assetUrl('kasse.css')}">
${brandHead(o.brand)}<script src="${assetUrl('pay.js')}" defer></script>
${(o.scripts ?? []).map((name) => html`<script src="${assetUrl(name)}" defer></script>\n`)}${o.head ?? ''}</head>
<body>
${o.test ? html`<p class="k-test">${t(o.locale, 'page.test_mode')}</p>\n` : ''}${brandLogo(o.brand)}${o.body}
</body>
</html>
`.value;
}

/** Sends an HTML page (gzipped when the browser accepts it) with the security headers every page carries. */
export function sendPage(reply: FastifyReply, status: number, doc: string, framing: Framing = 'none'): FastifyReply {
  reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', contentSecurityPolicy(framing))
    .header('cache-control', 'no-store')
    .header('vary', 'Accept-Encoding');
  if (doc.length > 1024 && /\bgzip\b/.test(String(reply.request.headers['accept-encoding'] ?? ''))) {
    return reply.header('content-encoding', 'gzip').send(gzipSync(doc));
  }
  return reply.send(doc);
}

/** A page that only says something (unknown payment, link turned off, …), with the language switcher. */
export function messagePage(locale: Locale, title: string, message: string, extra?: Html): string {
  return renderPage({
    locale,
    title: `${title} · Kasse`,
    body: html`<main class="k-card k-message"><h1>${title}</h1><p>${message}</p>${extra ?? ''}${switcher(locale)}</main>`,
  });
}

/** Accepts `application/x-www-form-urlencoded` bodies (no-JS form posts) in this plugin's routes. */
export function addFormParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    const out: Record<string, string> = {};
    for (const [k, v] of new URLSearchParams(body as string)) out[k] = v;
    done(null, out);
  });
}

/** Whether the request body came as JSON (answer JSON with the Error body) rather than a form (answer HTML). */
export function isJson(req: FastifyRequest): boolean {
  return (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/json');
}

/**
 * Refuses a state-changing request another site made the payer's browser send (a cross-site form post). Browsers
 * say where a request came from in `Sec-Fetch-Site`; without it, a present `Origin` must be this host (pages send no
 * referrer, so older browsers say `null` for our own forms, which passes). Non-browser clients send neither and pass.
 */
export function assertSameOrigin(req: FastifyRequest, checkoutBase: string): void {
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  const ok =
    site !== undefined
      ? site === 'same-origin' || site === 'none'
      : origin === undefined ||
        origin === 'null' ||
        origin === `${req.protocol}://${req.host}` ||
        origin === new URL(checkoutBase).origin;
  if (!ok) throw invalid('Cross-site requests are not accepted here.', 'Origin');
}

/** Fields of a JSON body (an object of known keys only) or of a form body. 400 for anything else. */
export function bodyFields(req: FastifyRequest, known: readonly string[]): Record<string, unknown> {
  const body = req.body;
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid('The request body must be a JSON object.');
  for (const k of Object.keys(body)) if (!known.includes(k)) throw invalid(`${k} is not a known property`, k);
  return body as Record<string, unknown>;
}

/** An ApiError for anything thrown by a service; other errors propagate to the 500 handler. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  throw err;
}

/** qrcode, loaded at the first code drawn. */
const qrcode = loadOnce(() => import('qrcode').then((m) => m.default));

/** An inline SVG QR code of `text` (our own markup: qrcode emits only paths), labelled for screen readers. */
export async function qrSvg(text: string, label: string): Promise<Html> {
  const svg = await (await qrcode()).toString(text, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' });
  return raw(svg.replace('<svg ', `<svg class="k-qr" role="img" aria-label="${escapeHtml(label)}" `));
}
