/**
 * The owners of a merchant, for modules whose rules are owners' alone (disbursements: approvals, releases, the
 * mail that asks for them). The users module is the only code on the users table; others ask here.
 */
import type { DbOrTx } from '../../db/index.ts';
import { merchantUsers } from './records.ts';

/** Whether `userId` is a current owner of the merchant (not removed). */
export async function isOwner(db: DbOrTx, merchantId: string, userId: string): Promise<boolean> {
  const user = await merchantUsers(db, merchantId).select('role').where('id', '=', userId).executeTakeFirst();
  return user?.role === 'owner';
}

/** The merchant's current owners' email addresses, oldest account first. */
export async function ownerEmails(db: DbOrTx, merchantId: string): Promise<string[]> {
  const rows = await merchantUsers(db, merchantId).select('email').where('role', '=', 'owner').orderBy('id').execute();
  return rows.map((r) => r.email);
}
