/**
 * Payer-facing languages: the supported locales, their message catalogs (ICU MessageFormat through
 * `intl-messageformat`: plurals and placeholders, never sentences glued together), negotiation from a payment's
 * `locale` or the browser's `Accept-Language`, and the `Intl` formats every payer page and email uses (money, numbers,
 * dates, countdowns). The API's own error messages stay English; pages translate them (src/web/payer-text.ts).
 */
import { IntlMessageFormat } from 'intl-messageformat';
import { invalid } from '../errors.ts';
import de from './catalogs/de.ts';
import en, { type MessageKey } from './catalogs/en.ts';
import es from './catalogs/es.ts';
import fr from './catalogs/fr.ts';
import hi from './catalogs/hi.ts';
import id from './catalogs/id.ts';
import ptBR from './catalogs/pt-BR.ts';
import tr from './catalogs/tr.ts';
import vi from './catalogs/vi.ts';
import zhCN from './catalogs/zh-CN.ts';

export type { MessageKey };

/** Every language a payer page and email speaks, English first (the default). */
export const LOCALES = ['en', 'es', 'pt-BR', 'fr', 'de', 'hi', 'id', 'tr', 'vi', 'zh-CN'] as const;
export type Locale = (typeof LOCALES)[number];
export const DEFAULT_LOCALE: Locale = 'en';

/** A catalog: message key → ICU message. English defines the keys; a unit test holds the others to them. */
export type Catalog = Readonly<Record<string, string>>;

export const CATALOGS: Readonly<Record<Locale, Catalog>> = {
  en,
  es,
  'pt-BR': ptBR,
  fr,
  de,
  hi,
  id,
  tr,
  vi,
  'zh-CN': zhCN,
};

/** Each language's name in itself, for the language switcher. */
export const LANGUAGE_NAMES: Readonly<Record<Locale, string>> = {
  en: 'English',
  es: 'Español',
  'pt-BR': 'Português (Brasil)',
  fr: 'Français',
  de: 'Deutsch',
  hi: 'हिन्दी',
  id: 'Bahasa Indonesia',
  tr: 'Türkçe',
  vi: 'Tiếng Việt',
  'zh-CN': '简体中文',
};

/** Languages written right to left (none ships yet; the pages' CSS uses logical properties so one can). */
const RTL = new Set(['ar', 'fa', 'he', 'ur']);

/** `rtl` or `ltr` for `<html dir>`. */
export const dirOf = (locale: string): 'rtl' | 'ltr' => (RTL.has(locale.split('-')[0]!.toLowerCase()) ? 'rtl' : 'ltr');

/** The supported locale a tag names exactly (any letter case), or null: what the API accepts as `locale`. */
export function supportedLocale(tag: string): Locale | null {
  const lower = tag.toLowerCase();
  return LOCALES.find((l) => l.toLowerCase() === lower) ?? null;
}

/**
 * A `locale` the API was given, in its canonical spelling (`pt-br` → `pt-BR`); anything not on the supported list is
 * 400 `invalid_request` naming the field and listing the supported tags.
 */
export function localeParam(value: unknown, param = 'locale'): Locale {
  const found = typeof value === 'string' ? supportedLocale(value) : null;
  if (!found) throw invalid(`${param} must be one of the supported languages: ${LOCALES.join(', ')}`, param);
  return found;
}

/** The supported locale closest to a tag: exact, else by language (`pt` and `pt-PT` → pt-BR, `zh` → zh-CN, `de-AT` → de). */
export function matchLocale(tag: string): Locale | null {
  const exact = supportedLocale(tag);
  if (exact) return exact;
  const language = tag.split('-')[0]!.toLowerCase();
  return LOCALES.find((l) => l.split('-')[0]!.toLowerCase() === language) ?? null;
}

/**
 * The best supported locale for an `Accept-Language` header (RFC 9110 §12.5.4: q-values, `q=0` refuses, equal
 * weights keep the header's order), or null when nothing matches.
 */
