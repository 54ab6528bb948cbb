/** The x402 module's front door: the facilitator (service.ts, docs/x402.md) and the protocol's wire objects (wire.ts). */
export { migrations } from './migrations/index.ts';
export { X402Service } from './service.ts';
export {
  FacilitatorBodySchema,
  PaymentPayloadSchema,
  SettleResponseSchema,
  SupportedResponseSchema,
  VerifyResponseSchema,
  X402_SCHEMAS,
  type FacilitatorBody,
  type PaymentPayload,
} from './wire.ts';
