/**
 * Solana JSON-RPC to several endpoints of one cluster: the shared transport (../jsonrpc.ts: per-call timeout,
 * failover, backoff with jitter, `Retry-After`, metrics) with Solana nodes' error answers read here.
 *
 * Answers that are facts about the chain, not failures of a node, are thrown at once as `SolanaRpcError` with the
 * node's code so callers can act on them: a skipped slot (-32007, -32009), a transaction refused by preflight
 * (-32002, with the simulation's `err` in `data`), a bad signature (-32003), invalid params. Block-not-available
 * answers (-32004, -32014), a node behind or unhealthy, and rate limits are retried on the next URL: a lagging node
 * is the usual cause.
 */
import {
  JsonRpcError,
  JsonRpcTransport,
  methodUnavailable as unavailable,
  type ErrorAnswer,
  type JsonRpcOptions,
} from '../jsonrpc.ts';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export type SolanaRpcOptions = JsonRpcOptions;

export class SolanaRpcError extends JsonRpcError {
  override name = 'SolanaRpcError';
}

/** Codes Solana nodes send for a slot that has no block (skipped, or cleaned up). */
export const SKIPPED_SLOT_CODES = new Set([-32007, -32009]);
/** Codes that another (or a later) node may answer differently: block not yet available, node behind or unhealthy. */
const RETRYABLE_CODES = new Set([-32004, -32005, -32014, -32016, -32603]);

function classify({ code, message }: ErrorAnswer): { retryable: boolean; rateLimited: boolean } {
  const rateLimited = code === 429 || /rate limit|too many requests/i.test(message);
  return { rateLimited, retryable: rateLimited || code === null || RETRYABLE_CODES.has(code) };
}

export class SolanaRpc extends JsonRpcTransport<SolanaRpcError> {
  constructor(opts: SolanaRpcOptions) {
    super(opts, { error: SolanaRpcError, classify });
  }
}

/**
 * Whether `err` says the node does not serve the method: "Method not found", HTTP 403, or -32010 (the node keeps no
 * account index for the key, so `getTokenAccountsByOwner` and `getProgramAccounts` are unavailable for it).
 */
export const methodUnavailable = (err: unknown): boolean => unavailable(err, [-32010]);
