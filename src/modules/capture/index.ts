/**
 * The capture module's front door: hold and capture (docs/capture.md). A manual payment's holds and the captures and
 * voids on them (service.ts), each moved through the transfers module and applied to the payment through its
 * engine; it owns `holds` and `hold_operations` (tables.ts, store.ts, migrations/).
 *
 * How a hold comes in:
 * - `holdSigned` (the chain families' `HoldsPort`): a checkout verified a payer's signed authorization for a coin
 *   choice of a manual payment; Kasse records it and submits `authorize` through the transfer queue.
 * - `recordAuthorizedHold(tx, hold)`: an authorization already locked in escrow on chain (the x402 facilitator's
 *   `auth-capture` settlement) becomes a manual Payment (`source` x402) that is `authorized`, in the caller's
 *   transaction.
 * - `simulateAuthorized`: test mode's simulator.
 * What the merchant does with it: `capture`, `void` (API and dashboard, with Idempotency-Key), refunds through the
 * refunds module (`refundPath`; a refund waits while a capture or void is `inFlight`); `runDue` voids at `capture_before` or records the payer's reclaim.
 */
export { migrations } from './migrations/index.ts';
export {
  CaptureService,
  HOLD_PURPOSES,
  type AuthorizedHold,
  type CaptureInput,
  type OpenHold,
} from './service.ts';
