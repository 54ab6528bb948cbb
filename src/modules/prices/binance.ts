/**
 * Binance client: `GET {base}/api/v3/ticker/price?symbols=["ETHUSDT","SOLUSDT"]` (the JSON array URL-encoded),
 * answered with `[{"symbol":"ETHUSDT","price":"3456.78000000"}]`. Prices are already decimal strings; the USDT pair
 * is taken as USD. Binance sends no timestamp, so a rate is dated at fetch time on the injected clock.
 * One unknown symbol fails the whole request (HTTP 400 `{"code":-1121,"msg":"Invalid symbol."}`).
 */
import type { TokenConfig } from '../../chains/types.ts';
import {
  getJson,
  isPositiveDecimal,
  malformed,
  normalizeDecimal,
  PriceProviderError,
  ProviderClient,
  rateLimited,
  tokensByKey,
  type ProviderClientOptions,
} from './provider.ts';
import type { PriceProvider, ProviderRate } from './service.ts';

export interface BinanceClientOptions extends ProviderClientOptions {
  /** Host root (default https://api.binance.com); `/api/v3/ticker/price` is appended. */
  baseUrl?: string;
}

/** Price provider backed by Binance's public spot `ticker/price` endpoint. */
export class BinanceClient extends ProviderClient implements PriceProvider {
  readonly name = 'binance' as const;

  constructor(options: BinanceClientOptions = {}) {
    super('https://api.binance.com', options);
  }

  /** Rates for the tokens that have a `binanceSymbol`; tokens sharing a symbol share its rate. */
  async fetchRates(tokens: TokenConfig[]): Promise<Map<string, ProviderRate>> {
    const bySymbol = tokensByKey(tokens, (t) => (t.binanceSymbol ? t.binanceSymbol.trim().toUpperCase() : undefined));
    const out = new Map<string, ProviderRate>();
    if (bySymbol.size === 0) return out;

    const symbols = [...bySymbol.keys()];
    const url = `${this.baseUrl}/api/v3/ticker/price?symbols=${encodeURIComponent(JSON.stringify(symbols))}`;
    const fetchedAt = this.clock.now();
    const { body, res } = await getJson(this.name, url, {
      endpoint: 'ticker/price',
      timeoutMs: this.timeoutMs,
      refused: (r) => {
        if (r.status === 418) return rateLimited(this.name, r, 'IP banned for exceeding rate limits');
        const err = apiError(r.text);
        if (!err) return null;
        const what = `${err.msg} (code ${err.code}, HTTP ${r.status}) for symbols ${symbols.join(',')}`;
        return new PriceProviderError(this.name, 'api', what, r.status);
      },
    });
    if (!Array.isArray(body)) throw malformed(this.name, res, 'an array of tickers');

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
