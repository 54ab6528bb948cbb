/** Schemas shared by routes: the Error body, pagination, id patterns. Registered as OpenAPI components. */
import { Type, type TSchema } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'Machine-readable error code from a closed list.' }),
        message: Type.String({ description: 'Human-readable explanation.' }),
        param: Type.Union([Type.String(), Type.Null()], { description: 'The offending field as a dotted path, or null.' }),
      },
      { additionalProperties: false },
    ),
  },
  { $id: 'Error', additionalProperties: false, description: 'Body of every non-2xx answer.' },
);

export const errorRef = Type.Unsafe<{ error: { code: string; message: string; param: string | null } }>({ $ref: 'Error#' });

/** The spec's documented error responses for every operation. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const all = statuses.length > 0 ? statuses : [400, 401, 403, 404, 409, 422, 429, 503];
  return Object.fromEntries(all.map((s) => [s, { ...errorRef, description: ERROR_DESCRIPTIONS[s] ?? 'Error' }]));
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request (`invalid_request`).',
  401: 'Missing, malformed, unknown or revoked API key (`unauthorized`).',
  403: 'A key of the other mode (`wrong_mode`).',
  404: 'Not found (`not_found`).',
  409: 'Conflict (`idempotency_conflict`, `too_many_attempts`).',
  422: 'Not possible now (`invalid_state`, `amount_too_small`).',
  429: 'Rate limited (`rate_limited`); see Retry-After.',
  503: 'Price or chain unavailable (`price_unavailable`, `chain_paused`).',
};

export const PaymentIdParam = Type.Object({ id: Type.String({ pattern: ID_PATTERNS.pay, description: 'Payment id' }) });
export const LinkIdParam = Type.Object({ id: Type.String({ pattern: ID_PATTERNS.lnk, description: 'Payment link id' }) });
export const EventIdParam = Type.Object({ id: Type.String({ pattern: ID_PATTERNS.evt, description: 'Event id' }) });

export { Amount, DateTime, Nullable } from '../../core/json-schema.ts';
