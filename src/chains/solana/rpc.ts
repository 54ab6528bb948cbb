/**
 * Solana JSON-RPC over HTTP to several endpoints of one cluster, built for public RPC that fails and lags: a
 * per-call timeout, failover to the next URL on any retryable failure (network error, timeout, HTTP 429/5xx,
 * non-JSON, a node that is behind or unhealthy), exponential backoff with full jitter (honouring `Retry-After`), and
 * every HTTP attempt counted in `kasse_chain_rpc_calls_total{chain,outcome}` and in `counts` by method.
 *
 * Answers that are facts about the chain, not failures of a node, are thrown at once as `SolanaRpcError` with the
 * node's code so callers can act on them: a skipped slot (-32007, -32009), a transaction refused by preflight
 * (-32002, with the simulation's `err` in `data`), a bad signature (-32003), invalid params. Block-not-available
 * answers (-32004, -32014) are retried on the next URL: a lagging node is the usual cause.
 */
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface SolanaRpcOptions {
  /** Network id, for metrics and logs. */
  chain: string;
  urls: string[];
  timeoutMs?: number;
  /** Attempts per call across all URLs. Default max(5, 2 × URLs). */
  attempts?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  metrics?: Metrics;
  log?: Logger;
  sleep?: (ms: number) => Promise<void>;
}

export class SolanaRpcError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly retryable: boolean,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'SolanaRpcError';
  }
}

/** Codes Solana nodes send for a slot that has no block (skipped, or cleaned up). */
export const SKIPPED_SLOT_CODES = new Set([-32007, -32009]);
/** Codes that another (or a later) node may answer differently: block not yet available, node behind or unhealthy. */
const RETRYABLE_CODES = new Set([-32004, -32005, -32014, -32016, -32603]);

type Outcome = 'ok' | 'error' | 'timeout' | 'rate_limited' | 'rpc_error';

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class SolanaRpc {
  readonly chain: string;
  private readonly urls: string[];
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private current = 0;
  private nextId = 1;
  /** HTTP attempts made, by method (benchmarks and tests read it). */
  readonly counts = new Map<string, number>();

  constructor(private readonly opts: SolanaRpcOptions) {
    if (opts.urls.length === 0) throw new Error(`${opts.chain}: no RPC URLs configured`);
    this.chain = opts.chain;
    this.urls = [...opts.urls];
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.attempts = opts.attempts ?? Math.max(5, this.urls.length * 2);
    this.backoffMs = opts.backoffMs ?? 250;
    this.maxBackoffMs = opts.maxBackoffMs ?? 8_000;
    this.sleep = opts.sleep ?? defaultSleep;
  }

  get totalCalls(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  /** The URL calls go to now (redacted to its origin). */
  get currentUrl(): string {
    return redact(this.urls[this.current]!);
  }

  /** Moves to the next URL (the caller saw answers that do not fit together, e.g. a node behind the others). */
  failover(): void {
    this.current = (this.current + 1) % this.urls.length;
  }

  async request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    let last: SolanaRpcError | null = null;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      const index = this.current;
      const r = await this.attempt(this.urls[index]!, method, params);
      if (!('error' in r)) return r.value as T;
      last = r.error;
      if (!r.error.retryable) throw r.error;
      if (this.current === index) this.current = (index + 1) % this.urls.length;
      this.opts.log?.debug({ chain: this.chain, method, url: redact(this.urls[index]!), attempt, outcome: r.outcome, err: r.error.message }, 'solana rpc attempt failed');
      if (attempt + 1 < this.attempts) {
        const cap = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
        const jitter = Math.floor(Math.random() * cap);
        await this.sleep(r.retryAfterMs !== null ? Math.min(this.maxBackoffMs, Math.max(r.retryAfterMs, jitter)) : jitter);
      }
    }
    throw last ?? new SolanaRpcError(`${method}: no attempt made`, null, true);
  }

  private async attempt(url: string, method: string, params: unknown[]): Promise<{ value: unknown } | { error: SolanaRpcError; outcome: Outcome; retryAfterMs: number | null }> {
    this.counts.set(method, (this.counts.get(method) ?? 0) + 1);
    const id = this.nextId++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const fail = (outcome: Outcome, error: SolanaRpcError, retryAfterMs: number | null = null) => {
      this.count(outcome);
      return { error, outcome, retryAfterMs };
    };
    try {
      let res: Response;
      let text: string;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
          signal: controller.signal,
        });
        text = await res.text();
      } catch (err) {
        if (controller.signal.aborted) return fail('timeout', new SolanaRpcError(`${method}: timed out after ${this.timeoutMs} ms`, null, true));
        return fail('error', new SolanaRpcError(`${method}: ${(err as Error).message}`, null, true));
      }
      if (res.status === 429) return fail('rate_limited', new SolanaRpcError(`${method}: HTTP 429`, 429, true), retryAfter(res.headers.get('retry-after')));
      if (!res.ok) return fail('error', new SolanaRpcError(`${method}: HTTP ${res.status}`, res.status, true));
      let body: { id?: unknown; result?: unknown; error?: { code?: number; message?: string; data?: unknown } };
      try {
        body = JSON.parse(text);
      } catch {
        return fail('error', new SolanaRpcError(`${method}: response is not JSON`, null, true));
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return fail('error', new SolanaRpcError(`${method}: malformed response`, null, true));
      if (body.error) {
        const code = typeof body.error.code === 'number' ? body.error.code : null;
        const message = `${method}: ${body.error.message ?? 'error'}${code !== null ? ` (${code})` : ''}`;
        const limited = code === 429 || /rate limit|too many requests/i.test(body.error.message ?? '');
        const retryable = limited || code === null || RETRYABLE_CODES.has(code);
        return fail(limited ? 'rate_limited' : 'rpc_error', new SolanaRpcError(message, code, retryable, body.error.data));
      }
      if (body.id !== id || !('result' in body)) return fail('error', new SolanaRpcError(`${method}: response does not answer request ${id}`, null, true));
      this.count('ok');
      return { value: body.result };
    } finally {
      clearTimeout(timer);
    }
  }

  private count(outcome: Outcome): void {
    this.opts.metrics?.rpcCalls.inc({ chain: this.chain, outcome });
  }
}

function retryAfter(header: string | null): number | null {
  if (!header) return null;
  if (/^\d+$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** RPC URLs often carry an API key in the path or query; logs get the origin only. */
export function redact(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '[invalid url]';
  }
}
