/**
 * Errors the client throws. Every answer of the API that is not 2xx becomes a `KasseError` subclass by status,
 * carrying the API's `code`, `message` and `param`, the HTTP status and the `Request-Id` to quote when reporting
 * it. A request that never got an answer is a `KasseConnectionError`.
 */

/** The error codes the API documents; an unknown future code still arrives as a string. */
export type KasseErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'wrong_mode'
  | 'not_found'
  | 'idempotency_conflict'
  | 'too_many_attempts'
  | 'already_invoiced'
  | 'amount_too_small'
  | 'invalid_state'
  | 'insufficient_balance'
  | 'rate_limited'
  | 'internal_error'
  | 'price_unavailable'
  | 'chain_paused'
  | 'service_unavailable'
  | (string & {});

export interface KasseErrorFields {
  message: string;
  status: number | null;
  code: KasseErrorCode | null;
  param: string | null;
  requestId: string | null;
  headers?: Headers;
}

export class KasseError extends Error {
  /** HTTP status; null when no answer arrived. */
  readonly status: number | null;
  /** The API's error code (`invalid_request`, `idempotency_conflict`, …). */
  readonly code: KasseErrorCode | null;
  /** The offending field as a dotted path (`items.3.destination`) or header name, or null. */
  readonly param: string | null;
  /** The answer's `Request-Id`: quote it when reporting a problem. */
  readonly requestId: string | null;
  /** The answer's headers. */
  readonly headers: Headers | undefined;

  constructor(fields: KasseErrorFields) {
    super(fields.message);
    this.name = new.target.name;
    this.status = fields.status;
    this.code = fields.code;
    this.param = fields.param;
    this.requestId = fields.requestId;
    this.headers = fields.headers;
  }
}

/** 400: the request is invalid; `param` names the field. */
export class KasseInvalidRequestError extends KasseError {}
/** 401: missing, unknown or revoked key. */
export class KasseAuthenticationError extends KasseError {}
/** 403: a key of the other mode (`wrong_mode`). */
export class KassePermissionError extends KasseError {}
/** 404: no such object in this mode. */
export class KasseNotFoundError extends KasseError {}
/** 409: `idempotency_conflict`, `too_many_attempts`, … */
export class KasseConflictError extends KasseError {}
/** 422: not possible for this object now (`invalid_state`, `amount_too_small`, …). */
export class KasseStateError extends KasseError {}
/** 429: rate limited; retried automatically, thrown when the retries ran out. */
export class KasseRateLimitError extends KasseError {
  /** Seconds the API asked to wait (`Retry-After`), when it said. */
  get retryAfter(): number | null {
    const v = this.headers?.get('retry-after');
    return v && /^\d+$/.test(v) ? Number(v) : null;
  }
}
/** 503: no price or a paused network (`price_unavailable`, `chain_paused`), or Kasse cannot serve now. */
export class KasseUnavailableError extends KasseError {}
/** Any other answer (500 `internal_error`, …). */
export class KasseApiError extends KasseError {}
/** No answer: the connection failed or the request timed out. */
export class KasseConnectionError extends KasseError {}

const BY_STATUS: Record<number, new (f: KasseErrorFields) => KasseError> = {
  400: KasseInvalidRequestError,
  401: KasseAuthenticationError,
  403: KassePermissionError,
  404: KasseNotFoundError,
  409: KasseConflictError,
  422: KasseStateError,
  429: KasseRateLimitError,
  503: KasseUnavailableError,
};

/** The error for a non-2xx answer and its body (the API's Error body, or whatever a proxy sent). */
export function errorFromResponse(status: number, headers: Headers, body: unknown): KasseError {
  const e = (body as { error?: { code?: unknown; message?: unknown; param?: unknown } } | null)?.error;
  const Class = BY_STATUS[status] ?? KasseApiError;
  return new Class({
    status,
    code: typeof e?.code === 'string' ? e.code : null,
    message: typeof e?.message === 'string' ? e.message : `The API answered ${status} without an error body`,
    param: typeof e?.param === 'string' ? e.param : null,
    requestId: headers.get('request-id'),
    headers,
  });
}
