/**
 * The service container: one object holding configuration, the database, the clock and every module service.
 * Built the same way by the server, the workers, the CLI and the tests (which pass a fake clock), so there is one
 * wiring of the program and no hidden globals.
 *
 * It loads every installed chain family (src/chains/<family>/, found by chains/families.ts): the families' tables
 * are migrated with the core's, their networks read with the family's rules, and each family is given the ports
 * (`FamilyContext`) and registers its adapters; its workers, checkout extensions and commands are used by the roles.
 */
import { checkHotWalletKey, installedFamilies } from './chains/families.ts';
import { HEALTH_CHANNEL, NetworkHealth } from './chains/health.ts';
import { loadNetworks } from './chains/networks.ts';
import type { ChainFamily, FamilyContext, LoadedFamily } from './chains/plugin.ts';
import { ChainRegistry } from './chains/registry.ts';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './core/clock.ts';
import { createLogger, type Logger } from './core/log.ts';
import { Metrics } from './core/metrics.ts';
import { loadSecrets, type Secrets } from './core/secrets.ts';
import { createDb, type Db } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { Notifier } from './db/notify.ts';
import { kasseMigrations } from './migrations.ts';
import { FrankfurterClient } from './modules/fx/index.ts';
import { InvoiceService } from './modules/invoices/index.ts';
import { LedgerService } from './modules/ledger/index.ts';
import { LinkService } from './modules/links/index.ts';
import { KEYS_CHANNEL, MerchantService, MerchantSettings } from './modules/merchants/index.ts';
import { type FundsDeps, PaymentService } from './modules/payments/index.ts';
import { RefundService } from './modules/refunds/index.ts';
import { Simulator } from './modules/simulator/index.ts';
import { TransferService } from './modules/transfers/index.ts';
import { createPriceService, type PriceService } from './modules/prices/index.ts';
import { RateLimiter } from './modules/ratelimit/index.ts';
import { StatementEmails, StatementService } from './modules/statements/index.ts';
import { EVENT_STREAM_CHANNEL, EventStreamHub, WEBHOOKS_CHANNEL, WebhookService } from './modules/webhooks/index.ts';
import { AuditLog } from './modules/audit/index.ts';
import { CaptureService } from './modules/capture/index.ts';
import { EMAIL_CHANNEL, EmailService } from './modules/email/index.ts';
import { Users } from './modules/users/index.ts';
import { CustomerLinks, SubscriptionService } from './modules/subscriptions/index.ts';
import { DisbursementService } from './modules/disbursements/index.ts';
import { X402_SETTLEMENTS_CHANNEL, X402Service } from './modules/x402/index.ts';

export interface KasseOptions {
  config: Config;
  databaseUrl: string;
  clock?: Clock;
  log?: Logger;
  secrets?: Secrets;
  /** LISTEN for cross-process notifications (off for one-shot CLI commands). */
  listen?: boolean;
  poolSize?: number;
  /** The chain families to load; default: every installed one (src/chains/<family>/). */
  families?: readonly ChainFamily[];
}

/** A chain family as this Kasse loaded it. */
export interface LoadedChainFamily {
  family: ChainFamily;
  loaded: LoadedFamily;
}

export interface PublicUrls {
  live: string;
  test: string;
  checkout: string;
}

