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

/**
 * A state Kasse's own rules rule out — a paid payment without its paid attempt, a credit without coins, a stored rate
 * that is not a decimal. Money code throws it instead of carrying on with a default, so the bug stops the change that
 * met it (the transaction rolls back) rather than reaching the ledger. The message ends with the ids that explain it,
 * which are also on the error (`ids`) for the log line; the API answers it as an opaque 500.
 */
export class ImpossibleState extends Error {
  constructor(
    what: string,
    readonly ids: Readonly<Record<string, string | null | undefined>>,
  ) {
    super(
      `${what} (${Object.entries(ids)
        .map(([k, v]) => `${k} ${v ?? 'none'}`)
        .join(', ')})`,
    );
    this.name = 'ImpossibleState';
  }
}
