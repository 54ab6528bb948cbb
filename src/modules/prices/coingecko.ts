/**
 * CoinGecko client: `GET {base}/simple/price?ids=<ids>&vs_currencies=usd&include_last_updated_at=true`, answered
 * with `{ "<id>": { "usd": 3456.78, "last_updated_at": 1700000000 } }`. Unknown ids are simply absent from the answer.
 *
 * The USD value arrives as a JSON number; it is turned into a decimal string from its shortest round-trip text with
 * the exponent expanded by string manipulation, so no float arithmetic touches the rate.
 */
import type { TokenConfig } from '../../chains/types.ts';
import {
  decimalFromNumber,
  getJson,
  isPositiveDecimal,
  malformed,
  ProviderClient,
  tokensByKey,
  type ProviderClientOptions,
} from './provider.ts';
import type { PriceProvider, ProviderRate } from './service.ts';

export interface CoinGeckoClientOptions extends ProviderClientOptions {
  /** API base ending in `/api/v3` (default https://api.coingecko.com/api/v3); `/simple/price` is appended. */
  baseUrl?: string;
  /** Caps provider timestamps at fetch time (a clock running behind the provider's must not extend freshness). */
  clock?: ProviderClientOptions['clock'];
  /** Optional API key: sent as `x-cg-pro-api-key` for pro-api hosts, else as `x-cg-demo-api-key`. */
  apiKey?: string;
}

/** Price provider backed by CoinGecko's public `simple/price` endpoint. */
export class CoinGeckoClient extends ProviderClient implements PriceProvider {
  readonly name = 'coingecko' as const;
  private readonly apiKey: string | undefined;

  constructor(options: CoinGeckoClientOptions = {}) {
    super('https://api.coingecko.com/api/v3', options);
    this.apiKey = options.apiKey;
  }

  /** Rates for the tokens that have a `coingeckoId`; tokens sharing an id share its rate. */
  async fetchRates(tokens: TokenConfig[]): Promise<Map<string, ProviderRate>> {
    const byId = tokensByKey(tokens, (t) => (t.coingeckoId ? t.coingeckoId.trim().toLowerCase() : undefined));
    const out = new Map<string, ProviderRate>();
    if (byId.size === 0) return out;

    const ids = [...byId.keys()].map(encodeURIComponent).join(',');
    const url = `${this.baseUrl}/simple/price?ids=${ids}&vs_currencies=usd&include_last_updated_at=true`;
    const headers: Record<string, string> = {};
    if (this.apiKey)
      headers[/(^|\.)pro-api\./.test(new URL(this.baseUrl).hostname) ? 'x-cg-pro-api-key' : 'x-cg-demo-api-key'] =
        this.apiKey;
    const fetchedAt = this.clock.now();
    const { body, res } = await getJson(this.name, url, {
      endpoint: 'simple/price',
      timeoutMs: this.timeoutMs,
      headers,
    });
    if (!isRecord(body)) throw malformed(this.name, res, 'an object keyed by coin id');

    for (const [id, tokenIds] of byId) {
      const entry = body[id];
      if (!isRecord(entry)) continue; // unknown id: CoinGecko leaves it out
      const usd = entry.usd;
      if (typeof usd !== 'number' || !Number.isFinite(usd) || usd <= 0) continue;
      const rate = decimalFromNumber(usd);
      if (!isPositiveDecimal(rate)) continue;
      let at = fetchedAt;
      const updated = entry.last_updated_at;
      if (typeof updated === 'number' && Number.isSafeInteger(updated) && updated > 0) {
        const ms = updated * 1000;
        if (ms < fetchedAt.getTime()) at = new Date(ms);
      }
      for (const tokenId of tokenIds) out.set(tokenId, { rate, at });
    }
    return out;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
