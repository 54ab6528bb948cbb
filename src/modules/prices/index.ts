/**
 * Prices module: provider clients (CoinGecko, Binance), the cached failover `PriceService`, and a factory that wires
 * them from the `prices` configuration block (CoinGecko first, Binance as failover).
 */
import type { Config } from '../../config.ts';
import type { Clock } from '../../core/clock.ts';
import { BinanceClient } from './binance.ts';
import { CoinGeckoClient } from './coingecko.ts';
import { PriceService, type PriceLogger } from './service.ts';

export { BinanceClient, type BinanceClientOptions } from './binance.ts';
export { CoinGeckoClient, type CoinGeckoClientOptions } from './coingecko.ts';
export {
  decimalFromNumber,
  isPositiveDecimal,
  normalizeDecimal,
  PriceProviderError,
  type PriceProviderErrorKind,
} from './provider.ts';
export {
  PriceService,
  type PriceLogger,
  type PriceProvider,
  type PriceQuote,
  type PriceServiceOptions,
  type PriceSource,
  type ProviderName,
  type ProviderRate,
} from './service.ts';

/**
 * A `PriceService` over CoinGecko (first) and Binance (failover) at the configured URLs, with
 * `maxAgeMs = maxAgeSeconds * 1000`. Call `start(tokens, cfg.refreshSeconds * 1000)` to keep it warm.
 */
export function createPriceService(
  cfg: Config['prices'],
  deps: { clock: Clock; logger?: PriceLogger; timeoutMs?: number },
): PriceService {
  const timeoutMs = deps.timeoutMs ?? 5000;
  return new PriceService({
    providers: [
      new CoinGeckoClient({ baseUrl: cfg.coingeckoUrl, timeoutMs, clock: deps.clock }),
      new BinanceClient({ baseUrl: cfg.binanceUrl, timeoutMs, clock: deps.clock }),
    ],
    clock: deps.clock,
    maxAgeMs: cfg.maxAgeSeconds * 1000,
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
}
