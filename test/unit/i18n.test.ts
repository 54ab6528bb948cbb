/**
 * Payer languages (src/core/i18n): every catalog has exactly English's keys, parses as ICU MessageFormat, and uses
 * no placeholder English lacks; negotiation honours q-values and maps languages to the supported regional forms;
 * amounts, dates and countdowns come out of `Intl` in the page's language.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IntlMessageFormat } from 'intl-messageformat';
import {
  CATALOGS,
  chooseLocale,
  countdownText,
  day,
  dirOf,
  LOCALES,
  type Locale,
  moment,
  money,
  negotiate,
  supportedLocale,
  t,
} from '../../src/core/i18n/index.ts';

/** Names of the arguments a message uses, at any depth (inside plural and select branches too). */
function argumentsOf(message: string, locale: string): Set<string> {
  const names = new Set<string>();
  const walk = (nodes: unknown[]): void => {
    for (const n of nodes as Array<{ type: number; value?: string; options?: Record<string, { value: unknown[] }> }>) {
      if (n.type !== 0 && n.type !== 7 && typeof n.value === 'string') names.add(n.value); // 0 literal, 7 pound
      for (const o of Object.values(n.options ?? {})) walk(o.value);
    }
  };
  walk(new IntlMessageFormat(message, locale).getAst());
  return names;
}

test('every catalog has every key English has, and nothing else', () => {
  const english = Object.keys(CATALOGS.en).sort();
  for (const l of LOCALES) {
    const keys = Object.keys(CATALOGS[l]).sort();
    assert.deepEqual(
      english.filter((k) => !keys.includes(k)),
      [],
      `${l} lacks keys`,
    );
    assert.deepEqual(
      keys.filter((k) => !english.includes(k)),
      [],
      `${l} has keys English does not`,
    );
  }
});

test('every message parses as ICU and carries no placeholder English does not', () => {
  const problems: string[] = [];
  for (const l of LOCALES) {
    for (const [key, message] of Object.entries(CATALOGS[l])) {
      let mine: Set<string>;
      try {
        mine = argumentsOf(message, l);
      } catch (err) {
        problems.push(`${l} ${key}: ${(err as Error).message}`);
        continue;
      }
      const english = argumentsOf(CATALOGS.en[key]!, 'en');
      for (const name of mine) if (!english.has(name)) problems.push(`${l} ${key}: {${name}} is not in English`);
    }
  }
  assert.deepEqual(problems, []);
});

test('the placeholder check catches a stray or misspelt placeholder', () => {
  assert.deepEqual([...argumentsOf('Faltan {amout} {symbol}.', 'es')].sort(), ['amout', 'symbol']);
  assert.deepEqual([...argumentsOf('{n, plural, one {# x {y}} other {#}}', 'en')].sort(), ['n', 'y']);
  assert.throws(() => argumentsOf('Pagar {amount', 'es'));
});

test('plurals follow each language’s rules', () => {
  assert.equal(t('en', 'pick.left', { left: 1 }), '1 more choice left.');
  assert.equal(t('en', 'pick.left', { left: 2 }), '2 more choices left.');
  assert.equal(t('fr', 'every.month', { count: 1 }), 'chaque mois');
  assert.equal(t('de', 'every.week', { count: 2 }), 'alle 2 Wochen');
  assert.equal(t('es', 'status.pay', { amount: '0.5', symbol: 'ETH' }), 'Esperando 0.5 ETH.');
});

test('Accept-Language: q-values decide, q=0 refuses, languages map to the supported regional form', () => {
  assert.equal(negotiate('de-CH,de;q=0.9,en;q=0.8'), 'de');
  assert.equal(negotiate('en;q=0.5, fr;q=0.9'), 'fr');
  assert.equal(negotiate('pt'), 'pt-BR');
  assert.equal(negotiate('pt-PT,en;q=0.1'), 'pt-BR');
  assert.equal(negotiate('zh'), 'zh-CN');
  assert.equal(negotiate('zh-cn'), 'zh-CN');
  assert.equal(negotiate('fr;q=0, es'), 'es');
  assert.equal(negotiate('ja, ko;q=0.9'), null);
  assert.equal(negotiate('*'), null);
  assert.equal(negotiate(''), null);
  assert.equal(negotiate('xx;q=abc, vi'), 'vi');
});

test('the page language: the payer’s choice, else the payment’s locale, else Accept-Language, else English', () => {
  assert.equal(chooseLocale({ asked: 'tr', stored: 'es', acceptLanguage: 'de' }), 'tr');
  assert.equal(chooseLocale({ asked: 'nonsense', stored: 'es', acceptLanguage: 'de' }), 'es');
  assert.equal(chooseLocale({ stored: null, acceptLanguage: 'de' }), 'de');
  assert.equal(chooseLocale({ acceptLanguage: 'ja' }), 'en');
  assert.equal(supportedLocale('PT-br'), 'pt-BR');
  assert.equal(supportedLocale('pt'), null);
});

test('money, dates and countdowns through Intl in the page’s language', () => {
  assert.equal(money('en', 123456), '$1,234.56');
  assert.equal(money('de', 123456), '1.234,56\u00a0$');
  assert.equal(money('pt-BR', 123456), 'US$\u00a01.234,56');
  assert.equal(day('en', new Date('2026-03-01T12:00:00Z')), '1 March 2026');
  assert.equal(day('es', new Date('2026-03-01T12:00:00Z')), '1 de marzo de 2026');
  assert.equal(moment('en', new Date('2026-03-01T09:05:00Z')), '1 March 2026, 09:05 UTC');
  assert.equal(countdownText('en', 9 * 60 + 5), '9:05');
  for (const l of LOCALES as readonly Locale[]) assert.match(countdownText(l, 65), /1.05/);
});

test('right-to-left is derived from the language', () => {
  assert.equal(dirOf('en'), 'ltr');
  assert.equal(dirOf('ar-EG'), 'rtl');
  assert.equal(dirOf('he'), 'rtl');
});
