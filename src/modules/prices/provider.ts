/**
 * What the price provider clients share: `PriceProviderError` and the errors of a provider's answer, the exact
 * decimal-string helpers, the timed JSON fetch, and the client base with its base URL, timeout and clock.
 */
import type { TokenConfig } from '../../chains/types.ts';
import { systemClock, type Clock } from '../../core/clock.ts';
import type { ProviderName } from './service.ts';

/** Why a provider request failed. */
export type PriceProviderErrorKind = 'timeout' | 'network' | 'rate_limited' | 'http' | 'api' | 'malformed';

/** A failed provider request, with a message naming the provider and the cause. */
export class PriceProviderError extends Error {
  readonly provider: ProviderName;
  readonly kind: PriceProviderErrorKind;
  /** HTTP status when the provider answered, else null. */
  readonly status: number | null;

  constructor(
    provider: ProviderName,
    kind: PriceProviderErrorKind,
    message: string,
    status: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(`${provider}: ${message}`, options);
    this.name = 'PriceProviderError';
    this.provider = provider;
    this.kind = kind;
    this.status = status;
  }
}

const PLAIN_DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/**
 * Canonical form of a plain non-negative decimal string: no leading zeros in the integer part, no trailing zeros in
 * the fraction, no lone point ("3456.78000000" → "3456.78", "100.00" → "100", "007.5" → "7.5").
 * Throws on anything else (signs, exponents, spaces).
 */
export function normalizeDecimal(text: string): string {
  const m = PLAIN_DECIMAL.exec(text);
  if (!m) throw new Error(`not a plain decimal number: ${JSON.stringify(text)}`);
  const whole = m[1]!.replace(/^0+(?=\d)/, '');
  const frac = (m[2] ?? '').replace(/0+$/, '');
  return frac.length > 0 ? `${whole}.${frac}` : whole;
}

/**
 * Exact plain decimal string of a non-negative finite JSON number: its shortest round-trip representation
 * (`String(n)`) with any exponent expanded by moving the decimal point in the digit string — never by float
 * arithmetic (1e-7 → "0.0000001", 2.5e+21 → "2500000000000000000000", 123456789.12345679 stays as is).
 */
export function decimalFromNumber(n: number): string {
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0)
    throw new Error(`not a non-negative finite number: ${String(n)}`);
  const text = String(n);
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(text);
  if (!m) throw new Error(`unexpected number text: ${text}`);
  const whole = m[1]!;
  const frac = m[2] ?? '';
  const exp = m[3] === undefined ? 0 : Number(m[3]);
  const digits = whole + frac;
  const point = whole.length + exp;
  let plain: string;
  if (point <= 0) plain = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) plain = digits + '0'.repeat(point - digits.length);
  else plain = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return normalizeDecimal(plain);
}

/** Whether a canonical decimal string is greater than zero. */
export function isPositiveDecimal(text: string): boolean {
  return PLAIN_DECIMAL.test(text) && /[1-9]/.test(text);
}

/** Raw answer of a provider request: status, headers and body text (not yet parsed). */
export interface ProviderResponse {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * GET `url` with the global fetch, aborting after `timeoutMs` (including reading the body). Network failures and
 * timeouts become `PriceProviderError`; any HTTP status is returned for the caller to interpret.
 * @internal shared by the provider clients.
 */
export async function providerGet(
  provider: ProviderName,
  url: string,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<ProviderResponse> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await fetch(url, {
      method: 'GET',
      headers: { accept: 'application/json', 'user-agent': 'kasse-prices', ...headers },
      signal,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
  } catch (err) {
    if (signal.aborted || (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))) {
      throw new PriceProviderError(provider, 'timeout', `no answer within ${timeoutMs} ms`, null, { cause: err });
    }
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
    const message = err instanceof Error ? err.message : String(err);
    throw new PriceProviderError(provider, 'network', `request failed (${message}${cause})`, null, { cause: err });
  }
}

/** The ids of the tokens that have a provider key (`keyOf`, normalised; undefined: skipped), grouped by that key. */
export function tokensByKey(
  tokens: TokenConfig[],
  keyOf: (t: TokenConfig) => string | undefined,
): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  for (const t of tokens) {
    const key = keyOf(t);
    if (key === undefined) continue;
    const list = byKey.get(key);
    if (list) list.push(t.id);
    else byKey.set(key, [t.id]);
  }
  return byKey;
}

/** Parses a provider body as JSON or throws a `malformed` `PriceProviderError`. */
export function parseProviderJson(provider: ProviderName, res: ProviderResponse): unknown {
  try {
    return JSON.parse(res.text) as unknown;
  } catch {
    throw new PriceProviderError(
      provider,
      'malformed',
      `malformed response body (HTTP ${res.status}, not JSON): ${snippet(res.text)}`,
      res.status,
    );
  }
}

/** First characters of a body for error messages. */
export function snippet(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat || '(empty)';
}

/**
 * GETs `endpoint` (named in errors) at `url` and parses the JSON answer: a 429 is `rate_limited`; another answer
 * outside 2xx is what `refused` makes of it (the provider's own error shapes), else `http`; a body that is not JSON
 * is `malformed`. The body and the answer come back.
 */
export async function getJson(
  provider: ProviderName,
  url: string,
  o: {
    endpoint: string;
    timeoutMs: number;
    headers?: Record<string, string>;
    refused?: (res: ProviderResponse) => PriceProviderError | null;
  },
): Promise<{ body: unknown; res: ProviderResponse }> {
  const res = await providerGet(provider, url, o.timeoutMs, o.headers);
  if (res.status === 429) throw rateLimited(provider, res);
  if (res.status < 200 || res.status > 299) throw o.refused?.(res) ?? httpError(provider, res, o.endpoint);
  return { body: parseProviderJson(provider, res), res };
}

/** A `rate_limited` error for a refused answer (429, …), naming its Retry-After wait; `what` as the provider puts it. */
export function rateLimited(provider: ProviderName, res: ProviderResponse, what = 'rate limited'): PriceProviderError {
  const retry = res.headers.get('retry-after');
  const wait = retry ? `, retry after ${retry} s` : '';
  return new PriceProviderError(provider, 'rate_limited', `${what} (HTTP ${res.status}${wait})`, res.status);
}

/** An `http` error for a non-2xx answer from `endpoint`. */
export function httpError(provider: ProviderName, res: ProviderResponse, endpoint: string): PriceProviderError {
  return new PriceProviderError(
    provider,
    'http',
    `HTTP ${res.status} from ${endpoint}: ${snippet(res.text)}`,
    res.status,
  );
}

/** A `malformed` error: the JSON body is not what was `expected`. */
export function malformed(provider: ProviderName, res: ProviderResponse, expected: string): PriceProviderError {
  const message = `malformed response body: expected ${expected}, got ${snippet(res.text)}`;
  return new PriceProviderError(provider, 'malformed', message, res.status);
}

export interface ProviderClientOptions {
  /** Host or API root; the endpoint's path is appended. */
  baseUrl?: string;
  /** Abort the request (including the body) after this many ms; default 5000. */
  timeoutMs?: number;
  /** Dates the rates (fetch time). */
  clock?: Clock;
}

/** A provider client's settings: its base URL (no trailing slash), request timeout and clock. */
export abstract class ProviderClient {
  protected readonly baseUrl: string;
  protected readonly timeoutMs: number;
  protected readonly clock: Clock;

  constructor(defaultBaseUrl: string, options: ProviderClientOptions) {
    this.baseUrl = (options.baseUrl ?? defaultBaseUrl).replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.clock = options.clock ?? systemClock;
  }
}
