/**
 * The coin catalogue: which coins a mode offers (`GET /currencies`), what a price costs in one of them
 * (`GET /estimate`), and the pricing every coin choice goes through (`price`): the network must be available, the
 * price fresh, and the amount at least the coin's minimum. Prices are fetched here, before any transaction opens.
 */
import { confirmationTier } from '../../chains/networks.ts';
import type { ChainRegistry } from '../../chains/registry.ts';
import type { NetworkConfig, TokenConfig } from '../../chains/types.ts';
import type { Clock } from '../../core/clock.ts';
import { ApiError, invalid } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import { centsToUnits, formatUnits } from '../../core/money.ts';
import type { PriceQuote, PriceService } from '../prices/index.ts';
import { COIN_HOLD_MS } from './model.ts';

export interface CoinChoiceInput {
  chain?: string;
  token?: string;
}

/** A priced coin choice, computed before any transaction opens. */
export interface PricedCoin {
  network: NetworkConfig;
  token: TokenConfig;
  quote: PriceQuote;
  payAmount: bigint;
  tier: number;
  confirmations: number;
}

export interface CatalogueDeps {
  clock: Clock;
  chains: ChainRegistry;
  prices: PriceService;
}

export class Catalogue {
  constructor(private readonly deps: CatalogueDeps) {}

  /** Every configured coin of the mode with its current rate (null without a fresh one) and its network's status. */
  async currencies(mode: Mode) {
    const { chains, prices } = this.deps;
    const tokens = chains.tokens(mode);
    const cold = tokens.filter((t) => !prices.quote(t));
    if (cold.length > 0) await prices.refresh(cold);
    return tokens.map((t) => {
      const q = prices.quote(t);
      const network = chains.status(mode, t.chain);
      return {
        token: t.id,
        chain: t.chain,
        symbol: t.symbol,
        name: t.name,
        decimals: t.decimals,
        min_amount: t.minAmount.toString(),
        min_amount_display: formatUnits(t.minAmount, t.decimals),
        rate: q?.rate ?? null,
        rate_source: q?.source ?? null,
        paused: !chains.available(mode, t.chain),
        gasless: t.gasless,
        holdable: chains.holdable(mode, t.id),
        network_status: network.state,
        network_status_reason: network.reason,
      };
    });
  }

  /** What paying `priceCents` in `token` would cost now; the same checks as issuing a coin choice. */
  async estimate(mode: Mode, q: { price_amount: number; price_currency: 'USD'; token: string }) {
    const coin = this.resolve(mode, { token: q.token })!;
    const p = await this.price(mode, coin, q.price_amount);
    return {
      token: p.token.id,
      price_amount: q.price_amount,
      price_currency: q.price_currency,
      pay_amount: p.payAmount.toString(),
      pay_amount_display: formatUnits(p.payAmount, p.token.decimals),
      rate: p.quote.rate,
      rate_source: p.quote.source,
      expires_at: new Date(this.deps.clock.now().getTime() + COIN_HOLD_MS).toISOString(),
    };
  }

  /** Token (and network) named by a choice; 400 for unknown or inconsistent ones. Null when neither is given. */
  resolve(mode: Mode, choice: CoinChoiceInput): TokenConfig | null {
    const { chain, token } = choice;
    if (chain === undefined && token === undefined) return null;
    if (chain !== undefined && !this.deps.chains.network(mode, chain))
      throw invalid(`Unknown network "${chain}"; GET /currencies lists them.`, 'chain');
    if (token === undefined) throw invalid('token is required when chain is given', 'token');
    const t = this.deps.chains.token(mode, token);
    if (!t) throw invalid(`Unknown token "${token}"; GET /currencies lists them.`, 'token');
    if (chain !== undefined && t.chain !== chain) throw invalid(`Token ${token} is not on network ${chain}.`, 'token');
    return t;
  }

  /** Prices a coin choice: 503 chain_paused, 503 price_unavailable, 422 amount_too_small. Network I/O; no transaction. */
  async price(mode: Mode, token: TokenConfig, priceCents: number): Promise<PricedCoin> {
    const network = this.deps.chains.network(mode, token.chain)!;
    if (!this.deps.chains.available(mode, token.chain)) {
      throw new ApiError(
        'chain_paused',
        `The ${network.name} network takes no payments now (${this.deps.chains.status(mode, token.chain).plain}); choose another coin.`,
      );
    }
    const quote = await this.deps.prices.quoteFresh(token);
    if (!quote)
      throw new ApiError(
        'price_unavailable',
        `No current price for ${token.symbol}; try again shortly or choose another coin.`,
      );
    const payAmount = centsToUnits(priceCents, quote.rate, token.decimals);
    if (payAmount < token.minAmount) {
      throw new ApiError(
        'amount_too_small',
        `${formatUnits(payAmount, token.decimals)} ${token.symbol} is below the minimum of ${formatUnits(token.minAmount, token.decimals)} ${token.symbol} for this coin.`,
      );
    }
    const { tier, confirmations } = confirmationTier(network, priceCents);
    return { network, token, quote, payAmount, tier, confirmations };
  }
}
