/**
 * Names for the generated types (./generated/openapi.ts): the API's objects, and the body, query and answer of any
 * operation by its operation id (`RequestBody<'createPayment'>`).
 */
import type { components, operations } from './generated/openapi.ts';

export type { components, operations, paths } from './generated/openapi.ts';

type Schemas = components['schemas'];

export type Payment = Schemas['Payment'];
export type Attempt = Schemas['Attempt'];
export type Deposit = Schemas['Deposit'];
export type Refund = Schemas['Refund'];
/** A manual payment's hold (`payment.authorization`) and its settled captures. */
export type Authorization = Schemas['Authorization'];
export type Capture = Schemas['Capture'];
export type Currency = Schemas['Currency'];
export type Estimate = Schemas['Estimate'];
export type Balance = Schemas['Balance'];
export type PaymentLink = Schemas['PaymentLink'];
export type Statement = Schemas['Statement'];
export type TaxInvoice = Schemas['TaxInvoice'];
export type Account = Schemas['Account'];
/** An event as `GET /events` lists it. */
export type Event = Schemas['Event'];
export type EventWithDeliveries = Schemas['EventWithDeliveries'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookAttempt = Schemas['WebhookAttempt'];
/** The body of every non-2xx answer. */
export type ErrorBody = Schemas['Error'];
/** A webhook's body, as `Kasse.webhooks.constructEvent` returns it. */
export type KasseEvent = Schemas['PaymentEvent'];
export type EventType = KasseEvent['type'];

export type OperationId = keyof operations;

/** The JSON body an operation takes (never when it takes none). */
export type RequestBody<Id extends OperationId> =
  NonNullable<operations[Id] extends { requestBody?: infer R } ? R : never> extends {
    content: { 'application/json': infer B };
  }
    ? B
    : never;

/** The query parameters an operation takes (never when it takes none). */
export type QueryParams<Id extends OperationId> = NonNullable<
  operations[Id] extends { parameters: { query?: infer Q } } ? Q : never
>;

/** What an operation answers on success (JSON), or the text of a stream. */
export type ResponseBody<Id extends OperationId> = operations[Id] extends { responses: infer R }
  ? {
      [S in keyof R]: S extends 200 | 201 | 202
        ? R[S] extends { content: { 'application/json': infer T } }
          ? T
          : R[S] extends { content: { 'text/event-stream': infer T } }
            ? T
            : never
        : never;
    }[keyof R]
  : never;

export type CreatePaymentParams = RequestBody<'createPayment'>;
export type ListPaymentsParams = QueryParams<'listPayments'>;
export type CreateLinkParams = RequestBody<'createLink'>;
export type UpdateLinkParams = RequestBody<'updateLink'>;
export type RefundParams = RequestBody<'refundPayment'>;
export type CaptureParams = RequestBody<'capturePayment'>;
export type SimulateParams = RequestBody<'simulatePayment'>;
export type CreateTaxInvoiceParams = RequestBody<'createTaxInvoice'>;
export type UpdateAccountParams = RequestBody<'updateAccount'>;
