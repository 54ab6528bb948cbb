/**
 * The x402 module's front door: the facilitator (service.ts, docs/x402.md: verify, settle, receiving addresses,
 * agent-payable links), its discovery catalogue (discovery.ts) and the protocol's wire objects (wire.ts).
 */
export {
  DISCOVERY_LIMIT_DEFAULT,
  DISCOVERY_LIMIT_MAX,
  LINK_DECLARATION,
  type CatalogueEntry,
} from './discovery.ts';
export { migrations } from './migrations/index.ts';
export { X402Service } from './service.ts';
export { X402_SETTLEMENTS_CHANNEL } from './store.ts';
export {
  DiscoveryResourcesSchema,
  FacilitatorBodySchema,
  PaymentPayloadSchema,
  SettleResponseSchema,
  SupportedResponseSchema,
  VerifyResponseSchema,
  X402_SCHEMAS,
  type FacilitatorBody,
  type PaymentPayload,
} from './wire.ts';
