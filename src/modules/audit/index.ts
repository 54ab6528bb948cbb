/**
 * The audit module's front door: the audit log (service.ts) every module writes a change's row into, in the change's
 * own transaction or statement, through one helper (`AuditLog.record` and its single-statement forms), and the
 * dashboard reads; the `Actor` every change names.
 */
export {
  AuditLog,
  OPERATOR,
  payerActor,
  systemActor,
  type Actor,
  type AuditDetails,
  type AuditQuery,
  type AuditRecord,
  type AuditScope,
  type AuditTarget,
  type RecordedActor,
} from './service.ts';
