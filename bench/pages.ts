/**
 * Weight and first render of the payer-facing pages, measured in headless Chromium (the flags from ENVIRONMENT.md):
 * the checkout (coin picker, and address + QR after a choice), a fixed-price link page and the POS terminal.
 *
 * Bytes: what crosses the wire for JavaScript and CSS (gzip, as the checkout host serves them) and for the HTML
 * document (`html_wire`, gzipped above 1 KiB; `html_bytes` uncompressed). Time: first-contentful-paint from the Performance API,
 * median of cold loads (a fresh browser context each, so nothing is cached), plus the server's time to first byte.
 * The app runs in this process on a throwaway embedded PostgreSQL with local price servers.
 *
 * `languages`: the checkout (coin picker, and address + QR) in every supported language (`?lang=`), fewer loads each
 * (`BENCH_LANG_LOADS`, default 3): only the page's own language travels, so the weight barely moves between them.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/core/log.ts';
import { Kasse } from '../src/kasse.ts';
import { OPERATOR } from '../src/modules/audit/index.ts';
import { startListeners } from '../src/server.ts';
import { LOCALES } from '../src/core/i18n/index.ts';
import { CHROMIUM_ARGS } from '../test/harness/browser.ts';
import { testSecrets } from '../test/harness/app.ts';
import { startBinanceServer, startCoinGeckoServer } from '../test/harness/price-servers.ts';
import { servedAssetSizes } from './_assets.ts';
import { benchDatabase } from './_pg.ts';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.floor(s.length / 2)]! * 10) / 10;
};

export async function run(): Promise<object> {
  const loads = Number(process.env.BENCH_LOADS ?? 9);
  const pg = await benchDatabase();
  const coingecko = await startCoinGeckoServer();
  const binance = await startBinanceServer();
  coingecko.setPrice('ethereum', 3000);
  coingecko.setPrice('solana', 150);
  coingecko.setPrice('polygon-ecosystem-token', 0.5);
  const config = loadConfig({
    KASSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'kasse-bench-data-')),
    KASSE_LIVE_PORT: '0',
    KASSE_TEST_PORT: '0',
    KASSE_CHECKOUT_PORT: '0',
    KASSE_LOG_LEVEL: 'silent',
    KASSE_COINGECKO_URL: coingecko.url,
    KASSE_BINANCE_URL: binance.url,
  });
  const kasse = await Kasse.open({ config, databaseUrl: pg.url, secrets: testSecrets(), log: createLogger('silent') });
  const listeners = await startListeners(kasse);
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
  try {
    const m = await kasse.merchants.create({ name: 'Corner Café', webhookUrl: null });
    const picker = (
      await kasse.payments.create(
        { mode: 'test', merchantId: m.merchant_id },
        {
          price_amount: 1234,
          price_currency: 'USD',
          order_id: 'b1',
          description: 'Two flat whites',
        },
        undefined,
        OPERATOR,
      )
    ).payment;
    const address = (
      await kasse.payments.create(
        { mode: 'test', merchantId: m.merchant_id },
        {
          price_amount: 1234,
          price_currency: 'USD',
          order_id: 'b2',
          chain: 'base',
          token: 'base:usdc',
        },
        undefined,
        OPERATOR,
      )
    ).payment;
    const fixed = await kasse.links.create(
      { mode: 'test', merchantId: m.merchant_id },
      {
        kind: 'fixed',
        title: 'Espresso beans',
        description: '250 g',
        amount_usd_cents: 1500,
      },
      OPERATOR,
    );
    const pos = await kasse.links.create(
      { mode: 'test', merchantId: m.merchant_id },
      { kind: 'pos', title: 'Counter 1' },
      OPERATOR,
    );
    // The POS terminal is for signed-in staff: a member's session cookie.
    const staff = await kasse.users.team.create({
      merchantId: m.merchant_id,
      email: 'till@example.com',
      role: 'member',
      actor: { type: 'operator', id: null, ip: null },
      invite: false,
    });
    const { session } = await kasse.users.links.redeemToken(
      staff.setup_url.split('/').pop()!,
      'setup',
      'bench-till-passphrase-1',
      { ip: null, userAgent: null },
    );
    const pages = {
      checkout_picker: picker.checkout_url,
      checkout_address: address.checkout_url,
      link_fixed: fixed.url,
      pos_terminal: pos.url,
    };

    /** Median first paint and the weight of `url` over `n` cold loads (after one warm-up). */
    const measure = async (url: string, n: number, signedIn = false) => {
      const fcp: number[] = [];
      const ttfb: number[] = [];
      let weight = { html_bytes: 0, html_wire: 0, js_gzip: 0, css_gzip: 0, requests: 0 };
      for (let i = 0; i < n + 1; i++) {
        const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
        if (signedIn)
          await context.addCookies([{ name: 'kasse_session', value: session.token, url: kasse.urls.checkout }]);
        const page = await context.newPage();
        await page.goto(url, { waitUntil: 'load' });
        await page.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0);
        const t = await page.evaluate(() => {
          const nav = performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming;
          const paint = performance.getEntriesByName('first-contentful-paint')[0]!;
          const res = performance.getEntriesByType('resource') as PerformanceResourceTiming[];
          return {
            fcp: paint.startTime,
            ttfb: nav.responseStart - nav.requestStart,
            html: nav.encodedBodySize,
            htmlRaw: nav.decodedBodySize,
            js: res.filter((r) => r.initiatorType === 'script').reduce((s, r) => s + r.encodedBodySize, 0),
            css: res.filter((r) => r.initiatorType === 'link').reduce((s, r) => s + r.encodedBodySize, 0),
            requests: res.length + 1,
          };
        });
        await context.close();
        if (i === 0) continue; // warm-up: JIT, database pool, price cache
        fcp.push(t.fcp);
        ttfb.push(t.ttfb);
        weight = { html_bytes: t.htmlRaw, html_wire: t.html, js_gzip: t.js, css_gzip: t.css, requests: t.requests };
      }
      return {
        ...weight,
        fcp_ms_median: median(fcp),
        fcp_ms_min: Math.round(Math.min(...fcp) * 10) / 10,
        ttfb_ms_median: median(ttfb),
      };
    };

    const result: Record<string, unknown> = {};
    for (const [name, url] of Object.entries(pages)) result[name] = await measure(url, loads, name === 'pos_terminal');
    const langLoads = Number(process.env.BENCH_LANG_LOADS ?? 3);
    const languages: Record<string, unknown> = {};
    for (const l of LOCALES) {
      languages[l] = {
        checkout_picker: await measure(`${picker.checkout_url}?lang=${l}`, langLoads),
        checkout_address: await measure(`${address.checkout_url}?lang=${l}`, langLoads),
      };
    }
    return {
      loads_per_page: loads,
      viewport: '390x844',
      pages: result,
      languages: { loads_per_page: langLoads, pages: languages },
      assets: await servedAssetSizes(kasse),
    };
  } finally {
    await browser.close();
    await listeners.close();
    await kasse.close();
    await coingecko.close();
    await binance.close();
    await pg.stop();
  }
}
