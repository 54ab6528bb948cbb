/**
 * Configuration: the environment parsed and validated once at start; a bad value stops the program with a message
 * naming the variable. Everything else receives a typed `Config`, never `process.env`.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Kasse directory (where package.json is): the nearest directory above this file that has one, so it is the same
 * whether the sources run or JavaScript compiled from them into a folder inside it (the test run's). npm scripts run
 * here, so the default data directory and a relative KASSE_DATA_DIR are taken from here: the server and the CLI find
 * the same database wherever the CLI is run from. Files Kasse reads outside src/ (config/, docs/, contracts/, the
 * README) are found from here too.
 */
export const KASSE_HOME = packageRoot(dirname(fileURLToPath(import.meta.url)));

/**
 * NOTE: the x402 facilitator routes' default limit per key: a paid call costs a verify and a settle, so 3,000 requests
 * a minute serve 1,500 paid calls a minute (25 a second) per key; the spec's 60 a minute keeps governing the rest.
 */
export const X402_RATE_LIMIT_DEFAULT = 3000;

function packageRoot(dir: string): string {
  if (existsSync(join(dir, 'package.json'))) return dir;
  const up = dirname(dir);
  if (up === dir) throw new Error('no package.json above src/config.ts');
  return packageRoot(up);
}

export type Role = 'api' | 'workers';

export interface Config {
  databaseUrl: string | null;
  dataDir: string;
  host: string;
  ports: { live: number; test: number; checkout: number };
  /** Public base URLs without the `/v1` segment; null = derived from the bound port. */
  publicUrls: { live: string | null; test: string | null; checkout: string | null };
  roles: Role[];
  logLevel: string;
  /** Default requests per minute per API key. */
  rateLimitPerMinute: number;
  /** The x402 facilitator (docs/x402.md): its routes' limit per key, and how long an unpaid resource stays discoverable. */
  x402: { rateLimitPerMinute: number; discoveryDays: number };
  /** Service fee in basis points of the credited value. */
  feeBps: number;
  secretsFile: string | null;
  networksFile: string | null;
  /** Replaces the live set (`config/networks.live.json`), e.g. with a deployment's own copy. */
  liveNetworksFile: string | null;
  prices: { coingeckoUrl: string; binanceUrl: string; maxAgeSeconds: number; refreshSeconds: number };
  webhooks: { timeoutMs: number; concurrency: number };
  bodyLimitBytes: number;
  /** Conversion spread in basis points, posted with credits in coins that are not stablecoins. */
  swapFeeBps: number;
  /** FX reference rates for tax invoices (Frankfurter's v1 wire format). */
  fx: { url: string; timeoutMs: number };
  /** Outgoing email (src/modules/email): SMTP server URL (null: mail is kept and shown on the dashboard) and sender. */
  mail: { smtpUrl: string | null; from: string };
  /** Bearer token for `GET /metrics` (`KASSE_METRICS_TOKEN`); null = loopback clients only. */
  metricsToken: string | null;
  /** How long the roles get to finish after a stop signal before the process stops at once (src/main.ts). */
  stopTimeoutMs: number;
  /**
   * Secrets given in the environment (`KASSE_SECRET_KEY`, `KASSE_MASTER_SEED`, `KASSE_HOT_WALLET_KEY`); checked and
   * completed from the secrets file by core/secrets.ts. Never logged.
   */
  secretsEnv: { secretKey: string | null; masterSeed: string | null; hotWalletKey: string | null };
}

export interface ConfigDefaults {
  /** Log level when `KASSE_LOG_LEVEL` is unset (the server logs at info, the CLI at warn). */
  logLevel?: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = 65535 * 1_000_000): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** An optional URL setting: unset is null; otherwise one of `protocols` with a host, else `must be ${expected}`. */
function urlSetting(env: Env, name: string, protocols: readonly string[], expected: string): string | null {
  const raw = env[name];
  if (!raw) return null;
  try {
    const u = new URL(raw);
    if (!protocols.includes(u.protocol) || !u.hostname) throw new Error();
  } catch {
    throw new ConfigError(`${name} must be ${expected}`);
  }
  return raw;
}

/** The SMTP URL; its error never repeats the value (it carries the password). */
function smtpUrl(env: Env, name: string): string | null {
  return urlSetting(
    env,
    name,
    ['smtp:', 'smtps:'],
    'an smtp:// or smtps:// URL (e.g. smtps://user:pass@mail.example.com:465)',
  );
}

