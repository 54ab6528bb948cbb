/** How the users module's services name their audit rows' actor and object: the user acting, the user acted on. */
import type { Actor, AuditTarget } from '../audit/index.ts';
import type { UserRow } from './records.ts';

/** A user acting on their own account: their id, their email as the label, and the client's address. */
export function userActor(user: Pick<UserRow, 'id' | 'email'>, ip: string | null): Actor {
  return { type: 'user', id: user.id, label: user.email, ip };
}

/** User `id` as the object of an audit row (rows of the users module are account-wide: `{ merchantId }`). */
export function userTarget(id: string): AuditTarget {
  return { type: 'user', id };
}
