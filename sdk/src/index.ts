/**
 * @kasse/sdk — the TypeScript client of the Kasse crypto payments API.
 *
 *   import { Kasse } from '@kasse/sdk';
 *   const kasse = new Kasse(process.env.KASSE_API_KEY!, { baseUrl: 'https://api.pay.example.com/v1' });
 *   const payment = await kasse.payments.create({ price_amount: 2500, price_currency: 'USD', order_id: '1001' });
 */
export {
  Kasse,
  KasseClientCore,
  VERSION,
  type KasseOptions,
  type RequestOptions,
  type X402FacilitatorConfig,
} from './client.ts';
export {
  KasseApiError,
  KasseAuthenticationError,
  KasseConflictError,
  KasseConnectionError,
  KasseError,
  KasseInvalidRequestError,
  KasseNotFoundError,
  KassePermissionError,
  KasseRateLimitError,
  KasseStateError,
  KasseUnavailableError,
  type KasseErrorCode,
} from './errors.ts';
export { PagePromise, type Page } from './pagination.ts';
export { RESOURCES, type Endpoint, type Method, type Resources } from './resources.ts';
export { EventStream, type StreamMessage, type StreamOptions } from './stream.ts';
export { createSseParser, type SseMessage } from './sse.ts';
export {
  constructEvent,
  DEFAULT_TOLERANCE,
  KasseSignatureVerificationError,
  sign,
  webhooks,
  type ConstructEventOptions,
  type SignatureFailure,
} from './webhooks.ts';
export { OPERATIONS } from './generated/operations.ts';
export type * from './types.ts';