export class Kasse {
  readonly metrics: Metrics;
  readonly merchants: MerchantService;
  /** The account's changes made from the dashboard (Settings, Developers), each with its audit row. */
  readonly merchantSettings: MerchantSettings;
  readonly rateLimiter: RateLimiter;
  /** Event outbox (`publish`), events API and webhook delivery. */
  readonly webhooks: WebhookService;
  /** Configured networks and coins per mode, and the chain adapter serving each. */
  readonly chains: ChainRegistry;
  /** Whether each watched network's nodes answer (recorded by the watchers, read by every process). */
  readonly health: NetworkHealth;
  /** USD rates with failover (CoinGecko, Binance); stablecoins pegged. */
  readonly prices: PriceService;
  /** The double-entry ledger. */
  readonly ledger: LedgerService;
  /** Outgoing transfers (refunds, payouts): recorded, handed to chain senders, settled through one sink. */
  readonly transfers: TransferService;
  /** Payments, coin choices, deposits (`payments.deposits`, the chain families' sink), the payment engine. */
  readonly payments: PaymentService;
  /** Hold and capture: manual payments' holds, their captures and voids, moved through the transfers module. */
  readonly capture: CaptureService;
  /** Refunds: a payment's money sent back through the transfers module. */
  readonly refunds: RefundService;
  /** The test-mode simulator: a test payment finished with a chosen outcome. */
  readonly simulator: Simulator;
  /** Payment links: the API's resource and the public link pages' payments. */
  readonly links: LinkService;
  /** Monthly statements from the ledger. */
  readonly statements: StatementService;
  /** Owners' opt-in to the monthly statement by email, and the worker that mails it on the 1st. */
  readonly statementEmails: StatementEmails;
  /** GST tax invoices and the tax profile. */
  readonly invoices: InvoiceService;
  /** Test events as they are committed, for the test API's event stream. */
  readonly eventStream: EventStreamHub;
  /** Public base URLs (without /v1); filled in when the listeners are bound. */
  urls: PublicUrls;
  /** The ports and services every chain family is given (and its operator commands run with). */
  readonly familyContext: FamilyContext;
  /** The chain families this Kasse loaded, in name order. */
  readonly families: LoadedChainFamily[];
  /** The audit log: sign-ins and every change from the dashboard or by API key. */
  readonly audit: AuditLog;
  /** The email outbox (`enqueue` in the causing transaction) and its SMTP worker. */
  readonly email: EmailService;
  /** Dashboard users: team, one-time links, sign-in, second factor, sessions (each its own service). */
  readonly users: Users;
  /** Subscriptions: scheduled invoices emailed to a customer, their scheduler and the customer's signed links. */
  readonly subscriptions: SubscriptionService;
  readonly subscriptionLinks: CustomerLinks;
  /** Mass payouts approved by owners, sent through the transfers module. */
  readonly disbursements: DisbursementService;
  /** The x402 facilitator: verify and settle for x402 clients through the families' schemes. */
  readonly x402: X402Service;

