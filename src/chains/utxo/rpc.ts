/**
 * JSON-RPC to Bitcoin Core / Litecoin Core nodes (the same interface) over the shared transport (../jsonrpc.ts):
 * HTTP basic auth from the URL's user and password (sent as a header; URLs are never logged with them), a per-call
 * timeout, failover through every node once on a network error, timeout, HTTP 5xx or warm-up answer (no backoff: the
 * operator's own nodes), and batches (one HTTP request for many calls, used for the mempool's new transactions). A
 * node's other error answers are thrown at once with Core's code. Core answers errors with HTTP 404/500 and a
 * JSON-RPC body, read whatever the status.
 *
 * Amounts: Core writes coin amounts as JSON numbers with 8 decimals ("value": 0.00012345). They are turned into
 * strings in the response text before parsing, so no amount ever passes through a float (see `satoshis`).
 */
import { parseUnits } from '../../core/money.ts';
import { JsonRpcError, JsonRpcTransport, type JsonRpcOptions } from '../jsonrpc.ts';

export type UtxoRpcOptions = Pick<JsonRpcOptions, 'chain' | 'urls' | 'timeoutMs' | 'metrics' | 'log'>;

/** An error the node answered (`code` from Core's RPC error codes), or a transport failure (`code` null). */
export class UtxoRpcError extends JsonRpcError {
  override name = 'UtxoRpcError';
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

const AMOUNT_FIELD =
  /"(value|amount|fee|feerate|fees|base|modified|ancestor|descendant|total_amount)":\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/g;

/** A coin amount as Core writes it (a string after parsing, see above) in smallest units (8 decimals). */
export function satoshis(value: unknown): bigint {
  const text = String(value);
  if (/[eE]/.test(text)) return parseUnits(Number(text).toFixed(8), 8);
  return text.startsWith('-') ? -parseUnits(text.slice(1), 8) : parseUnits(text, 8);
}

export class UtxoRpc extends JsonRpcTransport<UtxoRpcError> {
  constructor(opts: UtxoRpcOptions) {
    super(
      { ...opts, timeoutMs: opts.timeoutMs ?? 30_000, attempts: opts.urls.length, backoffMs: 0 },
      {
        error: UtxoRpcError,
        version: '1.0',
        errorsWithHttpStatus: true,
        // Only a node still loading may answer differently elsewhere; any other error is the node's verdict.
        classify: ({ code }) => ({ retryable: code === RPC_CODES.IN_WARMUP }),
        parse: (text) => JSON.parse(text.replace(AMOUNT_FIELD, '"$1":"$2"')),
      },
    );
  }

  /** One call; a node's own error answer is thrown as UtxoRpcError with its code (not retried elsewhere). */
  call<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    return this.request<T>(method, params);
  }
}
