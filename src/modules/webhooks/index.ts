/**
 * The webhooks module's front door: the event outbox and its delivery (service.ts), what publishers are given
 * (types.ts), the test API's event stream (stream.ts), and the one HTTP client for merchants' URLs (http-client.ts).
 */
export { MerchantHttpClient, type PostResult } from './http-client.ts';
export { migrations } from './migrations/index.ts';
export { WEBHOOKS_CHANNEL, WebhookService, type EventWithDeliveries } from './service.ts';
export {
  EVENT_STREAM_CHANNEL,
  EventStreamHub,
  StreamLimitError,
  UnknownEventError,
  type StreamedEvent,
  type Subscription,
} from './stream.ts';
export type { EventInput, EventPublisher } from './types.ts';
