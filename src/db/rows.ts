/**
 * The plain reads and writes a store repeats over its tables, for any table: its rows where conditions hold
 * (ordered), one such row (locked if asked), whether there is one, and a change of columns where conditions hold;
 * and, built on them, a row locked by id and an outbound operation (a refund, a hold's capture or void, a transfer)
 * settled once its transfer is (its columns: `OutboundColumns`, schema.ts).
 * A condition is `[column, operator, value]`, as Kysely's `where` takes it, its value checked against the column's
 * type. A condition `in` an empty list holds for no row, so nothing is asked of the database then.
 */
import type { Kysely, Selectable, Updateable } from 'kysely';
import type { DbOrTx, Tx } from './index.ts';
import type { Database, OutboundColumns } from './schema.ts';

type Table = keyof Database;
type Row<T extends Table> = Selectable<Database[T]>;
type Column<T extends Table> = keyof Row<T> & string;

/** A condition on a column of `T`: compared with a value of its type, in a list of them, or null or not. */
export type Condition<T extends Table> = {
  [C in Column<T>]:
    | readonly [C, '=' | '<>' | '<' | '<=' | '>' | '>=', Row<T>[C]]
    | readonly [C, 'in', readonly Row<T>[C][]]
    | readonly [C, 'is' | 'is not', null];
}[Column<T>];

/** The tables as Kysely sees them without their types: the conditions above already checked the columns. */
type Loose = Kysely<Record<string, Record<string, unknown>>>;

const holdsForNone = (where: readonly (readonly [string, string, unknown])[]) =>
  where.some(([, op, v]) => op === 'in' && (v as readonly unknown[]).length === 0);

function select(db: DbOrTx, table: Table, where: readonly (readonly [string, string, unknown])[]) {
  let q = (db as unknown as Loose).selectFrom(table as string);
  for (const [column, op, value] of where) q = q.where(column, op as never, value as never);
  return q;
}

/** The rows of `table` where every condition holds, ordered by `orderBy` (ascending, in turn). */
export async function rowsWhere<T extends Table>(
  db: DbOrTx,
  table: T,
  where: readonly Condition<T>[],
  orderBy: readonly Column<T>[] = [],
): Promise<Row<T>[]> {
  if (holdsForNone(where)) return [];
  let q = select(db, table, where).selectAll();
  for (const column of orderBy) q = q.orderBy(column);
  return (await q.execute()) as Row<T>[];
}

/** A row of `table` where every condition holds (the conditions name one), or null; with `lock`, locked for `db`'s transaction. */
export async function rowWhere<T extends Table>(
  db: DbOrTx,
  table: T,
  where: readonly Condition<T>[],
  lock = false,
): Promise<Row<T> | null> {
  if (holdsForNone(where)) return null;
  let q = select(db, table, where).selectAll();
  if (lock) q = q.forUpdate();
  return ((await q.executeTakeFirst()) as Row<T> | undefined) ?? null;
}

/** Whether `table` has a row where every condition holds. */
export async function someRow<T extends Table>(db: DbOrTx, table: T, where: readonly Condition<T>[]): Promise<boolean> {
  if (holdsForNone(where)) return false;
  const row = await select(db, table, where)
    .select((eb) => eb.lit(1).as('one'))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Sets `set` on the rows of `table` where every condition holds; how many rows it changed. */
export async function updateWhere<T extends Table>(
  db: DbOrTx,
  table: T,
  set: Updateable<Database[T]>,
  where: readonly Condition<T>[],
): Promise<number> {
  if (holdsForNone(where)) return 0;
  let q = (db as unknown as Loose).updateTable(table as string).set(set as never);
  for (const [column, op, value] of where) q = q.where(column, op as never, value as never);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** How an outbound operation ended: its transfer's outcome. */
export interface OutboundSettled {
  status: 'sent' | 'failed';
  tx_hash: string | null;
  error: string | null;
  settled_at: Date;
}

/** The tables with an `id`, and those of outbound operations by `id`. */
type IdTable = { [T in Table]: Database[T] extends { id: unknown } ? T : never }[Table];
type OutboundTable = { [T in IdTable]: Database[T] extends OutboundColumns ? T : never }[IdTable];

/** Row `id` of `table`, locked until `tx` ends (whoever calls holds the locks it is taken after); throws if none. */
export async function lockById<T extends IdTable>(tx: Tx, table: T, id: string): Promise<Row<T>> {
  const row = await rowWhere(tx, table, [['id', '=', id]] as unknown as Condition<T>[], true);
  if (!row) throw new Error(`no ${table} row ${id} to lock`);
  return row;
}

/** Records how outbound operation `id` of `table` ended. */
export async function settleOutbound(tx: Tx, table: OutboundTable, id: string, set: OutboundSettled): Promise<void> {
  await updateWhere(tx, table, set as Updateable<Database[typeof table]>, [['id', '=', id]] as never);
}
