/**
 * JSON-RPC over HTTP to several endpoints of one network, the transport every family's node client is a thin layer
 * over. Built for nodes that fail and lag: a per-attempt timeout; failover to the next URL on any retryable failure
 * (network error, timeout, HTTP 429/5xx, a body that is not JSON-RPC, an error answer the family calls retryable);
 * exponential backoff with full jitter between attempts, honouring `Retry-After` on 429; single calls and batches
 * (many calls of one method in one HTTP request); HTTP basic auth taken from a URL's user and password and sent as
 * a header (logs name a URL's origin only: RPC URLs often carry an API key or a password). Every HTTP attempt is
 * counted in `counts` by method (benchmarks and tests read it) and in `kasse_chain_rpc_calls_total{chain,outcome}`.
 *
 * What differs between families is their `JsonRpcDialect`: which error answers another node (or a later attempt)
 * may answer differently, which mean "slow down", the error class callers catch (a subclass of `JsonRpcError`), the
 * protocol version, and how a response's text is parsed.
 */
import type { Logger } from '../core/log.ts';
import type { Metrics } from '../core/metrics.ts';
import type { NetworkConfig } from './types.ts';

export interface JsonRpcOptions {
  /** Network id, for metrics and logs. */
  chain: string;
  urls: string[];
  /** Per-attempt timeout; default 10 s. */
  timeoutMs?: number;
  /** Attempts per call across all URLs before giving up; default max(5, 2 × URLs). */
  attempts?: number;
  /** First backoff step; doubles per attempt up to maxBackoffMs (a random fraction of it is slept). 0: no sleeping. */
  backoffMs?: number;
  maxBackoffMs?: number;
  metrics?: Metrics;
  log?: Logger;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** The options of a family adapter's client of `network`'s RPC URLs (one per adapter). */
export function networkRpcOptions(
  network: NetworkConfig,
  timeoutMs: number,
  deps: { metrics?: Metrics; log?: Logger },
): Pick<JsonRpcOptions, 'chain' | 'urls' | 'timeoutMs' | 'metrics' | 'log'> {
  return { chain: network.id, urls: network.rpcUrls, timeoutMs, metrics: deps.metrics, log: deps.log };
}

/**
 * A failed call: a node's error answer (`code` is its JSON-RPC code) or a transport failure (`code` null, or the HTTP
 * status). `retryable` is false for answers another attempt would repeat. Families extend it with their own name.
 */
export class JsonRpcError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly retryable: boolean,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

/** JSON-RPC's "Method not found": a method the node (or the provider in front of it) does not offer or has disabled. */
export const METHOD_NOT_FOUND = -32601;

/**
 * Whether `err` says the node does not serve the method at all, rather than that this call failed: JSON-RPC -32601
 * "Method not found", or HTTP 403 (a provider's plan, or a Core RPC user's whitelist, that leaves the method out).
 * `codes` adds a family's own answers of that kind. Callers of an optional method do without it on such an answer.
 */
export function methodUnavailable(err: unknown, codes: readonly number[] = []): boolean {
  return (
    err instanceof JsonRpcError &&
    err.code !== null &&
    (err.code === METHOD_NOT_FOUND || err.code === 403 || codes.includes(err.code))
  );
}

/** A node's error answer, as the dialect reads it. */
export interface ErrorAnswer {
  code: number | null;
  /** The node's message. */
  message: string;
  data?: unknown;
}

/** What a family's nodes speak beyond plain JSON-RPC. */
export interface JsonRpcDialect<E extends JsonRpcError> {
  /** The error class thrown (and returned for failed batch items). */
  error: new (
    message: string,
    code: number | null,
    retryable: boolean,
    data?: unknown,
  ) => E;
  /** Whether an error answer may go differently elsewhere or later (failover), and whether it asks to slow down. */
  classify(answer: ErrorAnswer, message: string): { retryable: boolean; rateLimited?: boolean };
  /** `"jsonrpc"` of requests; default "2.0". */
  version?: string;
  /** The node answers errors with an HTTP error status and a JSON-RPC body: read the body whatever the status. */
  errorsWithHttpStatus?: boolean;
  /** Parses a response's text; default JSON.parse. */
  parse?(text: string): unknown;
}

type Outcome = 'ok' | 'error' | 'timeout' | 'rate_limited' | 'rpc_error';

interface Failure<E> {
  error: E;
  outcome: Outcome;
  retryAfterMs: number | null;
}

interface Endpoint {
  /** Without user and password. */
  url: string;
  /** Basic auth from the URL's user and password, or null. */
  auth: string | null;
  /** The origin, for logs. */
  shown: string;
}

interface Answer {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown } | null;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class JsonRpcTransport<E extends JsonRpcError = JsonRpcError> {
  readonly chain: string;
  private readonly endpoints: Endpoint[];
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  /** Index of the URL calls go to now. */
  private current = 0;
  private nextId = 1;
  /** HTTP attempts made, by method (`batch:<method>` for a batch). */
  readonly counts = new Map<string, number>();

