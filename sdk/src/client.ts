/**
 * The Kasse client: `new Kasse(key, { baseUrl })` with one method per API operation (./resources.ts).
 *
 * Every request carries the key and a JSON body when it has one. Creating calls that accept an `Idempotency-Key`
 * get one (a random UUID) unless the caller gives one, and keep it across retries, so a retried create never makes
 * two objects. Retries, with exponential backoff and jitter:
 * - 429 on any call: the API refuses a rate-limited request before doing anything, so it is safe to send again;
 *   the wait is the answer's `Retry-After`;
 * - 502, 503, 504, a timeout or a failed connection on idempotent calls only: reads, and creating calls sent with
 *   an Idempotency-Key. Anything else (a POST whose effect is unknown) is not retried and surfaces as an error.
 */
import { randomUUID } from 'node:crypto';
import { errorFromResponse, KasseConnectionError, KasseError } from './errors.ts';
import { OPERATIONS } from './generated/operations.ts';
import { PagePromise, type Page } from './pagination.ts';
import { RESOURCES, type Endpoint, type Resources } from './resources.ts';
import { EventStream, type StreamOptions } from './stream.ts';
import type { OperationId } from './types.ts';
import { webhooks } from './webhooks.ts';

export const VERSION = '0.1.0';

export interface KasseOptions {
  /** The API base URL including `/v1`, e.g. `https://api.pay.example.com/v1` or `http://127.0.0.1:8081/v1`. */
  baseUrl: string;
  /** Retries after a 429, 5xx or network failure (default 2). */
  maxRetries?: number;
  /** Milliseconds before a request is abandoned (default 30,000). */
  timeout?: number;
  /** Longest wait between retries in milliseconds, whatever `Retry-After` says (default 60,000). */
  maxRetryDelay?: number;
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /** The Idempotency-Key of a creating call (default: a fresh random UUID). */
  idempotencyKey?: string;
  maxRetries?: number;
  timeout?: number;
  signal?: AbortSignal;
  /** Extra headers. */
  headers?: Record<string, string>;
}

type Meta = (typeof OPERATIONS)[OperationId];

const RETRYABLE_STATUS = new Set([502, 503, 504]);

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Seconds of a `Retry-After` header (a number or an HTTP date), or null. */
function retryAfterMs(headers: Headers): number | null {
  const v = headers.get('retry-after');
  if (!v) return null;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

export class KasseClientCore {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly fetch: typeof fetch;
  private readonly maxRetries: number;
  private readonly timeout: number;
  private readonly maxRetryDelay: number;

  constructor(apiKey: string, options: KasseOptions) {
    if (typeof apiKey !== 'string' || apiKey === '')
      throw new TypeError('new Kasse(key, { baseUrl }): the API key is required');
    if (!options || typeof options.baseUrl !== 'string')
      throw new TypeError('new Kasse(key, { baseUrl }): baseUrl is required, e.g. http://127.0.0.1:8081/v1');
    this.apiKey = apiKey;
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? globalThis.fetch;
    this.maxRetries = options.maxRetries ?? 2;
    this.timeout = options.timeout ?? 30_000;
    this.maxRetryDelay = options.maxRetryDelay ?? 60_000;
  }

  /** Backoff before retry number `attempt` (1-based): 0.5 s, 1 s, 2 s … up to 8 s, each ±25 %. */
  private backoff(attempt: number): number {
    return Math.min(8_000, 500 * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5);
  }

  private url(meta: Meta, pathArgs: unknown[], query: Record<string, unknown> | undefined): string {
    let i = 0;
    let url =
      this.baseUrl +
      meta.path.replace(/\{\w+\}/g, (name) => {
        const v = pathArgs[i++];
        if (typeof v !== 'string' || v === '') throw new TypeError(`${meta.path}: ${name} must be a non-empty string`);
        return encodeURIComponent(v);
      });
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null) qs.append(k, String(v));
    if ([...qs].length > 0) url += `?${qs}`;
    return url;
  }

  private headers(meta: Meta, options: RequestOptions, extra: Record<string, string>): Record<string, string> {
    return {
      authorization: `Bearer ${this.apiKey}`,
      'user-agent': `kasse-sdk-node/${VERSION}`,
      ...extra,
      ...(meta.idempotencyKey ? { 'idempotency-key': options.idempotencyKey ?? randomUUID() } : {}),
      ...options.headers,
    };
  }

  /** One operation call: JSON in, JSON out, with the retries described above. */
  async request<T>(meta: Meta, pathArgs: unknown[], input: unknown, options: RequestOptions = {}): Promise<T> {
    const hasBody = meta.body && input !== undefined;
    const url = this.url(meta, pathArgs, meta.body ? undefined : (input as Record<string, unknown> | undefined));
    const headers = this.headers(meta, options, {
      accept: meta.binary ? '*/*' : 'application/json',
      ...(hasBody ? { 'content-type': 'application/json' } : {}),
    });
    const body = hasBody ? JSON.stringify(input) : undefined;
    const idempotent = meta.method === 'get' || meta.idempotencyKey;
    const maxRetries = options.maxRetries ?? this.maxRetries;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetch(url, { method: meta.method.toUpperCase(), headers, body, signal: this.signal(options) });
      } catch (err) {
        if (options.signal?.aborted) throw err;
        if (idempotent && attempt < maxRetries) {
          await sleep(this.backoff(attempt + 1), options.signal);
          continue;
        }
        const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
        throw new KasseConnectionError({
          message: `No answer from ${this.baseUrl} (${cause}): ${(err as Error).message}`,
          status: null,
          code: null,
          param: null,
          requestId: null,
        });
      }
      if (res.ok)
        return (
          res.status === 204 ? undefined : meta.binary ? new Uint8Array(await res.arrayBuffer()) : await res.json()
        ) as T;
      const retry = attempt < maxRetries && (res.status === 429 || (idempotent && RETRYABLE_STATUS.has(res.status)));
      if (retry) {
        await res.body?.cancel();
        const wait =
          res.status === 429 ? (retryAfterMs(res.headers) ?? this.backoff(attempt + 1)) : this.backoff(attempt + 1);
        await sleep(Math.min(wait, this.maxRetryDelay), options.signal);
        continue;
      }
      throw errorFromResponse(res.status, res.headers, await res.json().catch(() => null));
    }
  }

  private signal(options: RequestOptions): AbortSignal {
    const timeout = AbortSignal.timeout(options.timeout ?? this.timeout);
    return options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  }

  /** A list call: the first page when awaited, every item when iterated. */
  list(
    meta: Meta,
    pathArgs: unknown[],
    query: Record<string, unknown> | undefined,
    options?: RequestOptions,
  ): PagePromise<Page<unknown>> {
    return new PagePromise((cursor) => this.request(meta, pathArgs, cursor ? { ...query, cursor } : query, options));
  }

  /** A stream call: server-sent events, reconnecting with Last-Event-ID. */
  stream(
    meta: Meta,
    pathArgs: unknown[],
    query: Record<string, unknown> | undefined,
    options: StreamOptions & RequestOptions = {},
  ): EventStream {
    const url = this.url(meta, pathArgs, query);
    return new EventStream(async (lastEventId, signal) => {
      const headers = this.headers(meta, options, {
        accept: 'text/event-stream',
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      });
      let res: Response;
      try {
        res = await this.fetch(url, { headers, signal });
      } catch (err) {
        if (signal?.aborted) throw err;
        throw new KasseConnectionError({
          message: `No answer from ${this.baseUrl}: ${(err as Error).message}`,
          status: null,
          code: null,
          param: null,
          requestId: null,
        });
      }
      if (!res.ok || !res.body) throw errorFromResponse(res.status, res.headers, await res.json().catch(() => null));
      return res;
    }, options);
  }
}

