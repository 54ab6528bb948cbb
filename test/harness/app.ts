/**
 * The whole application for a test file: its own database, all three listeners on port 0, a fake clock, and small
 * HTTP clients that speak to the public API the way a merchant's server would.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { english, generateMnemonic } from 'viem/accounts';
import type { ChainFamily } from '../../src/chains/plugin.ts';
import { KASSE_HOME, loadConfig, type Config } from '../../src/config.ts';
import { FakeClock } from '../../src/core/clock.ts';
import { createLogger } from '../../src/core/log.ts';
import type { Secrets } from '../../src/core/secrets.ts';
import { Kasse } from '../../src/kasse.ts';
import { startListeners, type Listeners } from '../../src/server.ts';
import { createTestDatabase } from './db.ts';
import { assertDocumentedErrors, recordAnswer } from './documented-errors.ts';
import { OPERATOR } from '../../src/modules/audit/index.ts';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly key: string | null,
  ) {}

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const h: Record<string, string> = { ...headers };
    if (this.key) h.authorization = `Bearer ${this.key}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // non-JSON (HTML pages, metrics)
    }
    recordAnswer(this.baseUrl, method, path, res.status, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T };
  }
  get<T = any>(path: string, headers?: Record<string, string>) {
    return this.request<T>('GET', path, undefined, headers);
  }
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('POST', path, body, headers);
  }
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request<T>('PATCH', path, body, headers);
  }
}

export interface TestMerchant {
  id: string;
  testKey: string;
  liveKey: string;
  webhookSecret: string;
  test: ApiClient;
  live: ApiClient;
}

export interface TestKasse {
  kasse: Kasse;
  clock: FakeClock;
  listeners: Listeners;
  config: Config;
  databaseUrl: string;
  /** API base URLs including /v1, and the checkout base. */
  urls: { live: string; test: string; checkout: string };
  merchant(opts?: { name?: string; webhookUrl?: string | null; rateLimit?: number }): Promise<TestMerchant>;
  close(): Promise<void>;
}

export function testSecrets(): Secrets {
  return { secretKey: randomBytes(32), masterSeed: generateMnemonic(english), hotWalletKey: null };
}

export interface TestKasseOptions {
  env?: Record<string, string>;
  clock?: FakeClock;
  /** Reuse an existing database (restart scenarios). */
  databaseUrl?: string;
  secrets?: Secrets;
  /** Hook to adjust the Kasse before listeners start (e.g. register chain adapters). */
  configure?: (kasse: Kasse) => Promise<void> | void;
  /** Where logs go (default: stderr at KASSE_TEST_LOG_LEVEL, silent unless set). */
  log?: ReturnType<typeof createLogger>;
  /** Chain families to load instead of the installed ones. */
  families?: readonly ChainFamily[];
}

/** Secrets per database, so a restart on the same database (same process) can decrypt what the first run sealed. */
const secretsByDatabase = new Map<string, Secrets>();

export async function startTestKasse(opts: TestKasseOptions = {}): Promise<TestKasse> {
  const db = opts.databaseUrl
    ? { url: opts.databaseUrl, drop: async () => {} }
    : await createTestDatabase({ migrated: !opts.families });
  const config = loadConfig({
    KASSE_DATA_DIR: mkdtempSync(join(tmpdir(), 'kasse-data-')),
    KASSE_LIVE_PORT: '0',
    KASSE_TEST_PORT: '0',
    KASSE_CHECKOUT_PORT: '0',
    KASSE_LOG_LEVEL: process.env.KASSE_TEST_LOG_LEVEL ?? 'silent',
    ...opts.env,
  });
  const clock = opts.clock ?? new FakeClock('2026-03-01T12:00:00Z');
  const kasse = await Kasse.open({
    config,
    databaseUrl: db.url,
    clock,
    secrets: opts.secrets ?? secretsByDatabase.get(db.url) ?? testSecrets(),
    log: opts.log ?? createLogger(config.logLevel, process.stderr),
    poolSize: 10,
    families: opts.families,
  });
  secretsByDatabase.set(db.url, kasse.secrets);
  let listeners: Listeners;
  try {
    await opts.configure?.(kasse);
    listeners = await startListeners(kasse);
  } catch (err) {
    // A failed start must not leave pools and listeners open, or the test file hangs until its timeout.
    await kasse.close().catch(() => {});
    if (!opts.databaseUrl) await db.drop().catch(() => {});
    throw err;
  }
  const urls = { live: kasse.apiBase('live'), test: kasse.apiBase('test'), checkout: kasse.urls.checkout };
  return {
    kasse,
    clock,
    listeners,
    config,
    databaseUrl: db.url,
    urls,
    async merchant(m = {}) {
      const created = await kasse.merchants.create({ name: m.name ?? 'Test shop', webhookUrl: m.webhookUrl ?? null });
      if (m.rateLimit) await kasse.merchants.update(created.merchant_id, { rateLimitPerMinute: m.rateLimit }, OPERATOR);
      return {
        id: created.merchant_id,
        testKey: created.test_key,
        liveKey: created.live_key,
        webhookSecret: created.webhook_secret,
        test: new ApiClient(urls.test, created.test_key),
        live: new ApiClient(urls.live, created.live_key),
      };
    },
    async close() {
      const problem = await assertDocumentedErrors([urls.test, urls.live]).then(
        () => null,
        (err: unknown) => err,
      );
      await listeners.close();
      await kasse.close();
      if (!opts.databaseUrl) await db.drop();
      if (problem) throw problem;
    },
  };
}

/**
 * A live networks file (`KASSE_LIVE_NETWORKS_FILE`) in which `chains` are set up: each gets a forwarder factory, so
 * live mode runs them (addresses derive offline; nothing is watched unless workers start). The others stay as shipped.
 */
export function liveNetworksFile(chains: string[] = ['base']): string {
  const doc = JSON.parse(readFileSync(join(KASSE_HOME, 'config', 'networks.live.json'), 'utf8')) as {
    networks: Array<{ id: string; evm?: unknown }>;
  };
  for (const n of doc.networks)
    if (chains.includes(n.id)) n.evm = { forwarder_factory: '0x5FbDB2315678afecb367f032d93F642f64180aa3' };
  const file = join(mkdtempSync(join(tmpdir(), 'kasse-live-networks-')), 'networks.live.json');
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

/**
 * Runs `fn` with the payments module on a database handle that notes each statement it executes (one entry per
 * result, as `N row(s)`; a statement that fails has no result), and gives the notes back.
 */
export async function paymentStatements(kasse: Kasse, fn: () => Promise<void>): Promise<string[]> {
  const statements: string[] = [];
  const counting = kasse.db.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      statements.push(`${args.result.rows.length} row(s)`);
      return args.result;
    },
  });
  const payments = kasse.payments as unknown as { deps: { db: typeof counting } };
  const original = payments.deps.db;
  payments.deps.db = counting;
  try {
    await fn();
  } finally {
    payments.deps.db = original;
  }
  return statements;
}
