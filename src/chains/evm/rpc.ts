/**
 * JSON-RPC to EVM nodes, built for flaky public RPC: the shared transport (../jsonrpc.ts: per-call timeout, failover,
 * backoff with jitter, `Retry-After`, metrics) with the EVM nodes' error answers read here. Errors that retrying
 * cannot fix (invalid params, execution reverted, a raw transaction a node already has or can never take) are thrown
 * at once; rate limits (-32005, "rate"/"too many") and every other server-side error are retried on the next URL.
 */
import { custom, type EIP1193RequestFn, type Transport } from 'viem';
import { JsonRpcError, JsonRpcTransport, type ErrorAnswer, type JsonRpcOptions } from '../jsonrpc.ts';

export type RpcClientOptions = JsonRpcOptions;

/** A failed call. `retryable` is false for answers that another attempt would repeat (bad params, revert). */
export class RpcError extends JsonRpcError {
  override name = 'RpcError';
}

/** JSON-RPC error codes that mean the request itself is wrong (or reverted), whichever node answers. */
const FATAL_CODES = new Set([-32700, -32600, -32601, -32602, 3]);
/**
 * Answers every node would repeat whatever their code (nodes disagree on codes: Hardhat reports a revert as -32603,
 * geth as 3): a revert, and a raw transaction the node already has or can never take. The hot-wallet sender reads
 * these from the error message (sender.ts).
 */
export const FATAL_MESSAGE = /revert|already known|known transaction|nonce too low|underpriced|insufficient funds/i;

function classify({ code, message: text }: ErrorAnswer, message: string): { retryable: boolean; rateLimited: boolean } {
  return {
    rateLimited: code === -32005 || /rate|limit exceeded|too many/i.test(text),
    retryable: (code === null || !FATAL_CODES.has(code)) && !FATAL_MESSAGE.test(message),
  };
}

export class RpcClient extends JsonRpcTransport<RpcError> {
  constructor(opts: RpcClientOptions) {
    super(opts, { error: RpcError, classify });
  }

  /** A viem transport over this client, for wallet and contract helpers (deploy, sweep). */
  transport(): Transport {
    return custom({
      request: (({ method, params }: { method: string; params?: unknown[] }) =>
        this.request(method, params ?? [])) as EIP1193RequestFn,
    });
  }
}