export function negotiate(header: string | undefined | null): Locale | null {
  if (!header) return null;
  const ranges = header
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/i.exec(p)).find((m) => m);
      return { tag: tag.trim(), q: q ? Number(q[1]) : 1, i };
    })
    .filter((r) => r.tag !== '' && r.tag !== '*' && r.q > 0 && /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(r.tag))
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const r of ranges) {
    const found = matchLocale(r.tag);
    if (found) return found;
  }
  return null;
}

/** The page's locale: the payer's explicit choice, else the payment's `locale`, else `Accept-Language`, else English. */
export function chooseLocale(o: { asked?: unknown; stored?: string | null; acceptLanguage?: string }): Locale {
  const asked = typeof o.asked === 'string' && o.asked.length <= 35 ? supportedLocale(o.asked) : null;
  return asked ?? (o.stored ? supportedLocale(o.stored) : null) ?? negotiate(o.acceptLanguage) ?? DEFAULT_LOCALE;
}

const compiled = new Map<string, IntlMessageFormat>();

/** The message `key` in `locale`, its placeholders filled (numbers and plurals formatted for the locale). */
export function t(locale: Locale, key: MessageKey, values?: Record<string, string | number>): string {
  const id = `${locale}\u0000${key}`;
  let f = compiled.get(id);
  if (!f) {
    f = new IntlMessageFormat(CATALOGS[locale][key] ?? en[key], intlLocale(locale));
    compiled.set(id, f);
  }
  return String(f.format(values));
}

/** The locale `Intl` formats with: English dates read "1 March 2026", as they always have. */
const intlLocale = (locale: Locale) => (locale === 'en' ? 'en-GB' : locale);

const cache = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();
function cached<T extends Intl.NumberFormat | Intl.DateTimeFormat>(id: string, make: () => T): T {
  let f = cache.get(id) as T | undefined;
  if (!f) {
    f = make();
    cache.set(id, f);
  }
  return f;
}

/** US cents as the locale writes dollars: "$1,234.50", "1.234,50 $", "US$ 1.234,50". */
export function money(locale: Locale, cents: number): string {
  const f = cached(`usd ${locale}`, () => new Intl.NumberFormat(locale, { style: 'currency', currency: 'USD' }));
  return f.format(cents / 100);
}

/** A whole number as the locale writes it. */
export function integer(locale: Locale, n: number): string {
  return cached(`int ${locale}`, () => new Intl.NumberFormat(locale, { maximumFractionDigits: 0 })).format(n);
}

/** "1 March 2026" (UTC) in the locale. */
export function day(locale: Locale, d: Date): string {
  const f = cached(
    `day ${locale}`,
    () =>
      new Intl.DateTimeFormat(intlLocale(locale), { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' }),
  );
  return f.format(d);
}

/** "1 March 2026, 12:00 UTC" in the locale: a day and a 24-hour time, always in UTC (the same for every payer). */
export function moment(locale: Locale, d: Date): string {
  const time = cached(
    `time ${locale}`,
    () =>
      new Intl.DateTimeFormat(intlLocale(locale), {
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
        timeZone: 'UTC',
      }),
  );
  return t(locale, 'fmt.moment', { date: day(locale, d), time: time.format(d) });
}

/** A countdown "9:05" (minutes and seconds), its digits in the locale's numbering system. */
export function countdownText(locale: Locale, seconds: number): string {
  const two = cached(
    `2d ${locale}`,
    () => new Intl.NumberFormat(locale, { minimumIntegerDigits: 2, useGrouping: false }),
  );
  return `${integer(locale, Math.floor(seconds / 60))}:${two.format(seconds % 60)}`;
}

/** "BTC, ETH and USDC" in the locale. */
export function list(locale: Locale, items: string[]): string {
  return new Intl.ListFormat(intlLocale(locale), { style: 'long', type: 'conjunction' }).format(items);
}
