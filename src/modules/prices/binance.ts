/**
 * Binance client: `GET {base}/api/v3/ticker/price?symbols=["ETHUSDT","SOLUSDT"]` (the JSON array URL-encoded),
 * answered with `[{"symbol":"ETHUSDT","price":"3456.78000000"}]`. Prices are already decimal strings; the USDT pair
 * is taken as USD. Binance sends no timestamp, so a rate is dated at fetch time on the injected clock.
 * One unknown symbol fails the whole request (HTTP 400 `{"code":-1121,"msg":"Invalid symbol."}`).
 */
import type { TokenConfig } from '../../chains/types.ts';
import { systemClock, type Clock } from '../../core/clock.ts';
import {
  isPositiveDecimal,
  normalizeDecimal,
  parseProviderJson,
  PriceProviderError,
  providerGet,
  snippet,
  tokensByKey,
  type PriceProvider,
  type ProviderRate,
} from './service.ts';

export interface BinanceClientOptions {
  /** Host root (default https://api.binance.com); `/api/v3/ticker/price` is appended. */
  baseUrl?: string;
  /** Abort the request (including the body) after this many ms; default 5000. */
  timeoutMs?: number;
  /** Dates the rates (fetch time). */
  clock?: Clock;
}

/** Price provider backed by Binance's public spot `ticker/price` endpoint. */
export class BinanceClient implements PriceProvider {
  readonly name = 'binance' as const;
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly clock: Clock;

  constructor(options: BinanceClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? 'https://api.binance.com').replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.clock = options.clock ?? systemClock;
  }

  /** Rates for the tokens that have a `binanceSymbol`; tokens sharing a symbol share its rate. */
  async fetchRates(tokens: TokenConfig[]): Promise<Map<string, ProviderRate>> {
    const bySymbol = tokensByKey(tokens, (t) => (t.binanceSymbol ? t.binanceSymbol.trim().toUpperCase() : undefined));
    const out = new Map<string, ProviderRate>();
    if (bySymbol.size === 0) return out;

    const symbols = [...bySymbol.keys()];
    const url = `${this.baseUrl}/api/v3/ticker/price?symbols=${encodeURIComponent(JSON.stringify(symbols))}`;
    const fetchedAt = this.clock.now();
    const res = await providerGet(this.name, url, this.timeoutMs);

    if (res.status === 429 || res.status === 418) {
      const retry = res.headers.get('retry-after');
      const what = res.status === 418 ? 'IP banned for exceeding rate limits' : 'rate limited';
      throw new PriceProviderError(
        this.name,
        'rate_limited',
        `${what} (HTTP ${res.status}${retry ? `, retry after ${retry} s` : ''})`,
        res.status,
      );
    }
    if (res.status < 200 || res.status > 299) {
      const err = apiError(res.text);
      if (err) {
        throw new PriceProviderError(
          this.name,
          'api',
          `${err.msg} (code ${err.code}, HTTP ${res.status}) for symbols ${symbols.join(',')}`,
          res.status,
        );
      }
      throw new PriceProviderError(
        this.name,
        'http',
        `HTTP ${res.status} from ticker/price: ${snippet(res.text)}`,
        res.status,
      );
    }
    const body = parseProviderJson(this.name, res);
    if (!Array.isArray(body)) {
      throw new PriceProviderError(
        this.name,
        'malformed',
        `malformed response body: expected an array of tickers, got ${snippet(res.text)}`,
        res.status,
      );
    }

    for (const item of body as unknown[]) {
      if (typeof item !== 'object' || item === null) continue;
      const { symbol, price } = item as { symbol?: unknown; price?: unknown };
      if (typeof symbol !== 'string' || typeof price !== 'string') continue;
      const tokenIds = bySymbol.get(symbol);
      if (!tokenIds) continue;
      let rate: string;
      try {
        rate = normalizeDecimal(price);
      } catch {
        continue;
      }
      if (!isPositiveDecimal(rate)) continue;
      for (const tokenId of tokenIds) out.set(tokenId, { rate, at: fetchedAt });
    }
    return out;
  }
}

function apiError(text: string): { code: number; msg: string } | null {
  try {
    const v = JSON.parse(text) as unknown;
    if (
      typeof v === 'object' &&
      v !== null &&
      typeof (v as { code?: unknown }).code === 'number' &&
      typeof (v as { msg?: unknown }).msg === 'string'
    ) {
      return v as { code: number; msg: string };
    }
  } catch {
    // not Binance's error shape
  }
  return null;
}
