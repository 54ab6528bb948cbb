/**
 * The disbursements module's front door: mass payouts approved by owners and sent as transfers (service.ts), the
 * API's Disbursement object (schema.ts), the fingerprint owners approve (approval.ts) and the dashboard's CSV upload
 * (csv.ts).
 */
export { fingerprint } from './approval.ts';
export { parseDisbursementCsv, type ParsedCsv } from './csv.ts';
export { migrations } from './migrations/index.ts';
export {
  CreateDisbursementBody,
  DISBURSEMENT_LIMITS,
  DisbursementSchema,
  ListDisbursementsQuery,
  type Disbursement,
} from './schema.ts';
export { DisbursementService } from './service.ts';