  constructor(
    private readonly opts: JsonRpcOptions,
    private readonly dialect: JsonRpcDialect<E>,
  ) {
    if (opts.urls.length === 0) throw new Error(`${opts.chain}: no RPC URLs configured`);
    this.chain = opts.chain;
    this.endpoints = opts.urls.map(endpoint);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.attempts = opts.attempts ?? Math.max(5, this.endpoints.length * 2);
    this.backoffMs = opts.backoffMs ?? 250;
    this.maxBackoffMs = opts.maxBackoffMs ?? 8_000;
    this.sleep = opts.sleep ?? defaultSleep;
    this.random = opts.random ?? Math.random;
  }

  /** Total HTTP attempts so far. */
  get totalCalls(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  /** The URL calls go to now (its origin). */
  get currentUrl(): string {
    return this.endpoints[this.current]!.shown;
  }

  /** Moves to the next URL (the caller saw answers that do not fit together, e.g. a node behind the others). */
  failover(): void {
    this.current = (this.current + 1) % this.endpoints.length;
  }

  /** Calls `method`; retries and fails over as described above; throws the dialect's error when out of attempts. */
  async request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const id = this.nextId++;
    const answer = await this.send(method, method, { jsonrpc: this.version, id, method, params }, (body) =>
      this.single(method, id, body),
    );
    return answer as T;
  }

  /**
   * Many calls of one method in one HTTP request (retried and failed over as a whole); each answer is the result or
   * the node's error for that call.
   */
  async batch<T = unknown>(method: string, paramsList: unknown[][]): Promise<Array<T | E>> {
    if (paramsList.length === 0) return [];
    const first = this.nextId;
    this.nextId += paramsList.length;
    const payload = paramsList.map((params, i) => ({ jsonrpc: this.version, id: first + i, method, params }));
    const answers = (await this.send(`batch:${method}`, method, payload, (body) =>
      this.batchAnswer(method, body),
    )) as Answer[];
    const byId = new Map(answers.filter((a) => a !== null && typeof a === 'object').map((a) => [a.id, a]));
    return paramsList.map((_, i) => {
      const a = byId.get(first + i);
      if (!a) return new this.dialect.error(`${method}: no answer in the batch`, null, true);
      return a.error ? this.nodeError(method, a.error).error : (a.result as T);
    });
  }

  private get version(): string {
    return this.dialect.version ?? '2.0';
  }

  /** Posts `payload` until an attempt answers or the attempts run out. */
  private async send(
    counted: string,
    method: string,
    payload: unknown,
    read: (body: unknown) => { value: unknown } | Failure<E>,
  ): Promise<unknown> {
    let last: E | null = null;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      const index = this.current;
      const ep = this.endpoints[index]!;
      const r = await this.attempt(ep, counted, method, payload, read);
      this.opts.metrics?.rpcCalls.inc({ chain: this.chain, outcome: 'error' in r ? r.outcome : 'ok' });
      if (!('error' in r)) return r.value;
      last = r.error;
      if (!r.error.retryable) throw r.error;
      if (this.current === index) this.current = (index + 1) % this.endpoints.length;
      this.opts.log?.debug(
        { chain: this.chain, method: counted, url: ep.shown, attempt, outcome: r.outcome, err: r.error.message },
        'rpc attempt failed',
      );
      if (attempt + 1 < this.attempts) {
        const cap = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
        const jitter = Math.floor(this.random() * cap);
        const ms = r.retryAfterMs !== null ? Math.min(this.maxBackoffMs, Math.max(r.retryAfterMs, jitter)) : jitter;
        if (ms > 0) await this.sleep(ms);
      }
    }
    throw last ?? new this.dialect.error(`${method}: no attempt made`, null, true);
  }

