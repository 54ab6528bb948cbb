/**
 * Price service: USD rates per whole coin, cached with a maximum age, fetched from real providers in priority order
 * with per-token failover.
 *
 * Stablecoins are pegged at "1" (`rate_source` `peg`) and never fetched. Every other coin's rate is the newest cached
 * provider rate no older than `maxAgeMs` on the injected clock; an older rate is no rate (the API answers 503
 * `price_unavailable`). Refreshes never throw: provider failures are logged and the next provider is asked for the
 * tokens the previous one could not price. Concurrent refreshes share one request (single-flight).
 *
 * Providers implement `PriceProvider`; what their clients share (errors, decimal strings, the timed JSON fetch) is in
 * provider.ts.
 */
import type { TokenConfig } from '../../chains/types.ts';
import type { Clock } from '../../core/clock.ts';
import { isPositiveDecimal, PriceProviderError } from './provider.ts';

/** Name of a real price provider, as it appears in `rate_source`. */
export type ProviderName = 'coingecko' | 'binance';

/** `rate_source` values: a provider or the stablecoin peg. */
export type PriceSource = ProviderName | 'peg';

/** One rate as a provider gave it: USD per whole coin (plain decimal string) and the time it is valid for. */
export interface ProviderRate {
  rate: string;
  at: Date;
}

/** A usable price for one coin. */
export interface PriceQuote {
  /** USD per whole coin, plain decimal string without exponent or trailing zeros ("3456.78", "0.00001234", "1"). */
  rate: string;
  source: PriceSource;
  /** When the rate was current (provider timestamp, fetch time, or now for the peg). */
  at: Date;
}

/** A client of one price provider. */
export interface PriceProvider {
  readonly name: ProviderName;
  /**
   * Rates for as many of `tokens` as the provider knows, keyed by token id. Tokens the provider has no id for, or that
   * are missing from its answer, are simply absent. Rejects with `PriceProviderError` when the request as a whole fails.
   */
  fetchRates(tokens: TokenConfig[]): Promise<Map<string, ProviderRate>>;
}

/** pino-compatible subset used for warnings (and, when present, `info` for recoveries). */
export interface PriceLogger {
  warn(obj: object, msg: string): void;
  info?(obj: object, msg: string): void;
}

export interface PriceServiceOptions {
  /** Providers in priority order: the first is asked first, later ones only for what earlier ones could not price. */
  providers: PriceProvider[];
  clock: Clock;
  /** A rate older than this (relative to `clock.now()`) is no rate. */
  maxAgeMs: number;
  logger?: PriceLogger;
}

interface Flight {
  ids: Set<string>;
  promise: Promise<void>;
}

interface Queued {
  tokens: Map<string, TokenConfig>;
  promise: Promise<void>;
  resolve: (p: Promise<void>) => void;
}

/** Cached, failover-backed USD rates for the configured coins. */
export class PriceService {
  private readonly providers: PriceProvider[];
  private readonly clock: Clock;
  private readonly maxAgeMs: number;
  private readonly logger: PriceLogger | undefined;
  /** token id → provider → newest rate from that provider. */
  private readonly cache = new Map<string, Map<ProviderName, ProviderRate>>();
  private inflight: Flight | null = null;
  private queued: Queued | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** What is wrong now (problem → what it looks like), so that a refresh every minute logs a problem once, then again only when it changes. */
  private readonly problems = new Map<string, string>();
  private readonly unpriced = new Set<string>();

  constructor(options: PriceServiceOptions) {
    if (!(options.maxAgeMs > 0)) throw new Error('PriceService: maxAgeMs must be positive');
    this.providers = [...options.providers];
    this.clock = options.clock;
    this.maxAgeMs = options.maxAgeMs;
    this.logger = options.logger;
  }

  /**
   * The current price of `token`: `{ rate: '1', source: 'peg' }` for stablecoins, otherwise the newest cached
   * provider rate no older than the maximum age, otherwise null (no price).
   */
  quote(token: TokenConfig): PriceQuote | null {
    const now = this.clock.now();
    if (token.stable) return { rate: '1', source: 'peg', at: now };
    const byProvider = this.cache.get(token.id);
    if (!byProvider) return null;
    const oldest = now.getTime() - this.maxAgeMs;
    let best: PriceQuote | null = null;
    // Provider priority order breaks ties between equally new rates.
    for (const p of this.providers) {
      const r = byProvider.get(p.name);
      if (!r || r.at.getTime() < oldest) continue;
      if (!best || r.at.getTime() > best.at.getTime()) best = { rate: r.rate, source: p.name, at: r.at };
    }
    return best;
  }

  /** `quote()`, and when that finds nothing, one `refresh([token])` and `quote()` again (for cold caches on request paths). */
  async quoteFresh(token: TokenConfig): Promise<PriceQuote | null> {
    const q = this.quote(token);
    if (q || !fetchable(token)) return q;
    await this.refresh([token]);
    return this.quote(token);
  }

  /** Currently fresh rates (pegged coins as "1") keyed by token id; coins without a fresh rate are absent. */
  rates(tokens: TokenConfig[]): Map<string, string> {
    const out = new Map<string, string>();
    for (const t of tokens) {
      const q = this.quote(t);
      if (q) out.set(t.id, q.rate);
    }
    return out;
  }

