/**
 * JSON-RPC to Bitcoin Core / Litecoin Core nodes (the same interface): HTTP basic auth from the URL's user and
 * password (sent as a header; URLs are never logged with them), a per-call timeout, failover to the next URL on a
 * network error, timeout, HTTP 5xx or warm-up answer, and batches (one HTTP request for many calls, used for the
 * mempool's new transactions). Every HTTP request is counted by method (benchmarks and tests read `counts`) and in
 * `kasse_chain_rpc_calls_total`.
 *
 * Amounts: Core writes coin amounts as JSON numbers with 8 decimals ("value": 0.00012345). They are turned into
 * strings in the response text before parsing, so no amount ever passes through a float (see `satoshis`).
 */
import type { Logger } from '../../core/log.ts';
import type { Metrics } from '../../core/metrics.ts';
import { parseUnits } from '../../core/money.ts';

export interface UtxoRpcOptions {
  chain: string;
  urls: string[];
  timeoutMs?: number;
  metrics?: Metrics;
  log?: Logger;
}

/** An error the node answered (`code` from Core's RPC error codes), or a transport failure (`code` null). */
export class UtxoRpcError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
  ) {
    super(message);
    this.name = 'UtxoRpcError';
  }
}

/** Core's RPC error codes the family reads. */
export const RPC_CODES = {
  /** The node is still loading (warm-up): try another node or later. */
  IN_WARMUP: -28,
  /** No such block or transaction. */
  INVALID_ADDRESS_OR_KEY: -5,
  /** The transaction was rejected (policy, conflict, missing inputs). */
  VERIFY_REJECTED: -26,
  VERIFY_ERROR: -25,
  /** The transaction is already in the chain. */
  VERIFY_ALREADY_IN_CHAIN: -27,
} as const;

const AMOUNT_FIELD = /"(value|amount|fee|feerate|fees|base|modified|ancestor|descendant|total_amount)":\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/g;

/** A coin amount as Core writes it (a string after parsing, see above) in smallest units (8 decimals). */
export function satoshis(value: unknown): bigint {
  const text = String(value);
  if (/[eE]/.test(text)) return parseUnits(Number(text).toFixed(8), 8);
  return text.startsWith('-') ? -parseUnits(text.slice(1), 8) : parseUnits(text, 8);
}

interface Endpoint {
  url: string;
  auth: string | null;
  /** The URL without user and password, for logs. */
  shown: string;
}

function endpoint(raw: string): Endpoint {
  const u = new URL(raw);
  const auth = u.username || u.password ? `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}` : null;
  u.username = '';
  u.password = '';
  return { url: u.toString(), auth, shown: u.toString() };
}

export class UtxoRpc {
  readonly chain: string;
  private readonly endpoints: Endpoint[];
  private readonly timeoutMs: number;
  private current = 0;
  private nextId = 1;
  /** HTTP requests made, by method (`batch:<method>` for a batch). */
  readonly counts = new Map<string, number>();

  constructor(private readonly opts: UtxoRpcOptions) {
    if (opts.urls.length === 0) throw new Error(`${opts.chain}: no RPC URLs configured`);
    this.chain = opts.chain;
    this.endpoints = opts.urls.map(endpoint);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  get totalCalls(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  /** One call; a node's own error answer is thrown as UtxoRpcError with its code (not retried elsewhere). */
  async call<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const body = (await this.post(method, { jsonrpc: '1.0', id: this.nextId++, method, params })) as { result: T; error: { code: number; message: string } | null };
    if (body.error) throw new UtxoRpcError(`${method}: ${body.error.message}`, body.error.code);
    return body.result;
  }

  /** Many calls of one method in one HTTP request; each answer is the result or the node's error. */
  async batch<T = unknown>(method: string, paramsList: unknown[][]): Promise<Array<T | UtxoRpcError>> {
    if (paramsList.length === 0) return [];
    const first = this.nextId;
    this.nextId += paramsList.length;
    const answers = (await this.post(`batch:${method}`, paramsList.map((params, i) => ({ jsonrpc: '1.0', id: first + i, method, params })))) as Array<{
      id: number;
      result: T;
      error: { code: number; message: string } | null;
    }>;
    if (!Array.isArray(answers)) throw new UtxoRpcError(`${method}: the node did not answer the batch`, null);
    const byId = new Map(answers.map((a) => [a.id, a]));
    return paramsList.map((_, i) => {
      const a = byId.get(first + i);
      if (!a) return new UtxoRpcError(`${method}: no answer in the batch`, null);
      return a.error ? new UtxoRpcError(`${method}: ${a.error.message}`, a.error.code) : a.result;
    });
  }

  /** Posts to the current node, failing over through every node once on transport failures. */
  private async post(counted: string, payload: unknown): Promise<unknown> {
    let last: Error | null = null;
    for (let tried = 0; tried < this.endpoints.length; tried++) {
      const index = this.current;
      const ep = this.endpoints[index]!;
      this.counts.set(counted, (this.counts.get(counted) ?? 0) + 1);
      try {
        const res = await fetch(ep.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(ep.auth ? { authorization: ep.auth } : {}) },
          body: JSON.stringify(payload),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        const text = await res.text();
        // Core answers RPC errors with HTTP 404/500 and a JSON body; anything else without one is a transport failure.
        let parsed: unknown;
        try {
          parsed = JSON.parse(text.replace(AMOUNT_FIELD, '"$1":"$2"'));
        } catch {
          throw new UtxoRpcError(`HTTP ${res.status} from ${ep.shown}`, null);
        }
        const warm = !Array.isArray(parsed) && (parsed as { error?: { code?: number } } | null)?.error?.code === RPC_CODES.IN_WARMUP;
        if (warm) throw new UtxoRpcError(`${ep.shown} is warming up`, RPC_CODES.IN_WARMUP);
        this.opts.metrics?.rpcCalls.inc({ chain: this.chain, outcome: 'ok' });
        return parsed;
      } catch (err) {
        last = err as Error;
        this.opts.metrics?.rpcCalls.inc({ chain: this.chain, outcome: 'error' });
        this.opts.log?.debug({ chain: this.chain, method: counted, url: ep.shown, err: last.message }, 'utxo rpc failed; trying the next node');
        this.current = (index + 1) % this.endpoints.length;
      }
    }
    throw last instanceof UtxoRpcError ? last : new UtxoRpcError(`${counted}: ${last?.message ?? 'no node answered'}`, null);
  }
}
