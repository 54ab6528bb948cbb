/**
 * The audit module's front door: the audit log (service.ts) every module writes a change's row into, in the change's
 * own transaction or statement, and the dashboard reads.
 */
export { AuditLog, type Actor, type AuditEntry, type AuditQuery, type AuditRecord } from './service.ts';
