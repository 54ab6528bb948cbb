/**
 * The owners of a merchant, for modules whose rules are owners' alone (disbursements: approvals, releases, the
 * mail that asks for them). The users module is the only code on the users table; others ask here.
 */
import type { DbOrTx } from '../../db/index.ts';

/** Whether `userId` is a current owner of the merchant (not removed). */
export async function isOwner(db: DbOrTx, merchantId: string, userId: string): Promise<boolean> {
  const user = await db
    .selectFrom('users')
    .select('role')
    .where('id', '=', userId)
    .where('merchant_id', '=', merchantId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return user?.role === 'owner';
}

/** The merchant's current owners' email addresses, oldest account first. */
export async function ownerEmails(db: DbOrTx, merchantId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select('email')
    .where('merchant_id', '=', merchantId)
    .where('role', '=', 'owner')
    .where('removed_at', 'is', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.email);
}
