/**
 * The database's type, for typed queries. `Database` names every table with its row type, but db/ declares none:
 * each owner adds its tables by declaration merging from its own folder — a module's `tables.ts`, the chains layer's
 * `chains/tables.ts`, a family's `schema.ts` — so db/ knows no module. Here are only the column types they share.
 * `Generated` columns have database defaults; numeric(78,0) token amounts arrive as strings and are turned into
 * bigint by the module that owns them.
 */
import type { ColumnType } from 'kysely';

export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json = ColumnType<unknown, string, string>;
export type Numeric = ColumnType<string, string | bigint, string | bigint>;

/** The columns of a row that sends coins out (a transfer, a refund, a hold's capture or void): pending until sent. */
export interface OutboundColumns {
  status: 'pending' | 'sent' | 'failed';
  tx_hash: string | null;
  error: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
}

/** Every table, added by its owner (see above). */
// biome-ignore lint/suspicious/noEmptyInterface: the owners' declarations merge into it
export interface Database {}
