/**
 * JSON-RPC over HTTP to several endpoints of one network, built for flaky public RPC: a per-call timeout, failover
 * to the next URL on any retryable failure (network error, timeout, HTTP 429/5xx, non-JSON body, server-side
 * JSON-RPC errors), exponential backoff with full jitter between attempts (honouring `Retry-After` on 429), and
 * every HTTP attempt counted in `kasse_chain_rpc_calls_total{chain,outcome}`. Errors that retrying cannot fix
 * (invalid params, execution reverted) are thrown at once.
 */
import { custom, type EIP1193RequestFn, type Transport } from 'viem';
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';

export interface RpcClientOptions {
  /** Network id, for metrics and logs. */
  chain: string;
  urls: string[];
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Attempts per call across all URLs before giving up. */
  attempts?: number;
  /** First backoff step; doubles per attempt up to maxBackoffMs (a random fraction of it is slept). */
  backoffMs?: number;
  maxBackoffMs?: number;
  metrics?: Metrics;
  log?: Logger;
  /** Injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** A failed call. `retryable` is false for answers that another attempt would repeat (bad params, revert). */
export class RpcError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
    readonly retryable: boolean,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** JSON-RPC error codes that mean the request itself is wrong (or reverted), whichever node answers. */
const FATAL_CODES = new Set([-32700, -32600, -32601, -32602, 3]);
/**
 * Answers every node would repeat whatever their code (nodes disagree on codes: Hardhat reports a revert as -32603,
 * geth as 3): a revert, and a raw transaction the node already has or can never take. The hot-wallet sender reads
 * these from the error message (sender.ts).
 */
export const FATAL_MESSAGE = /revert|already known|known transaction|nonce too low|underpriced|insufficient funds/i;

type Outcome = 'ok' | 'error' | 'timeout' | 'rate_limited' | 'rpc_error';

interface AttemptFailure {
  error: RpcError;
  outcome: Outcome;
  retryAfterMs: number | null;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class RpcClient {
  readonly chain: string;
  private readonly urls: string[];
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  /** Index of the URL that answered last; calls start there. */
  private current = 0;
  private nextId = 1;
  /** HTTP attempts made, by JSON-RPC method (benchmarks and tests read it). */
  readonly counts = new Map<string, number>();

  constructor(private readonly opts: RpcClientOptions) {
    if (opts.urls.length === 0) throw new Error(`${opts.chain}: no RPC URLs configured`);
    this.chain = opts.chain;
    this.urls = [...opts.urls];
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.attempts = opts.attempts ?? Math.max(5, this.urls.length * 2);
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

  /** Calls `method`; retries and fails over as described above; throws RpcError when out of attempts. */
  async request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    let last: RpcError | null = null;
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      const index = this.current;
      const url = this.urls[index]!;
      const result = await this.attempt(url, method, params);
      if (!('error' in result)) {
        this.current = index;
        return result.value as T;
      }
      last = result.error;
      if (!result.error.retryable) throw result.error;
      if (this.current === index) this.current = (index + 1) % this.urls.length;
      this.opts.log?.debug({ chain: this.chain, method, url: redact(url), attempt, outcome: result.outcome, err: result.error.message }, 'rpc attempt failed');
      if (attempt + 1 < this.attempts) {
        const cap = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt);
        const jitter = Math.floor(this.random() * cap);
        await this.sleep(result.retryAfterMs !== null ? Math.min(this.maxBackoffMs, Math.max(result.retryAfterMs, jitter)) : jitter);
      }
    }
    throw last ?? new RpcError(`${method}: no attempt made`, null, true);
  }

  /** Moves to the next URL (the caller saw an answer that does not fit together, e.g. a node lagging behind). */
  failover(): void {
    this.current = (this.current + 1) % this.urls.length;
  }

  /** A viem transport over this client, for wallet and contract helpers (deploy, sweep). */
  transport(): Transport {
    return custom({ request: (({ method, params }: { method: string; params?: unknown[] }) => this.request(method, params ?? [])) as EIP1193RequestFn });
  }

  private async attempt(url: string, method: string, params: unknown[]): Promise<{ value: unknown } | AttemptFailure> {
    this.counts.set(method, (this.counts.get(method) ?? 0) + 1);
    const id = this.nextId++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    const fail = (outcome: Outcome, error: RpcError, retryAfterMs: number | null = null): AttemptFailure => {
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
        if (controller.signal.aborted) return fail('timeout', new RpcError(`${method}: timed out after ${this.timeoutMs} ms`, null, true));
        return fail('error', new RpcError(`${method}: ${(err as Error).message}`, null, true));
      }
      if (res.status === 429) return fail('rate_limited', new RpcError(`${method}: HTTP 429`, 429, true), retryAfter(res.headers.get('retry-after')));
      if (!res.ok) return fail('error', new RpcError(`${method}: HTTP ${res.status}`, res.status, true));
      let body: { id?: unknown; result?: unknown; error?: { code?: number; message?: string; data?: unknown } };
      try {
        body = JSON.parse(text);
      } catch {
        return fail('error', new RpcError(`${method}: response is not JSON`, null, true));
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return fail('error', new RpcError(`${method}: malformed response`, null, true));
      if (body.error) {
        const code = typeof body.error.code === 'number' ? body.error.code : null;
        const message = `${method}: ${body.error.message ?? 'error'}${code !== null ? ` (${code})` : ''}`;
        const limited = code === -32005 || /rate|limit exceeded|too many/i.test(body.error.message ?? '');
        return fail(limited ? 'rate_limited' : 'rpc_error', new RpcError(message, code, (code === null || !FATAL_CODES.has(code)) && !FATAL_MESSAGE.test(message), body.error.data));
      }
      if (body.id !== id || !('result' in body)) return fail('error', new RpcError(`${method}: response does not answer request ${id}`, null, true));
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

/** Retry-After in ms (seconds or an HTTP date); null when absent or unreadable. */
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
