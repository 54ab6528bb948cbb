/**
 * Several writes as one SQL statement: `WITH w0 AS (<write>), w1 AS (<write>), … SELECT 1`. PostgreSQL runs every
 * data-modifying part of a WITH exactly once and the statement is atomic on its own, so a change that writes rows
 * to several tables (a payment, its coin choice, its audit row, its idempotency key) commits or fails as a whole in
 * one round trip, without BEGIN and COMMIT. The parts must not depend on each other's effects (they all see the
 * same snapshot): give them values known beforehand, such as ids made in the process.
 *
 * A write is SQL text with $1… parameters and its values: a Kysely builder's `.compile()`, or a constant text for a
 * hot path (no query building per call). The combined text is made once per combination of texts and runs as a
 * named prepared statement (`prepare` in db/index.ts).
 */
import { CompiledQuery } from 'kysely';
import { prepare, type DbOrTx } from './index.ts';

export interface Write {
  readonly sql: string;
  readonly parameters: readonly unknown[];
  /** Set when the write is one row of `rowInsert(table, columns)`: its parameters are the columns' values, in order. */
  readonly into?: RowInsert;
}

/** A single-row INSERT of fixed columns: `INSERT INTO table (a, b, …) VALUES ($1, $2, …)`, its text made once. */
export interface RowInsert {
  readonly table: string;
  readonly columns: readonly string[];
  readonly sql: string;
}

export function rowInsert(table: string, columns: readonly string[]): RowInsert {
  return {
    table,
    columns,
    sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
  };
}

/** One row of `into`, its values in the order of `into.columns`. */
export function rowWrite(into: RowInsert, values: readonly unknown[]): Write {
  return { sql: into.sql, parameters: values, into };
}

const combined = new Map<string, string>();
const COMBINED_MAX = 256;

function combine(texts: readonly string[]): string {
  const cacheKey = texts.join('\u0000');
  let text = combined.get(cacheKey);
  if (text !== undefined) return text;
  let offset = 0;
  const parts = texts.map((t, i) => {
    let count = 0;
    const shifted = t.replace(/\$(\d+)/g, (_, n: string) => {
      count = Math.max(count, Number(n));
      return `$${Number(n) + offset}`;
    });
    offset += count;
    return `w${i} AS (${shifted})`;
  });
  text = prepare(`WITH ${parts.join(', ')} SELECT 1`);
  if (combined.size < COMBINED_MAX) combined.set(cacheKey, text);
  return text;
}

export async function writeTogether(db: DbOrTx, writes: readonly Write[]): Promise<void> {
  if (writes.length === 0) return;
  const values: unknown[] = [];
  for (const w of writes) values.push(...w.parameters);
  await db.executeQuery(CompiledQuery.raw(combine(writes.map((w) => w.sql)), values));
}