  private async attempt(
    ep: Endpoint,
    counted: string,
    method: string,
    payload: unknown,
    read: (body: unknown) => { value: unknown } | Failure<E>,
  ): Promise<{ value: unknown } | Failure<E>> {
    this.counts.set(counted, (this.counts.get(counted) ?? 0) + 1);
    const fail = (
      outcome: Outcome,
      message: string,
      code: number | null = null,
      retryAfterMs: number | null = null,
    ): Failure<E> => ({
      error: new this.dialect.error(`${method}: ${message}`, code, true),
      outcome,
      retryAfterMs,
    });
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      let res: Response;
      let text: string;
      try {
        res = await fetch(ep.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            ...(ep.auth ? { authorization: ep.auth } : {}),
          },
          body: JSON.stringify(payload),
          signal: controller.signal,
        });
        text = await res.text();
      } catch (err) {
        if (controller.signal.aborted) return fail('timeout', `timed out after ${this.timeoutMs} ms`);
        // fetch says only "fetch failed"; its cause says why (ECONNREFUSED, ENOTFOUND, …).
        const cause = (err as { cause?: { code?: unknown } }).cause?.code;
        return fail('error', `${(err as Error).message}${typeof cause === 'string' ? ` (${cause})` : ''}`);
      }
      if (res.status === 429) return fail('rate_limited', 'HTTP 429', 429, retryAfter(res.headers));
      if (!res.ok && !this.dialect.errorsWithHttpStatus) return fail('error', `HTTP ${res.status}`, res.status);
      let body: unknown;
      try {
        body = (this.dialect.parse ?? JSON.parse)(text);
      } catch {
        return res.ok ? fail('error', 'response is not JSON') : fail('error', `HTTP ${res.status}`, res.status);
      }
      return read(body);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reads a batch's answer: an array, or one error for the whole batch (a node still warming up, …). */
  private batchAnswer(method: string, body: unknown): { value: unknown } | Failure<E> {
    if (Array.isArray(body)) return { value: body };
    const answer = body as Answer | null;
    if (answer?.error) return this.errorAnswer(method, answer.error);
    return {
      error: new this.dialect.error(`${method}: the node did not answer the batch`, null, true),
      outcome: 'error',
      retryAfterMs: null,
    };
  }

  /** Reads a single call's answer. */
  private single(method: string, id: number, body: unknown): { value: unknown } | Failure<E> {
    const malformed = (message: string): Failure<E> => ({
      error: new this.dialect.error(`${method}: ${message}`, null, true),
      outcome: 'error',
      retryAfterMs: null,
    });
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return malformed('malformed response');
    const answer = body as Answer;
    if (answer.error) return this.errorAnswer(method, answer.error);
    if (answer.id !== id || !('result' in answer)) return malformed(`response does not answer request ${id}`);
    return { value: answer.result };
  }

  private errorAnswer(method: string, raw: NonNullable<Answer['error']>): Failure<E> {
    const { error, rateLimited } = this.nodeError(method, raw);
    return { error, outcome: rateLimited ? 'rate_limited' : 'rpc_error', retryAfterMs: null };
  }

  /** A node's error answer as the family's error. */
  private nodeError(method: string, raw: NonNullable<Answer['error']>): { error: E; rateLimited: boolean } {
    const answer: ErrorAnswer = {
      code: typeof raw.code === 'number' ? raw.code : null,
      message: typeof raw.message === 'string' ? raw.message : 'error',
      data: raw.data,
    };
    const message = `${method}: ${answer.message}${answer.code !== null ? ` (${answer.code})` : ''}`;
    const { retryable, rateLimited = false } = this.dialect.classify(answer, message);
    return { error: new this.dialect.error(message, answer.code, retryable, answer.data), rateLimited };
  }
}

/** A node URL as logs and messages may show it: its origin (no user, password, path or query, which may hold a key). */
export function shownUrl(raw: string): string {
  try {
    return new URL(raw).origin;
  } catch {
    return '[invalid url]';
  }
}

/** An endpoint from a configured URL: user and password move into a basic auth header. */
function endpoint(raw: string): Endpoint {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { url: raw, auth: null, shown: shownUrl(raw) };
  }
  if (!u.username && !u.password) return { url: raw, auth: null, shown: u.origin };
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  u.username = '';
  u.password = '';
  return { url: u.toString(), auth, shown: u.origin };
}

/**
 * Retry-After in ms: seconds, or an HTTP date measured from the response's own Date (the server's clock on both
 * sides, so neither this machine's clock nor its skew enters); null when absent or unreadable.
 */
export function retryAfter(headers: Headers): number | null {
  const header = headers.get('retry-after');
  if (!header) return null;
  if (/^\d+$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  const sent = Date.parse(headers.get('date') ?? '');
  return Number.isNaN(at) || Number.isNaN(sent) ? null : Math.max(0, at - sent);
}
