/**
 * Rows changed by id in the caller's transaction: one locked for update, and an outbound operation (a refund, a
 * hold's capture or void, a transfer) settled once its transfer is (its columns: `OutboundColumns`, schema.ts).
 */
import type { Kysely, Selectable } from 'kysely';
import type { Tx } from './index.ts';
import type { Database, OutboundColumns } from './schema.ts';

/** How an outbound operation ended: its transfer's outcome. */
export interface OutboundSettled {
  status: 'sent' | 'failed';
  tx_hash: string | null;
  error: string | null;
  settled_at: Date;
}

/** The tables with an `id`. */
type IdTable = { [T in keyof Database]: Database[T] extends { id: unknown } ? T : never }[keyof Database];

/** The tables of outbound operations by `id`. */
type OutboundTable = {
  [T in keyof Database]: Database[T] extends { id: unknown } & OutboundColumns ? T : never;
}[keyof Database];

/** `tx` as seen by the table-generic queries here. */
type Loose = Kysely<Record<string, { id: string } & Omit<OutboundColumns, 'created_at'>>>;

/** Row `id` of `table`, locked until `tx` ends (whoever calls holds the locks it is taken after); throws if none. */
export async function lockById<T extends IdTable>(tx: Tx, table: T, id: string): Promise<Selectable<Database[T]>> {
  const row = await (tx as unknown as Loose)
    .selectFrom(table as string)
    .selectAll()
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirstOrThrow();
  return row as unknown as Selectable<Database[T]>;
}

/** Records how outbound operation `id` of `table` ended. */
export async function settleOutbound(tx: Tx, table: OutboundTable, id: string, set: OutboundSettled): Promise<void> {
  await (tx as unknown as Loose).updateTable(table).set(set).where('id', '=', id).execute();
}
