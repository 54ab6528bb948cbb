/**
 * Price clients and PriceService against local servers speaking CoinGecko's and Binance's wire formats.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { TokenConfig } from '../../src/chains/types.ts';
import { FakeClock, MINUTE, SECOND } from '../../src/core/clock.ts';
import {
  BinanceClient,
  CoinGeckoClient,
  decimalFromNumber,
  normalizeDecimal,
  PriceProviderError,
  PriceService,
} from '../../src/modules/prices/index.ts';
import { eventually } from '../harness/expect.ts';
import { startBinanceServer, startCoinGeckoServer, type PriceServer } from '../harness/price-servers.ts';

function token(id: string, over: Partial<TokenConfig> = {}): TokenConfig {
  const [chain, sym] = id.split(':') as [string, string];
  return {
    id,
    chain,
    symbol: sym.toUpperCase(),
    name: sym,
    decimals: 18,
    kind: 'native',
    contract: null,
    minAmount: 1n,
    stable: false,
    coingeckoId: null,
    binanceSymbol: null,
    gasless: false,
    ...over,
  };
}

const ETH = token('base:eth', { coingeckoId: 'ethereum', binanceSymbol: 'ETHUSDT' });
const ETH_L1 = token('ethereum:eth', { coingeckoId: 'ethereum', binanceSymbol: 'ETHUSDT' });
const SOL = token('solana:sol', { decimals: 9, coingeckoId: 'solana', binanceSymbol: 'SOLUSDT' });
const BTC = token('bitcoin:btc', { decimals: 8, kind: 'utxo', coingeckoId: 'bitcoin', binanceSymbol: 'BTCUSDT' });
const USDC = token('base:usdc', {
  decimals: 6,
  kind: 'erc20',
  contract: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  stable: true,
  gasless: true,
});
const NO_IDS = token('foo:bar');

const MAX_AGE = 5 * MINUTE;
// Long enough for a first request on a machine busy with other work (300 ms timed out there); only the hang
// tests wait for it.
const TIMEOUT = 2000;

let cg: PriceServer;
let bn: PriceServer;
let clock: FakeClock;

function logger() {
  const warnings: { obj: object; msg: string }[] = [];
  return { warnings, warn: (obj: object, msg: string) => void warnings.push({ obj, msg }) };
}

function service(opts: { order?: 'cg-first' | 'bn-first'; log?: ReturnType<typeof logger> } = {}) {
  const coingecko = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock });
  const binance = new BinanceClient({ baseUrl: bn.url, timeoutMs: TIMEOUT, clock });
  return new PriceService({
    providers: opts.order === 'bn-first' ? [binance, coingecko] : [coingecko, binance],
    clock,
    maxAgeMs: MAX_AGE,
    ...(opts.log ? { logger: opts.log } : {}),
  });
}

before(async () => {
  clock = new FakeClock('2026-01-01T00:00:00Z');
  cg = await startCoinGeckoServer({ now: () => clock.now() });
  bn = await startBinanceServer();
});

after(async () => {
  await cg.close();
  await bn.close();
});

beforeEach(() => {
  clock.set('2026-01-01T00:00:00Z');
  for (const id of ['ethereum', 'solana', 'bitcoin', 'tiny', 'huge']) cg.removePrice(id);
  for (const s of ['ETHUSDT', 'SOLUSDT', 'BTCUSDT']) bn.removePrice(s);
  cg.setDelay(0);
  bn.setDelay(0);
  cg.setPrice('ethereum', 3456.78);
  cg.setPrice('solana', 187.25);
  cg.setPrice('bitcoin', 97000);
  bn.setPrice('ETHUSDT', '3455.10');
  bn.setPrice('SOLUSDT', '187.2');
  bn.setPrice('BTCUSDT', '96990.01');
});

describe('decimal strings', () => {
  test('decimalFromNumber expands exponents without float arithmetic', () => {
    assert.equal(decimalFromNumber(1e-7), '0.0000001');
    assert.equal(decimalFromNumber(1.234e-7), '0.0000001234');
    assert.equal(decimalFromNumber(0.00001234), '0.00001234');
    // biome-ignore lint/correctness/noPrecisionLoss: more digits than a double holds, as a provider's JSON may send
    assert.equal(decimalFromNumber(123456789.123456789), '123456789.12345679');
    assert.equal(decimalFromNumber(3000), '3000');
    assert.equal(decimalFromNumber(2.5e21), '2500000000000000000000');
    assert.equal(decimalFromNumber(1e21), '1000000000000000000000');
    assert.equal(decimalFromNumber(0.1), '0.1');
    assert.equal(decimalFromNumber(5e-324), `0.${'0'.repeat(323)}5`);
    assert.throws(() => decimalFromNumber(-1));
    assert.throws(() => decimalFromNumber(Number.NaN));
    assert.throws(() => decimalFromNumber(Number.POSITIVE_INFINITY));
  });

  test('normalizeDecimal trims zeros and rejects non-decimals', () => {
    assert.equal(normalizeDecimal('3456.78000000'), '3456.78');
    assert.equal(normalizeDecimal('100.00000000'), '100');
    assert.equal(normalizeDecimal('0.00001234'), '0.00001234');
    assert.equal(normalizeDecimal('007.50'), '7.5');
    assert.equal(normalizeDecimal('0.00000000'), '0');
    for (const bad of ['1e-7', '-1', '1.', '.5', ' 1', '1,5', '']) assert.throws(() => normalizeDecimal(bad), bad);
  });
});

describe('CoinGeckoClient', () => {
  test('reads the simple/price wire format with last_updated_at', async () => {
    cg.setPrice('solana', 187.25, new Date('2025-12-31T23:59:30Z'));
    const c = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock });
    const before = cg.requests;
    const got = await c.fetchRates([ETH, ETH_L1, SOL, USDC, NO_IDS]);
    assert.equal(cg.requests, before + 1);
    assert.equal(
      cg.requestLog.at(-1),
      '/api/v3/simple/price?ids=ethereum,solana&vs_currencies=usd&include_last_updated_at=true',
    );
    assert.deepEqual(got.get('base:eth'), { rate: '3456.78', at: new Date('2026-01-01T00:00:00Z') });
    assert.deepEqual(got.get('ethereum:eth'), { rate: '3456.78', at: new Date('2026-01-01T00:00:00Z') });
    assert.deepEqual(got.get('solana:sol'), { rate: '187.25', at: new Date('2025-12-31T23:59:30Z') });
    assert.equal(got.size, 3);
  });

  test('awkward JSON numbers become exact plain decimals', async () => {
    cg.setPrice('tiny', '1e-7');
    cg.setPrice('huge', '123456789.123456789');
    cg.setPrice('bitcoin', '97000');
    cg.setPrice('ethereum', '3.4567800E+3');
    cg.setPrice('solana', '0.00001234');
    const c = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock });
    const tiny = token('x:tiny', { coingeckoId: 'tiny' });
    const huge = token('x:huge', { coingeckoId: 'huge' });
    const got = await c.fetchRates([tiny, huge, BTC, ETH, SOL]);
    assert.equal(got.get('x:tiny')?.rate, '0.0000001');
    assert.equal(got.get('x:huge')?.rate, '123456789.12345679');
    assert.equal(got.get('bitcoin:btc')?.rate, '97000');
    assert.equal(got.get('base:eth')?.rate, '3456.78');
    assert.equal(got.get('solana:sol')?.rate, '0.00001234');
  });

  test('a provider timestamp ahead of the clock is capped at fetch time', async () => {
    cg.setPrice('ethereum', 3456.78, new Date('2026-01-01T00:10:00Z'));
    const c = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock });
    const got = await c.fetchRates([ETH]);
    assert.deepEqual(got.get('base:eth')?.at, clock.now());
  });

  test('zero, negative and non-numeric prices are treated as missing', async () => {
    cg.setPrice('ethereum', 0);
    cg.setPrice('solana', '"187.25"');
    cg.setPrice('bitcoin', -5);
    const c = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock });
    assert.equal((await c.fetchRates([ETH, SOL, BTC])).size, 0);
  });

  test('429, 5xx, malformed bodies and timeouts are errors with clear messages', async () => {
    const c = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock });
    cg.failNext(1, 429);
    await assert.rejects(c.fetchRates([ETH]), (e: unknown) => {
      assert.ok(e instanceof PriceProviderError);
      assert.equal(e.kind, 'rate_limited');
      assert.equal(e.status, 429);
      assert.match(e.message, /^coingecko: rate limited \(HTTP 429, retry after 60 s\)$/);
      return true;
    });
    cg.failNext(1, 503);
    await assert.rejects(c.fetchRates([ETH]), {
      name: 'PriceProviderError',
      kind: 'http',
      status: 503,
      message: /^coingecko: HTTP 503/,
    });
    cg.failNext(1, 'malformed');
    await assert.rejects(c.fetchRates([ETH]), {
      kind: 'malformed',
      message: /coingecko: malformed response body.*not JSON/,
    });
    cg.failNext(1, 'hang');
    const t0 = Date.now();
    await assert.rejects(c.fetchRates([ETH]), {
      kind: 'timeout',
      message: `coingecko: no answer within ${TIMEOUT} ms`,
    });
    assert.ok(Date.now() - t0 < TIMEOUT + 1000);
  });

  test('an unreachable host is a network error', async () => {
    const dead = await startCoinGeckoServer();
    const url = dead.url;
    await dead.close();
    const c = new CoinGeckoClient({ baseUrl: url, timeoutMs: TIMEOUT, clock });
    await assert.rejects(c.fetchRates([ETH]), { kind: 'network', message: /^coingecko: request failed/ });
  });

  test('sends an API key header when configured', async () => {
    const c = new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock, apiKey: 'CG-demo' });
    assert.equal((await c.fetchRates([ETH])).get('base:eth')?.rate, '3456.78');
  });
});

describe('BinanceClient', () => {
  test('reads the ticker/price wire format; quote time is fetch time', async () => {
    bn.setPrice('ETHUSDT', '3456.78000000');
    bn.setPrice('SOLUSDT', '0.00001234');
    bn.setPrice('BTCUSDT', '100.00000000');
    const c = new BinanceClient({ baseUrl: bn.url, timeoutMs: TIMEOUT, clock });
    const got = await c.fetchRates([ETH, ETH_L1, SOL, BTC, USDC, NO_IDS]);
    assert.equal(
      bn.requestLog.at(-1),
      `/api/v3/ticker/price?symbols=${encodeURIComponent('["ETHUSDT","SOLUSDT","BTCUSDT"]')}`,
    );
    const at = clock.now();
    assert.deepEqual(got.get('base:eth'), { rate: '3456.78', at });
    assert.deepEqual(got.get('ethereum:eth'), { rate: '3456.78', at });
    assert.deepEqual(got.get('solana:sol'), { rate: '0.00001234', at });
    assert.deepEqual(got.get('bitcoin:btc'), { rate: '100', at });
    assert.equal(got.size, 4);
  });

  test('HTTP 400 -1121 Invalid symbol is an error', async () => {
    const c = new BinanceClient({ baseUrl: bn.url, timeoutMs: TIMEOUT, clock });
    const bogus = token('x:zzz', { binanceSymbol: 'ZZZUSDT' });
    await assert.rejects(c.fetchRates([ETH, bogus]), {
      kind: 'api',
      status: 400,
      message: 'binance: Invalid symbol. (code -1121, HTTP 400) for symbols ETHUSDT,ZZZUSDT',
    });
  });

  test('429, 5xx, malformed bodies and timeouts are errors', async () => {
    const c = new BinanceClient({ baseUrl: bn.url, timeoutMs: TIMEOUT, clock });
    bn.failNext(1, 429);
    await assert.rejects(c.fetchRates([ETH]), {
      kind: 'rate_limited',
      message: 'binance: rate limited (HTTP 429, retry after 30 s)',
    });
    bn.failNext(1, 418);
    await assert.rejects(c.fetchRates([ETH]), { kind: 'rate_limited', status: 418 });
    bn.failNext(1, 500);
    await assert.rejects(c.fetchRates([ETH]), { status: 500, message: /^binance: .*HTTP 500/ });
    bn.failNext(1, 'malformed');
    await assert.rejects(c.fetchRates([ETH]), { kind: 'malformed' });
    bn.failNext(1, 'hang');
    await assert.rejects(c.fetchRates([ETH]), { kind: 'timeout', message: `binance: no answer within ${TIMEOUT} ms` });
  });
});

describe('PriceService', () => {
  test('normal quotes come from the first provider', async () => {
    const s = service();
    assert.equal(s.quote(ETH), null);
    await s.refresh([ETH, SOL, USDC]);
    assert.deepEqual(s.quote(ETH), { rate: '3456.78', source: 'coingecko', at: clock.now() });
    assert.deepEqual(s.quote(SOL), { rate: '187.25', source: 'coingecko', at: clock.now() });
    const bnFirst = service({ order: 'bn-first' });
    await bnFirst.refresh([ETH]);
    assert.deepEqual(bnFirst.quote(ETH), { rate: '3455.1', source: 'binance', at: clock.now() });
  });

  test('stablecoins are pegged at 1 and never fetched', async () => {
    const s = service();
    const n = cg.requests + bn.requests;
    assert.deepEqual(s.quote(USDC), { rate: '1', source: 'peg', at: clock.now() });
    assert.deepEqual(await s.quoteFresh(USDC), { rate: '1', source: 'peg', at: clock.now() });
    await s.refresh([USDC]);
    assert.equal(cg.requests + bn.requests, n);
  });

  for (const mode of [500, 429, 'hang', 'malformed'] as const) {
    test(`fails over from CoinGecko to Binance on ${mode}`, async () => {
      const log = logger();
      const s = service({ log });
      cg.failNext(1, mode);
      const bnBefore = bn.requests;
      await s.refresh([ETH, SOL]);
      assert.equal(bn.requests, bnBefore + 1);
      assert.deepEqual(s.quote(ETH), { rate: '3455.1', source: 'binance', at: clock.now() });
      assert.deepEqual(s.quote(SOL), { rate: '187.2', source: 'binance', at: clock.now() });
      assert.equal(log.warnings[0]?.msg, 'price provider request failed');
      assert.equal((log.warnings[0]!.obj as { provider: string }).provider, 'coingecko');
    });
  }

  test('fails over only the tokens missing from the answer', async () => {
    cg.removePrice('solana');
    const s = service();
    await s.refresh([ETH, SOL]);
    assert.equal(s.quote(ETH)?.source, 'coingecko');
    assert.deepEqual(s.quote(SOL), { rate: '187.2', source: 'binance', at: clock.now() });
    assert.equal(bn.requestLog.at(-1), `/api/v3/ticker/price?symbols=${encodeURIComponent('["SOLUSDT"]')}`);
  });

  test('fails over when the first provider only has a rate older than the maximum age', async () => {
    cg.setPrice('ethereum', 3000, new Date(clock.now().getTime() - MAX_AGE - SECOND));
    const s = service();
    await s.refresh([ETH]);
    assert.deepEqual(s.quote(ETH), { rate: '3455.1', source: 'binance', at: clock.now() });
  });

  test('errors are logged, never thrown, when every provider fails', async () => {
    const log = logger();
    const s = service({ log });
    cg.failNext(1, 500);
    bn.failNext(1, 429);
    await s.refresh([ETH]);
    assert.equal(s.quote(ETH), null);
    assert.deepEqual(
      log.warnings.map((w) => w.msg),
      ['price provider request failed', 'price provider request failed', 'no fresh price from any provider'],
    );
    assert.match(String((log.warnings[1]!.obj as { err: string }).err), /binance: rate limited/);
  });

  test('with no connection, a refresh every minute says once what is wrong, and again only when it changes or ends', async () => {
    const notes: string[] = [];
    const warnings: { obj: any; msg: string }[] = [];
    const log = {
      warn: (obj: object, msg: string) => void warnings.push({ obj, msg }),
      info: (_obj: object, msg: string) => void notes.push(msg),
    };
    // Nothing listens on port 1: every request fails as it does without a network.
    const offline = [
      new CoinGeckoClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: TIMEOUT, clock }),
      new BinanceClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: TIMEOUT, clock }),
    ];
    const s = new PriceService({ providers: offline, clock, maxAgeMs: MAX_AGE, logger: log });
    for (let minute = 0; minute < 5; minute++) {
      await s.refresh([ETH, SOL, USDC]);
      await s.refresh([ETH]); // a request path asking for one cold coin
      clock.advance(MINUTE);
    }
    assert.deepEqual(
      warnings.map((w) => w.msg),
      ['price provider request failed', 'price provider request failed', 'no fresh price from any provider'],
    );
    assert.match(warnings[0]!.obj.err, /coingecko: request failed/);
    assert.deepEqual(warnings[2]!.obj.tokens, ['base:eth', 'solana:sol']);
    assert.match(warnings[2]!.obj.effect, /not offered at checkout/);
    assert.deepEqual(notes, []);

    // A different failure is news; so is the end of it.
    const online = [
      new CoinGeckoClient({ baseUrl: cg.url, timeoutMs: TIMEOUT, clock }),
      new BinanceClient({ baseUrl: bn.url, timeoutMs: TIMEOUT, clock }),
    ];
    const s2 = new PriceService({ providers: online, clock, maxAgeMs: MAX_AGE, logger: log });
    warnings.length = 0;
    cg.failNext(2, 500);
    bn.failNext(2, 500);
    await s2.refresh([ETH]);
    await s2.refresh([ETH]);
    cg.failNext(1, 429);
    bn.failNext(1, 500);
    await s2.refresh([ETH]);
    assert.deepEqual(
      warnings.map((w) => `${w.obj.provider ?? '-'} ${w.msg}`),
      [
        'coingecko price provider request failed',
        'binance price provider request failed',
        '- no fresh price from any provider',
        'coingecko price provider request failed',
      ],
    );
    await s2.refresh([ETH]);
    assert.deepEqual(notes, ['price provider answers again', 'every coin has a fresh price again']);
    assert.equal(s2.quote(ETH)?.source, 'coingecko');
  });

  test('a price older than the maximum age is no price', async () => {
    const s = service();
    await s.refresh([ETH, USDC]);
    clock.advance(MAX_AGE);
    assert.equal(s.quote(ETH)?.rate, '3456.78');
    assert.deepEqual(
      s.rates([ETH, SOL, USDC]),
      new Map([
        ['base:eth', '3456.78'],
        ['base:usdc', '1'],
      ]),
    );
    clock.advance(1);
    assert.equal(s.quote(ETH), null);
    assert.deepEqual(s.rates([ETH, USDC]), new Map([['base:usdc', '1']]));
    assert.deepEqual(s.quote(USDC), { rate: '1', source: 'peg', at: clock.now() });
  });

  test('the newest fresh rate wins across providers', async () => {
    const s = service();
    cg.setPrice('ethereum', 3400, new Date(clock.now().getTime() - 2 * MINUTE));
    await s.refresh([ETH]);
    assert.equal(s.quote(ETH)?.source, 'coingecko');
    // CoinGecko fails next time: Binance's fetch-time rate is newer than CoinGecko's 2-minute-old one.
    clock.advance(MINUTE);
    cg.failNext(1, 500);
    await s.refresh([ETH]);
    assert.deepEqual(s.quote(ETH), { rate: '3455.1', source: 'binance', at: clock.now() });
    // CoinGecko's older rate expires first; Binance's stays.
    clock.advance(3 * MINUTE);
    assert.equal(s.quote(ETH)?.source, 'binance');
  });

  test('quoteFresh refreshes a cold cache once and then serves from cache', async () => {
    const s = service();
    const n = cg.requests;
    assert.deepEqual(await s.quoteFresh(ETH), { rate: '3456.78', source: 'coingecko', at: clock.now() });
    assert.equal(cg.requests, n + 1);
    assert.equal((await s.quoteFresh(ETH))?.rate, '3456.78');
    assert.equal(cg.requests, n + 1);
    assert.equal(await s.quoteFresh(NO_IDS), null);
    assert.equal(cg.requests, n + 1);
  });

  test('single-flight: concurrent refreshes share one request', async () => {
    const s = service();
    cg.setDelay(100);
    const n = cg.requests;
    await Promise.all([s.refresh([ETH, SOL]), s.refresh([ETH, SOL]), s.refresh([SOL]), s.quoteFresh(ETH)]);
    assert.equal(cg.requests, n + 1);
    assert.equal(s.quote(ETH)?.rate, '3456.78');
    assert.equal(s.quote(SOL)?.rate, '187.25');
  });

  test('single-flight: tokens not covered by the running refresh share one follow-up request', async () => {
    const s = service();
    cg.setDelay(100);
    const n = cg.requests;
    const first = s.refresh([ETH]);
    const second = s.refresh([SOL]);
    const third = s.refresh([BTC, ETH]);
    const fourth = s.quoteFresh(SOL);
    await Promise.all([first, second, third, fourth]);
    assert.equal(cg.requests, n + 2);
    assert.equal(
      cg.requestLog.at(-2),
      '/api/v3/simple/price?ids=ethereum&vs_currencies=usd&include_last_updated_at=true',
    );
    assert.equal(
      cg.requestLog.at(-1),
      '/api/v3/simple/price?ids=solana,bitcoin&vs_currencies=usd&include_last_updated_at=true',
    );
    assert.equal(s.quote(BTC)?.rate, '97000');
    assert.equal((await fourth)?.rate, '187.25');
    // Nothing is left in flight: a later refresh makes a new request.
    await s.refresh([ETH]);
    assert.equal(cg.requests, n + 3);
  });

  test('start() refreshes now and periodically; stop() ends it', async () => {
    const s = service();
    const n = cg.requests;
    s.start([ETH, USDC], 60_000);
    await eventually('the first refresh', () => s.quote(ETH) !== null, { intervalMs: 10 }).finally(() => s.stop());
    assert.equal(s.quote(ETH)?.rate, '3456.78', 'start() refreshes at once');
    s.start([ETH, USDC], 40);
    await eventually('three refreshes', () => cg.requests - n >= 3, { intervalMs: 10 }).finally(() => s.stop());
    assert.ok(cg.requests - n >= 3, `expected at least 3 refreshes, got ${cg.requests - n}`);
    // A refresh the timer started before stop() still runs: this call shares it (or makes one, when none runs).
    await s.refresh([ETH]);
    assert.equal(s.quote(ETH)?.rate, '3456.78');
    const ethRequests = () => cg.requestLog.filter((u) => u.includes('ids=ethereum')).length;
    const after = ethRequests();
    // Another service started now on the same interval, refreshing another coin: once it has refreshed three times
    // after its first, a timer of the stopped service would have fired as often.
    const control = service();
    const solBefore = cg.requestLog.filter((u) => u.includes('ids=solana')).length;
    control.start([SOL], 40);
    await eventually(
      'three timed refreshes of another service',
      () => cg.requestLog.filter((u) => u.includes('ids=solana')).length - solBefore >= 4,
      { intervalMs: 10 },
    ).finally(() => control.stop());
    assert.equal(ethRequests(), after, 'no refresh after stop()');
  });

  test('rejects a non-positive maxAgeMs', () => {
    assert.throws(() => new PriceService({ providers: [], clock, maxAgeMs: 0 }), /maxAgeMs/);
  });
});
