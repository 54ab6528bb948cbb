/**
 * The language of a checkout-host page: chosen per request (the payer's pick from the switcher, `?lang=`; else the
 * payment's, link's or subscription's `locale`; else `Accept-Language`; else English — src/core/i18n), the switcher
 * itself (a plain GET form: works without JavaScript, no inline script), and the few strings pay.js shows, sent as
 * a JSON data block of the page's language only.
 */
import type { FastifyRequest } from 'fastify';
import { chooseLocale, LANGUAGE_NAMES, LOCALES, type Locale, supportedLocale, t } from '../core/i18n/index.ts';
import { html, type Html } from '../core/html.ts';

/** The page's language for this request; `stored` is the payment's, link's or subscription's `locale`. */
export function pageLocale(req: FastifyRequest, stored?: string | null, asked?: unknown): Locale {
  const query = (req.query ?? {}) as Record<string, unknown>;
  return chooseLocale({
    asked: asked ?? query.lang,
    stored,
    acceptLanguage: req.headers['accept-language'],
  });
}

/** The language the payer picked on the switcher (`?lang=`, or a form's `lang`), or null when none was. */
export function pickedLocale(req: FastifyRequest, asked?: unknown): Locale | null {
  const value = asked ?? ((req.query ?? {}) as Record<string, unknown>).lang;
  return typeof value === 'string' ? supportedLocale(value) : null;
}

/** `?lang=xx` (or `&lang=xx` after other parameters) when the payer picked a language, so it survives redirects. */
export function langQuery(req: FastifyRequest, first: boolean, asked?: unknown): string {
  const l = pickedLocale(req, asked);
  return l ? `${first ? '?' : '&'}lang=${l}` : '';
}

/**
 * The language switcher: a GET form back to `action` (the page's own address when omitted), with `hidden` fields
 * the page needs kept (the modal's embed flag and parent origin).
 */
export function switcher(locale: Locale, action?: string, hidden: Record<string, string> = {}): Html {
  return html`<form class="k-lang" method="get"${action ? html` action="${action}"` : ''}>${Object.entries(hidden).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}<label for="k-lang">${t(locale, 'page.language')}</label><select id="k-lang" name="lang">${LOCALES.map(
    (l) => html`<option value="${l}" lang="${l}"${l === locale ? html` selected` : ''}>${LANGUAGE_NAMES[l]}</option>`,
  )}</select><button type="submit" class="k-small">${t(locale, 'page.change_language')}</button></form>`;
}

/** A hidden form field carrying the payer's pick of language (if any) through a form post. */
export function langField(picked: Locale | null | undefined): Html | string {
  return picked ? html`<input type="hidden" name="lang" value="${picked}">` : '';
}

/**
 * The strings pay.js and checkout.js show, in the page's language only, as JSON in an attribute of `<html>`
 * (`data-text`, escaped like any attribute): no inline script, so the strict CSP and the rule that a page carries no
 * script element without `src` both hold.
 */
export function clientText(locale: Locale): string {
  return JSON.stringify({
    lang: locale,
    copied: t(locale, 'send.copied'),
    over: t(locale, 'status.hold_over'),
    network: t(locale, 'err.network'),
    charge: t(locale, 'pos.charge'),
    chargeAmount: t(locale, 'pos.charge_amount', { amount: '{amount}' }),
    enterFirst: t(locale, 'pos.enter_first'),
    close: t(locale, 'checkout.close_modal'),
    dialog: t(locale, 'checkout.modal'),
    walletFailed: t(locale, 'wallet.failed'),
    walletSent: t(locale, 'wallet.sent'),
    walletNotSent: t(locale, 'wallet.not_sent'),
    walletSigned: t(locale, 'wallet.signed'),
    walletAuthorizing: t(locale, 'wallet.authorizing'),
    walletNoAccount: t(locale, 'wallet.no_account'),
    walletSending: t(locale, 'wallet.sending'),
  });
}
