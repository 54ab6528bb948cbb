/**
 * The one error envelope of the API and its closed list of codes.
 *
 * Every non-2xx answer carries `{ error: { code, message, param } }`. Code and HTTP status travel together
 * so a handler can only raise a combination the API documents.
 */

export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  wrong_mode: 403,
  not_found: 404,
  idempotency_conflict: 409,
  too_many_attempts: 409,
  already_invoiced: 409,
  amount_too_small: 422,
  invalid_state: 422,
  insufficient_balance: 422,
  rate_limited: 429,
  internal_error: 500,
  price_unavailable: 503,
  chain_paused: 503,
  service_unavailable: 503,
  fx_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, param: string | null = null, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.param = param;
    this.headers = headers;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, param: this.param } };
  }
}

export interface ErrorBody {
  error: { code: string; message: string; param: string | null };
}

export const invalid = (message: string, param: string | null = null) =>
  new ApiError('invalid_request', message, param);
export const notFound = (what: string) => new ApiError('not_found', `No such ${what}.`);
export const invalidState = (message: string) => new ApiError('invalid_state', message);
