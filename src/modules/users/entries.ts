/** How the users module's services write their audit entries: account-wide (no mode), the user as actor. */
import type { Actor, AuditEntry } from '../audit/index.ts';
import type { UserRow } from './records.ts';

/** A user acting on their own account: their id, their email as the label, and the client's address. */
export function userActor(user: Pick<UserRow, 'id' | 'email'>, ip: string | null): Actor {
  return { type: 'user', id: user.id, label: user.email, ip };
}

/** An audit entry of the account (no mode: users, sign-ins and team changes belong to both), about user `target`. */
export function accountEntry(
  merchantId: string | null,
  actor: Actor,
  action: string,
  o: { target?: string; details?: Record<string, unknown> } = {},
): AuditEntry {
  return {
    merchantId,
    mode: null,
    actor,
    action,
    target: o.target ? { type: 'user', id: o.target } : null,
    details: o.details,
  };
}
