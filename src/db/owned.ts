/**
 * A merchant's rows: the query every read of them starts from, scoped to the merchant and mode so another tenant's
 * rows are simply not there, and one object read by id under that scope.
 */
import type { Kysely, Selectable, SelectQueryBuilder } from 'kysely';
import { notFound } from '../core/errors.ts';
import type { Mode } from '../core/mode.ts';
import type { Tenant } from '../core/tenant.ts';
import type { DbOrTx } from './index.ts';
import { type Condition, rowWhere } from './rows.ts';
import type { Database } from './schema.ts';

/** The tables of merchants' rows: a merchant and a mode. */
type TenantTable = {
  [T in keyof Database]: Database[T] extends { merchant_id: unknown; mode: unknown } ? T : never;
}[keyof Database];

/** The tables of merchants' objects: an `id`, its merchant and its mode. */
type OwnedTable = {
  [T in keyof Database]: Database[T] extends { id: unknown; merchant_id: unknown; mode: unknown } ? T : never;
}[keyof Database];

/** The tables of rows of a mode with an `id`. */
type ModeTable = {
  [T in keyof Database]: Database[T] extends { id: unknown; mode: unknown } ? T : never;
}[keyof Database];

/** `db` as seen by the table-generic queries here: every table has the columns they name. */
type Loose = Kysely<Record<string, { id: string; merchant_id: string; mode: string }>>;

function scoped(db: DbOrTx, table: string, owner: Tenant) {
  return (db as unknown as Loose)
    .selectFrom(table)
    .where('merchant_id', '=', owner.merchantId)
    .where('mode', '=', owner.mode);
}

/** A query that has selected nothing yet, as Kysely's `selectFrom` answers it. */
// biome-ignore lint/complexity/noBannedTypes: Kysely's own type for "no columns selected yet"
type From<T extends keyof Database> = SelectQueryBuilder<Database, T, {}>;

/** The rows of `table` that belong to the merchant in the mode, to select from and narrow further. */
export function ownedBy<T extends TenantTable>(db: DbOrTx, table: T, owner: Tenant): From<T> {
  return scoped(db, table, owner) as unknown as From<T>;
}

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
  let q = scoped(db, table, owner).selectAll().where('id', '=', id);
  if (lock) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  if (!row) throw notFound(noun);
  return row as unknown as Selectable<Database[T]>;
}

/**
 * Row `id` of `table` in `mode` (not locked), for the callbacks that know a row by its id and mode alone (a settled
 * transfer names its purpose's row so).
 */
export async function rowInMode<T extends ModeTable>(
  db: DbOrTx,
  table: T,
  mode: Mode,
  id: string,
): Promise<Selectable<Database[T]> | undefined> {
  const where = [
    ['id', '=', id],
    ['mode', '=', mode],
  ] as unknown as Condition<T>[];
  return (await rowWhere(db, table, where)) ?? undefined;
}