function mailbox(env: Env, name: string, fallback: string): string {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  // "Name <address>" or a bare address; no line breaks (header injection).
  if (/[\r\n]/.test(raw) || !/^(?:[^<>@]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/.test(raw)) {
    throw new ConfigError(`${name} must be an email address or "Name <address>", got "${raw}"`);
  }
  return raw;
}

function url(env: Env, name: string): string | null {
  return urlSetting(env, name, ['http:', 'https:'], `an http(s) URL, got "${env[name]}"`)?.replace(/\/+$/, '') ?? null;
}

export function loadConfig(env: Env = process.env, defaults: ConfigDefaults = {}): Config {
  const roles = (env.KASSE_ROLES ?? 'api,workers')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  for (const r of roles)
    if (r !== 'api' && r !== 'workers') throw new ConfigError(`KASSE_ROLES: unknown role "${r}" (use api, workers)`);
  return {
    databaseUrl: env.DATABASE_URL || null,
    dataDir: resolve(KASSE_HOME, env.KASSE_DATA_DIR || 'data'),
    host: env.KASSE_HOST || '127.0.0.1',
    ports: {
      live: int(env, 'KASSE_LIVE_PORT', 8080, 0, 65535),
      test: int(env, 'KASSE_TEST_PORT', 8081, 0, 65535),
      checkout: int(env, 'KASSE_CHECKOUT_PORT', 8082, 0, 65535),
    },
    publicUrls: {
      live: url(env, 'KASSE_LIVE_URL'),
      test: url(env, 'KASSE_TEST_URL'),
      checkout: url(env, 'KASSE_CHECKOUT_URL'),
    },
    roles: roles as Role[],
    logLevel: env.KASSE_LOG_LEVEL || defaults.logLevel || 'info',
    rateLimitPerMinute: int(env, 'KASSE_RATE_LIMIT', 60, 1),
    x402: {
      rateLimitPerMinute: int(env, 'KASSE_X402_RATE_LIMIT', X402_RATE_LIMIT_DEFAULT, 1),
      discoveryDays: int(env, 'KASSE_X402_DISCOVERY_DAYS', 30, 1, 3650),
    },
    feeBps: int(env, 'KASSE_FEE_BPS', 100, 0, 10000),
    secretsFile: env.KASSE_SECRETS_FILE || null,
    networksFile: env.KASSE_NETWORKS_FILE || null,
    liveNetworksFile: env.KASSE_LIVE_NETWORKS_FILE || null,
    prices: {
      coingeckoUrl: url(env, 'KASSE_COINGECKO_URL') ?? 'https://api.coingecko.com/api/v3',
      binanceUrl: url(env, 'KASSE_BINANCE_URL') ?? 'https://api.binance.com',
      maxAgeSeconds: int(env, 'KASSE_PRICE_MAX_AGE', 300, 1),
      refreshSeconds: int(env, 'KASSE_PRICE_REFRESH', 60, 1),
    },
    webhooks: {
      timeoutMs: int(env, 'KASSE_WEBHOOK_TIMEOUT_MS', 10_000, 100),
      concurrency: int(env, 'KASSE_WEBHOOK_CONCURRENCY', 64, 1, 10_000),
    },
    bodyLimitBytes: int(env, 'KASSE_BODY_LIMIT', 64 * 1024, 1024),
    metricsToken: env.KASSE_METRICS_TOKEN || null,
    stopTimeoutMs: int(env, 'KASSE_STOP_TIMEOUT_MS', 10_000, 100, 600_000),
    secretsEnv: {
      secretKey: env.KASSE_SECRET_KEY || null,
      masterSeed: env.KASSE_MASTER_SEED || null,
      hotWalletKey: env.KASSE_HOT_WALLET_KEY || null,
    },
    swapFeeBps: int(env, 'KASSE_SWAP_FEE_BPS', 50, 0, 10000),
    fx: {
      url: url(env, 'KASSE_FX_URL') ?? 'https://api.frankfurter.dev/v1',
      timeoutMs: int(env, 'KASSE_FX_TIMEOUT_MS', 5000, 100),
    },
    mail: { smtpUrl: smtpUrl(env, 'KASSE_SMTP_URL'), from: mailbox(env, 'KASSE_MAIL_FROM', 'Kasse <kasse@localhost>') },
  };
}
