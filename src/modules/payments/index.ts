/**
 * The payments module's front door. Payments and their coin choices (service.ts: create, read, list, cancel,
 * accept), the one path every payment change takes (engine.ts, over the pure state machine of state.ts), the deposit
 * sink chain watchers report to (deposits.ts), the Payment object (schema.ts), and the reads others make: payments
 * issued in another module's transaction and their summaries (batch.ts), the checkout's view (reader.ts, payer.ts),
 * the dashboard's reports (reports.ts), a paid payment for a tax invoice (store/reads.ts). The refunds and simulator
 * modules drive payments through the engine: a payment as stored (`Loaded`), the state machine's check of a change,
 * and the amounts a refund returns. Rules and decisions: docs/payments.md.
 */
export type { IssuedPaymentInput, PaymentSummary } from './batch.ts';
export type { DepositRecorder } from './deposits.ts';
export { heldAttempt, type Applied, type FundsDeps, type PaymentChange, type PaymentEngine } from './engine.ts';
export { insertExternalHold, type ExternalHoldInput } from './external.ts';
export { migrations } from './migrations/index.ts';
export {
  CAPTURE_METHODS,
  EVENT_TYPES,
  HOLD_DEFAULT_DAYS,
  HOLD_MAX_DAYS,
  HOLD_REFUND_DAYS,
  MAX_ATTEMPTS,
  PAYMENT_STATUSES,
  SIMULATE_OUTCOMES,
  type CaptureMethod,
  type PaymentEventType,
  type PaymentStatus,
  type SimulateOutcome,
} from './model.ts';
export { confirmationProgress, shownAttempt } from './payer.ts';
export type { PublicPayment } from './reader.ts';
export { confirmedAmount } from './render.ts';
export type { PaymentSearch } from './reports.ts';
export { PAYMENT_SCHEMAS, RateSource, type Payment } from './schema.ts';
export { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, METADATA_MAX_BYTES, PaymentService } from './service.ts';
export { next, TransitionError } from './state.ts';
export type { NewDeposit } from './store/deposits.ts';
export { toState, type AttemptRow, type Loaded } from './store/payments.ts';
export { invoiceablePayment, lockForInvoice } from './store/reads.ts';