  private constructor(
    readonly config: Config,
    readonly secrets: Secrets,
    readonly db: Db,
    readonly clock: Clock,
    readonly log: Logger,
    readonly notifier: Notifier | null,
    families: readonly ChainFamily[],
  ) {
    this.metrics = new Metrics(true);
    this.audit = new AuditLog(db, clock);
    this.merchants = new MerchantService(
      db,
      secrets.secretKey,
      { rateLimitPerMinute: config.rateLimitPerMinute, x402RateLimitPerMinute: config.x402.rateLimitPerMinute },
      clock,
      this.audit,
    );
    this.email = new EmailService({
      db,
      clock,
      log,
      mail: config.mail,
      messageIdHost: () => new URL(this.urls.checkout).hostname || 'kasse',
    });
    this.users = new Users({
      db,
      clock,
      log,
      secretKey: secrets.secretKey,
      email: this.email,
      audit: this.audit,
      merchants: this.merchants,
      checkoutBase: () => this.urls.checkout,
    });
    this.merchantSettings = new MerchantSettings({
      db,
      clock,
      merchants: this.merchants,
      audit: this.audit,
      users: this.users,
    });
    this.rateLimiter = new RateLimiter(db, clock);
    this.webhooks = new WebhookService({
      db,
      clock,
      merchants: this.merchants,
      metrics: this.metrics,
      config,
      log,
      audit: this.audit,
    });
    this.health = new NetworkHealth({ db, clock, log });
    this.chains = new ChainRegistry(loadNetworks(config, families), secrets.secretKey, families, this.health);
    this.prices = createPriceService(config.prices, { clock, logger: log });
    this.ledger = new LedgerService(db, clock);
    this.transfers = new TransferService({ db, clock, log, chains: this.chains });
    const funds: FundsDeps & { transfers: TransferService } = {
      db,
      clock,
      log,
      chains: this.chains,
      prices: this.prices,
      ledger: this.ledger,
      transfers: this.transfers,
      events: this.webhooks,
      audit: this.audit,
    };
    this.payments = new PaymentService({
      ...funds,
      feeBps: config.feeBps,
      swapFeeBps: config.swapFeeBps,
      checkoutBase: () => this.urls.checkout,
    });
    this.capture = new CaptureService(this.payments.engine, this.transfers);
    this.refunds = new RefundService(this.payments.engine, this.transfers, this.capture);
    this.simulator = new Simulator(this.payments, this.capture);
    this.statements = new StatementService({ db, clock, chains: this.chains });
    this.statementEmails = new StatementEmails({
      db,
      clock,
      log,
      statements: this.statements,
      email: this.email,
      users: this.users.team,
      merchants: this.merchants,
      audit: this.audit,
      chains: this.chains,
      dashboardUrl: (path) => `${this.urls.checkout}/dashboard${path}`,
    });
    const fx = new FrankfurterClient({ baseUrl: config.fx.url, timeoutMs: config.fx.timeoutMs, clock });
    this.invoices = new InvoiceService({ db, clock, merchants: this.merchants, fx, audit: this.audit });
    this.links = new LinkService({
      db,
      clock,
      payments: this.payments,
      audit: this.audit,
      checkoutBase: () => this.urls.checkout,
    });
    this.eventStream = new EventStreamHub(db);
    this.subscriptionLinks = new CustomerLinks(secrets.secretKey, () => this.urls.checkout);
    this.subscriptions = new SubscriptionService(
      {
        db,
        clock,
        log,
        payments: this.payments,
        simulator: this.simulator,
        events: this.webhooks,
        email: this.email,
        audit: this.audit,
        merchants: this.merchants,
        links: this.subscriptionLinks,
      },
      {
        chains: this.chains,
        schemes: () => this.families.flatMap((f) => (f.loaded.charges ? [f.loaded.charges] : [])),
      },
    );
    this.disbursements = new DisbursementService({
      ...funds,
      email: this.email,
      merchants: this.merchants,
      secretKey: secrets.secretKey,
      checkoutBase: () => this.urls.checkout,
    });
    this.statements.usePayouts(this.disbursements);
    this.statements.useCaptures(this.capture);
    this.familyContext = {
      db,
      clock,
      log,
      metrics: this.metrics,
      secrets,
      chains: this.chains,
      health: this.health,
      deposits: this.payments.deposits,
      payments: this.payments.reader,
      transfers: this.transfers,
      holds: this.capture,
    };
    this.families = families.map((family) => {
      const loaded = family.load?.(this.familyContext) ?? { adapters: [] };
      for (const adapter of loaded.adapters) this.chains.register(adapter);
      return { family, loaded };
    });
    this.x402 = new X402Service({
      db,
      clock,
      log,
      payments: this.payments,
      holds: this.capture,
      schemes: () => this.families.flatMap((f) => [f.loaded.x402, f.loaded.x402Hold].filter((s) => s !== undefined)),
      audit: this.audit,
      discoveryDays: config.x402.discoveryDays,
      linkUrl: (slug) => this.links.url({ slug }),
      saleFailed: async (tx, _tenant, sale) => {
        if (sale.metadata.link_id) await this.links.release({ id: sale.metadata.link_id }, tx);
      },
    });
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
    const families = opts.families ?? (await installedFamilies());
    checkHotWalletKey(secrets.hotWalletKey, families);
    const { db } = createDb(opts.databaseUrl, opts.poolSize ?? 20);
    await migrateToLatest(db, kasseMigrations(families));
    const notifier = opts.listen === false ? null : new Notifier(opts.databaseUrl);
    const kasse = new Kasse(opts.config, secrets, db, opts.clock ?? systemClock, log, notifier, families);
    await kasse.health.load();
    if (notifier) {
      await notifier.listen(
        HEALTH_CHANNEL,
        () => void kasse.health.load().catch((err) => log.warn({ err }, 'network health not read')),
      );
      await notifier.listen(KEYS_CHANNEL, (hash) => kasse.merchants.invalidate(hash));
      await notifier.listen(WEBHOOKS_CHANNEL, () => kasse.webhooks.nudge());
      await notifier.listen(KEYS_CHANNEL, () => kasse.webhooks.delivery.forgetSecrets());
      await notifier.listen(EMAIL_CHANNEL, () => kasse.email.nudge());
      await notifier.listen(EVENT_STREAM_CHANNEL, (payload) => kasse.eventStream.announce(payload));
      await notifier.listen(X402_SETTLEMENTS_CHANNEL, (id) => kasse.x402.settlementEnded(id));
      notifier.onReconnect = () => {
        void kasse.health.load().catch((err) => log.warn({ err }, 'network health not read'));
        kasse.merchants.invalidate('*');
        kasse.eventStream.closeAll();
      };
      await notifier.start();
    }
    return kasse;
  }

  async close(): Promise<void> {
    await this.notifier?.stop();
    this.prices.stop();
    await this.webhooks.close();
    await this.x402.close();
    await this.db.destroy();
  }

  /** Base URL of an API listener including the version segment. */
  apiBase(mode: 'test' | 'live'): string {
    return `${this.urls[mode]}/v1`;
  }
}
