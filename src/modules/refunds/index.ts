/**
 * The refunds module's front door: a payment's confirmed money sent back as an outgoing transfer, settled through the
 * transfers module and applied to the payment through its engine (service.ts); the Refund object (schema.ts). It owns
 * the `refunds` table (tables.ts, store.ts), made by a migration released with the payment tables.
 */
export { RefundSchema, type Refund } from './schema.ts';
export { REFUND_FAILED_EVENT, RefundService, type RefundInput } from './service.ts';
export { refundOpen } from './store.ts';