function methodFor(core: KasseClientCore, id: OperationId) {
  const meta = OPERATIONS[id] as Meta;
  const pathCount = (meta.path.match(/\{/g) ?? []).length;
  const takesInput = meta.body || meta.query;
  return (...args: unknown[]) => {
    const pathArgs = args.slice(0, pathCount);
    const input = takesInput ? args[pathCount] : undefined;
    const options = args[pathCount + (takesInput ? 1 : 0)] as (RequestOptions & StreamOptions) | undefined;
    if (meta.stream) return core.stream(meta, pathArgs, input as Record<string, unknown> | undefined, options);
    if (meta.list) return core.list(meta, pathArgs, input as Record<string, unknown> | undefined, options);
    return core.request(meta, pathArgs, input, options);
  };
}

function build(core: KasseClientCore, table: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(table).map(([name, entry]) => [
      name,
      'operationId' in entry ? methodFor(core, (entry as Endpoint<OperationId>).operationId) : build(core, entry),
    ]),
  );
}

/**
 * What `HTTPFacilitatorClient` of `@x402/core/server` takes to use this Kasse as its x402 facilitator:
 * `new HTTPFacilitatorClient(kasse.x402.facilitator())`, then `x402ResourceServer` and `paymentMiddleware` of
 * `@x402/express` (or `@x402/hono`) as usual. The API key goes as Bearer on every call (docs/x402.md).
 */
export interface X402FacilitatorConfig {
  url: string;
  createAuthHeaders: () => Promise<Record<'verify' | 'settle' | 'supported', Record<string, string>>>;
}

export interface Kasse extends Resources {
  x402: Resources['x402'] & { facilitator(): X402FacilitatorConfig };
}

// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the resource methods declared by the interface are built from the table in the constructor
export class Kasse {
  /** Webhook signature checks: `Kasse.webhooks.constructEvent(rawBody, signatureHeader, secret)`. */
  static readonly webhooks = webhooks;
  /** The same as `Kasse.webhooks`. */
  readonly webhooks = webhooks;
  /** Low-level access: the configured transport. */
  readonly core: KasseClientCore;

  constructor(apiKey: string, options: KasseOptions) {
    this.core = new KasseClientCore(apiKey, options);
    Object.assign(this, build(this.core, RESOURCES));
    const auth = { Authorization: `Bearer ${apiKey}` };
    const facilitator: X402FacilitatorConfig = {
      url: `${this.core.baseUrl}/x402`,
      createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: auth }),
    };
    this.x402.facilitator = () => facilitator;
  }
}

export { KasseError };