  /**
   * Fetches rates for the non-stable `tokens`: the first provider is asked for all of them, each later provider for
   * those still missing (failed request, timeout, absent from the answer, or older than the maximum age).
   * Never rejects; failures are logged. Calls made while a refresh is running share it when it covers their tokens;
   * otherwise they share one follow-up refresh that starts when the running one ends.
   */
  refresh(tokens: TokenConfig[]): Promise<void> {
    const wanted = new Map<string, TokenConfig>();
    for (const t of tokens) if (fetchable(t)) wanted.set(t.id, t);
    if (wanted.size === 0) return Promise.resolve();
    const running = this.inflight;
    if (!running) return this.launch(wanted);
    const missing = [...wanted.values()].filter((t) => !running.ids.has(t.id));
    if (missing.length === 0) return running.promise;
    if (!this.queued) {
      let resolve!: (p: Promise<void>) => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.queued = { tokens: new Map(), promise, resolve };
    }
    for (const t of missing) this.queued.tokens.set(t.id, t);
    return this.queued.promise;
  }

  /** Refreshes `tokens` now and then every `intervalMs` (timer unref'd so it never keeps the process alive). */
  start(tokens: TokenConfig[], intervalMs: number): void {
    this.stop();
    const list = [...tokens];
    void this.refresh(list);
    this.timer = setInterval(() => void this.refresh(list), intervalMs);
    this.timer.unref();
  }

  /** Stops the periodic refresh started by `start()`; a refresh already running finishes on its own. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private launch(tokens: Map<string, TokenConfig>): Promise<void> {
    const flight: Flight = { ids: new Set(tokens.keys()), promise: Promise.resolve() };
    flight.promise = this.fetchAll([...tokens.values()])
      .catch((err: unknown) => this.warn({ err: errorText(err) }, 'price refresh failed'))
      .finally(() => {
        if (this.inflight === flight) this.inflight = null;
        const next = this.queued;
        this.queued = null;
        if (next) next.resolve(this.launch(next.tokens));
      });
    this.inflight = flight;
    return flight.promise;
  }

  private async fetchAll(tokens: TokenConfig[]): Promise<void> {
    let remaining = tokens;
    for (const provider of this.providers) {
      if (remaining.length === 0) break;
      let got: Map<string, ProviderRate>;
      try {
        got = await provider.fetchRates(remaining);
      } catch (err) {
        if (
          this.changed(
            provider.name,
            err instanceof PriceProviderError ? `${err.kind}:${err.status ?? ''}` : errorText(err),
          )
        ) {
          this.warn(
            {
              provider: provider.name,
              tokens: remaining.map((t) => t.id),
              err: errorText(err),
              repeats: 'logged again when the failure changes or ends',
            },
            'price provider request failed',
          );
        }
        continue;
      }
      if (this.changed(provider.name, null)) this.note({ provider: provider.name }, 'price provider answers again');
      const oldest = this.clock.now().getTime() - this.maxAgeMs;
      const stale: string[] = [];
      const next: TokenConfig[] = [];
      for (const t of remaining) {
        const r = got.get(t.id);
        if (r && isPositiveDecimal(r.rate)) {
          this.store(t.id, provider.name, r);
          if (r.at.getTime() >= oldest) continue;
          stale.push(t.id);
        }
        next.push(t);
      }
      if (this.changed(`${provider.name}:stale`, stale.length > 0 ? stale.join() : null) && stale.length > 0) {
        this.warn(
          { provider: provider.name, tokens: stale },
          'price provider returned rates older than the maximum age',
        );
      }
      remaining = next;
    }
    this.trackUnpriced(tokens, remaining);
  }

  /** Records what `problem` looks like now (null: gone); true when that differs from before. */
  private changed(problem: string, looks: string | null): boolean {
    if ((this.problems.get(problem) ?? null) === looks) return false;
    if (looks === null) this.problems.delete(problem);
    else this.problems.set(problem, looks);
    return true;
  }

  /** Logs which coins have no price (they cannot be offered at checkout) when that set changes, and when it empties. */
  private trackUnpriced(asked: TokenConfig[], missing: TokenConfig[]): void {
    const before = [...this.unpriced].sort().join();
    for (const t of asked) this.unpriced.delete(t.id);
    for (const t of missing) this.unpriced.add(t.id);
    const now = [...this.unpriced].sort();
    if (now.join() === before) return;
    if (now.length > 0) {
      this.warn(
        { tokens: now, effect: 'not offered at checkout, and 503 price_unavailable, until a provider answers' },
        'no fresh price from any provider',
      );
    } else this.note({}, 'every coin has a fresh price again');
  }

  private note(obj: object, msg: string): void {
    try {
      this.logger?.info?.(obj, msg);
    } catch {
      // A broken logger must not break pricing.
    }
  }

  private store(tokenId: string, provider: ProviderName, rate: ProviderRate): void {
    let byProvider = this.cache.get(tokenId);
    if (!byProvider) this.cache.set(tokenId, (byProvider = new Map()));
    const prev = byProvider.get(provider);
    if (!prev || rate.at.getTime() >= prev.at.getTime())
      byProvider.set(provider, { rate: rate.rate, at: new Date(rate.at.getTime()) });
  }

  private warn(obj: object, msg: string): void {
    try {
      this.logger?.warn(obj, msg);
    } catch {
      // A broken logger must not break pricing.
    }
  }
}

function fetchable(t: TokenConfig): boolean {
  return !t.stable && (t.coingeckoId !== null || t.binanceSymbol !== null);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
