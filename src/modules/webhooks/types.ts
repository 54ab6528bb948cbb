/**
 * What other modules need from webhooks: publishing an event inside their own transaction (the outbox).
 * The event is stored with its data snapshot; a delivery row is created when there is a destination
 * (`destination`, else the merchant's default URL for the mode); none set means the event is recorded (and listed
 * by GET /events) but not sent.
 */
import type { Mode } from '../../core/mode.ts';
import type { Tx } from '../../db/index.ts';

export interface EventInput<T = unknown> {
  mode: Mode;
  merchantId: string;
  /** e.g. `payment.paid`. */
  type: string;
  /** Events with the same key are delivered in order (the payment id for payment events). */
  orderingKey: string;
  /** The object the event is about, as the API shows it (the full Payment for payment events). */
  data: T;
  /**
   * Serialises `data` exactly as the API does: the object's schema serializer (`serializePayment` for payment
   * events), so a webhook and an API answer cannot disagree. Default: JSON.stringify.
   */
  serialize?: (data: T) => string;
  /** Per-object destination overriding the account default (Payment.webhook_url); null = account default. */
  destination: string | null;
}

export interface EventPublisher {
  publish<T>(tx: Tx, event: EventInput<T>): Promise<{ id: string }>;
}
