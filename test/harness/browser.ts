/**
 * Real Chromium for web tests: Debian's chromium-headless-shell (the same engine as /usr/bin/chromium without the
 * desktop browser's user interface layers, as Playwright itself runs headless tests) driven by playwright-core, one
 * browser per test file (each launch gets a fresh temporary profile). Pages record every request, dialog, console
 * error and page error so tests can assert that nothing left the checkout host and no script ran that should not have.
 * Screenshots go to test-results/screenshots/ (kept by CI) at phone (390×844) and desktop (1280×800) sizes.
 *
 * `startWebKasse` is the whole app with local price servers (CoinGecko and Binance stand-ins on the fake clock), so
 * the coin picker shows priced coins without the internet.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from './app.ts';
import { startBinanceServer, startCoinGeckoServer, type PriceServer } from './price-servers.ts';

/** Debian's package `chromium-headless-shell`; about a third less CPU per page than headless /usr/bin/chromium. */
const HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const SIZES = {
  phone: { width: 390, height: 844 },
  desktop: { width: 1280, height: 800 },
} as const;
export type Size = keyof typeof SIZES;

export const SCREENSHOT_DIR = 'test-results/screenshots';

/** A page with everything it did recorded. */
export interface RecordedPage {
  page: Page;
  context: BrowserContext;
  /** Every request URL, in order. */
  requests: string[];
  /** Messages of dialogs (alert, confirm, prompt) that opened; each was dismissed. */
  dialogs: string[];
  /** Console errors (CSP violations show here) and uncaught page errors. */
  errors: string[];
}

export interface TestBrowser {
  browser: Browser;
  open(size?: Size): Promise<RecordedPage>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const browser = await chromium.launch({ executablePath: HEADLESS_SHELL, args: CHROMIUM_ARGS, headless: true });
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return {
    browser,
    async open(size: Size = 'phone') {
      const context = await browser.newContext({
        viewport: SIZES[size],
        deviceScaleFactor: 1,
        isMobile: false,
        hasTouch: size === 'phone',
      });
      const page = await context.newPage();
      const rec: RecordedPage = { page, context, requests: [], dialogs: [], errors: [] };
      context.on('request', (r) => rec.requests.push(r.url()));
      context.on('page', (p) => p.on('dialog', (d) => void d.dismiss()));
      page.on('dialog', (d) => {
        rec.dialogs.push(d.message());
        void d.dismiss();
      });
      page.on('console', (m) => {
        if (m.type() === 'error') rec.errors.push(m.text());
      });
      page.on('pageerror', (e) => rec.errors.push(String(e)));
      return rec;
    },
    close: () => browser.close(),
  };
}

/** Saves a full-page screenshot as test-results/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}.png`, fullPage: true });
}

/** Origins (scheme://host:port) of the recorded requests that are not `allowed`; data: and about: are ignored. */
export function foreignRequests(requests: string[], ...allowed: string[]): string[] {
  const ok = new Set(allowed.map((u) => new URL(u).origin));
  return requests.filter((u) => /^https?:/.test(u) && !ok.has(new URL(u).origin));
}

export interface WebKasse {
  t: TestKasse;
  m: TestMerchant;
  coingecko: PriceServer;
  binance: PriceServer;
  close(): Promise<void>;
}

/** The app with local price servers and one merchant ("Corner Café"). */
export async function startWebKasse(
  opts: { merchantName?: string; env?: Record<string, string> } = {},
): Promise<WebKasse> {
  const clock = new FakeClock('2026-03-01T12:00:00Z');
  const coingecko = await startCoinGeckoServer({ now: () => clock.now() });
  const binance = await startBinanceServer();
  for (const [id, usd] of [
    ['ethereum', 3000],
    ['solana', 150],
    ['polygon-ecosystem-token', 0.5],
  ] as const)
    coingecko.setPrice(id, usd);
  for (const [sym, usd] of [
    ['ETHUSDT', 3000],
    ['SOLUSDT', 150],
    ['POLUSDT', 0.5],
  ] as const)
    binance.setPrice(sym, usd);
  for (const [id, sym, usd] of [
    ['bitcoin', 'BTCUSDT', 60000],
    ['litecoin', 'LTCUSDT', 100],
  ] as const) {
    coingecko.setPrice(id, usd);
    binance.setPrice(sym, usd);
  }
  const t = await startTestKasse({
    clock,
    env: { KASSE_COINGECKO_URL: coingecko.url, KASSE_BINANCE_URL: binance.url, ...opts.env },
  });
  const m = await t.merchant({ name: opts.merchantName ?? 'Corner Café' });
  return {
    t,
    m,
    coingecko,
    binance,
    async close() {
      await t.close();
      await coingecko.close();
      await binance.close();
    },
  };
}

/** A merchant's own web server: serves `pages` (path → HTML) and `scripts` (path → JS) on 127.0.0.1. */
export async function startMerchantSite(
  files: Record<string, { type: string; body: string; headers?: Record<string, string> }>,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const f = files[path];
    if (path === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    if (!f) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': f.type, ...f.headers });
    res.end(f.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
