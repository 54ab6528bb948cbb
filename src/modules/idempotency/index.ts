/** The idempotency module's front door: an Idempotency-Key claimed in the transaction of the change it guards. */
export {
  IDEMPOTENCY_KEY_MAX,
  idempotent,
  once,
  requestHash,
  storedResponse,
  validateKey,
} from './idempotency.ts';
