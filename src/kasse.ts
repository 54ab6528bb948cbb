/**
 * The service container: one object holding configuration, the database, the clock and every module service.
 * Built the same way by the server, the workers, the CLI and the tests (which pass a fake clock), so there is one
 * wiring of the program and no hidden globals.
 */
import { registerEvmAdapters } from './chains/evm/index.ts';
import { registerSolanaAdapters } from './chains/solana/index.ts';
import { loadNetworks } from './chains/networks.ts';
import { ChainRegistry } from './chains/registry.ts';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { createLogger, type Logger } from './core/log.ts';
import { Metrics } from './core/metrics.ts';
import { loadSecrets, type Secrets } from './core/secrets.ts';
import { createDb, type Db } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { Notifier } from './db/notify.ts';
import { LedgerService } from './modules/ledger/ledger.ts';
import { LinkService } from './modules/links/service.ts';
import { KEYS_CHANNEL, MerchantService } from './modules/merchants/service.ts';
import { PaymentService } from './modules/payments/service.ts';
import { createPriceService, type PriceService } from './modules/prices/index.ts';
import { RateLimiter } from './modules/ratelimit/limiter.ts';
import { WEBHOOKS_CHANNEL, WebhookService } from './modules/webhooks/service.ts';
import type pg from 'pg';

export interface KasseOptions {
  config: Config;
  databaseUrl: string;
  clock?: Clock;
  log?: Logger;
  secrets?: Secrets;
  /** LISTEN for cross-process notifications (off for one-shot CLI commands). */
  listen?: boolean;
  poolSize?: number;
}

export interface PublicUrls {
  live: string;
  test: string;
  checkout: string;
}

export class Kasse {
  readonly metrics: Metrics;
  readonly merchants: MerchantService;
  readonly rateLimiter: RateLimiter;
  /** Event outbox (`publish`), events API and webhook delivery. */
  readonly webhooks: WebhookService;
  /** Configured networks and coins per mode, and the chain adapter serving each. */
  readonly chains: ChainRegistry;
  /** USD rates with failover (CoinGecko, Binance); stablecoins pegged. */
  readonly prices: PriceService;
  /** The double-entry ledger. */
  readonly ledger: LedgerService;
  /** Payments, coin choices, refunds (`payments.refunds`), deposits (`payments.deposits`), the simulator. */
  readonly payments: PaymentService;
  /** Payment links: the API's resource and the public link pages' payments. */
  readonly links: LinkService;
  /** Public base URLs (without /v1); filled in when the listeners are bound. */
  urls: PublicUrls;

  private constructor(
    readonly config: Config,
    readonly secrets: Secrets,
    readonly db: Db,
    private readonly pool: pg.Pool,
    readonly clock: Clock,
    readonly log: Logger,
    readonly notifier: Notifier | null,
  ) {
    this.metrics = new Metrics(true);
    this.merchants = new MerchantService(db, secrets.secretKey, { rateLimitPerMinute: config.rateLimitPerMinute });
    this.rateLimiter = new RateLimiter(db, clock);
    this.webhooks = new WebhookService({ db, clock, merchants: this.merchants, metrics: this.metrics, config, log });
    this.chains = new ChainRegistry(loadNetworks(config), secrets.secretKey);
    this.prices = createPriceService(config.prices, { clock, logger: log });
    this.ledger = new LedgerService(db, clock);
    this.payments = new PaymentService({
      db,
      clock,
      log,
      chains: this.chains,
      prices: this.prices,
      ledger: this.ledger,
      events: this.webhooks,
      feeBps: config.feeBps,
      checkoutBase: () => this.urls.checkout,
    });
    this.links = new LinkService({ db, clock, payments: this.payments, checkoutBase: () => this.urls.checkout });
    const local = (port: number) => `http://localhost:${port}`;
    this.urls = {
      live: config.publicUrls.live ?? local(config.ports.live),
      test: config.publicUrls.test ?? local(config.ports.test),
      checkout: config.publicUrls.checkout ?? local(config.ports.checkout),
    };
  }

  static async open(opts: KasseOptions): Promise<Kasse> {
    const log = opts.log ?? createLogger(opts.config.logLevel);
    const secrets = opts.secrets ?? loadSecrets(opts.config);
    const { db, pool } = createDb(opts.databaseUrl, opts.poolSize ?? 20);
    await migrateToLatest(db);
    const notifier = opts.listen === false ? null : new Notifier(opts.databaseUrl);
    const kasse = new Kasse(opts.config, secrets, db, pool, opts.clock ?? systemClock, log, notifier);
    registerEvmAdapters(kasse);
    registerSolanaAdapters(kasse);
    if (notifier) {
      await notifier.listen(KEYS_CHANNEL, (hash) => kasse.merchants.invalidate(hash));
      await notifier.listen(WEBHOOKS_CHANNEL, () => kasse.webhooks.nudge());
      notifier.onReconnect = () => kasse.merchants.invalidate('*');
      await notifier.start();
    }
    return kasse;
  }

  async close(): Promise<void> {
    await this.notifier?.stop();
    this.prices.stop();
    await this.webhooks.close();
    await this.db.destroy();
  }

  /** Base URL of an API listener including the version segment. */
  apiBase(mode: 'test' | 'live'): string {
    return `${this.urls[mode]}/v1`;
  }
}
