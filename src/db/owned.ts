/** A merchant's object read by id: scoped to its merchant and mode, so another tenant's id is simply not found. */
import type { Kysely, Selectable } from 'kysely';
import { notFound } from '../core/errors.ts';
import type { Tenant } from '../core/tenant.ts';
import type { DbOrTx } from './index.ts';
import type { Database } from './schema.ts';

/** The tables of merchants' objects: an `id`, its merchant and its mode. */
type OwnedTable = {
  [T in keyof Database]: Database[T] extends { id: unknown; merchant_id: unknown; mode: unknown } ? T : never;
}[keyof Database];

/**
 * Row `id` of `table` if it belongs to the merchant in the mode, else 404 `not_found` naming `noun`. With `lock`,
 * the row is locked for the caller's transaction.
 */
export async function ownedRow<T extends OwnedTable>(
  db: DbOrTx,
  table: T,
  owner: Tenant,
  id: string,
  noun: string,
  lock = false,
): Promise<Selectable<Database[T]>> {
  const loose = db as unknown as Kysely<Record<string, { id: string; merchant_id: string; mode: string }>>;
  let q = loose
    .selectFrom(table as string)
    .selectAll()
    .where('id', '=', id)
    .where('merchant_id', '=', owner.merchantId)
    .where('mode', '=', owner.mode);
  if (lock) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(noun);
  return row as unknown as Selectable<Database[T]>;
}
