/**
 * Concurrent changes coalesced into one statement. A change here is a list of single-row INSERTs (`Write`s made by
 * `rowWrite`, which name their table and columns), such as a payment with its key and audit row. While
 * `CONCURRENCY` batches are being written, further changes wait in a queue; the next batch then writes every
 * waiting change of the same shape with one statement, each table's rows bound as whole columns:
 * `WITH w0 AS (INSERT INTO t (a, b) SELECT * FROM unnest($1::text[], $2::bigint[])), … SELECT 1`.
 *
 * So under load a creation costs one row per table in a statement shared with its neighbours, instead of a statement,
 * a round trip and a commit of its own; with nothing else in flight a change goes out at once, alone, as it would
 * through `writeTogether`, and waits for nobody. Each caller's promise settles only when its rows are committed.
 *
 * A statement is atomic, so one failing row (an Idempotency-Key already taken, a constraint) fails its whole batch;
 * every change of that batch is then written again on its own, and each caller gets its own outcome. A batch's
 * changes are written in the order of their `order` strings (an Idempotency-Key), so two batches that hold the same
 * keys take their locks in the same order and cannot deadlock on them. A change that has to wait for a row another
 * transaction holds (the same key, not yet committed) holds its batch until then. Changes of other shapes, with
 * values that are not scalars (arrays, buffers), or inside a transaction go out through `writeTogether` unchanged.
 */
import { CompiledQuery, sql } from 'kysely';
import { prepare, type Db } from './index.ts';
import { writeTogether, type Write } from './statement.ts';

/** Batches being written per database handle; the changes arriving meanwhile gather for the next one. */
const CONCURRENCY = 2;
/** Changes written by one statement at most. */
const BATCH_MAX = 128;

const scalar = (v: unknown) => !Array.isArray(v) && !ArrayBuffer.isView(v);

interface Pending {
  writes: readonly Write[];
  order: string;
  resolve(): void;
  reject(err: unknown): void;
}

class Coalescer {
  private readonly queue: Pending[] = [];
  private inFlight = 0;
  /** Column types per table, read once from the catalogue, without modifiers (the INSERT applies the column's own). */
  private readonly types = new Map<string, Promise<Map<string, string>>>();
  /** The batch statement's text per shape (the changes' texts joined). */
  private readonly texts = new Map<string, string>();

  constructor(private readonly db: Db) {}

  write(writes: readonly Write[], order: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ writes, order, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < CONCURRENCY && this.queue.length > 0) {
      const batch = this.queue.splice(0, BATCH_MAX);
      this.inFlight++;
      void this.flush(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async flush(batch: Pending[]): Promise<void> {
    const shapes = new Map<string, Pending[]>();
    for (const p of batch) {
      const shape = p.writes.map((w) => w.sql).join('\u0000');
      const group = shapes.get(shape);
      if (group) group.push(p);
      else shapes.set(shape, [p]);
    }
    await Promise.all([...shapes].map(([shape, group]) => this.flushShape(shape, group)));
  }

  private async flushShape(shape: string, group: Pending[]): Promise<void> {
    if (group.length > 1) {
      group.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
      try {
        await this.db.executeQuery(CompiledQuery.raw(await this.text(shape, group[0]!.writes), columnsOf(group)));
        for (const p of group) p.resolve();
        return;
      } catch {
        // One change's rows failed the batch: each is written on its own below, with its own outcome.
      }
    }
    await Promise.all(group.map((p) => writeTogether(this.db, p.writes).then(p.resolve, p.reject)));
  }

  private async text(shape: string, writes: readonly Write[]): Promise<string> {
    let text = this.texts.get(shape);
    if (text !== undefined) return text;
    let n = 0;
    const parts: string[] = [];
    for (const [i, w] of writes.entries()) {
      const { table, columns } = w.into!;
      const types = await this.columnTypes(table);
      const arrays = columns.map((c) => {
        const type = types.get(c);
        if (type === undefined) throw new Error(`no column ${c} in ${table}`);
        return `$${++n}::${type}[]`;
      });
      parts.push(`w${i} AS (INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM unnest(${arrays.join(', ')}))`);
    }
    text = prepare(`WITH ${parts.join(', ')} SELECT 1`);
    if (this.texts.size < 256) this.texts.set(shape, text);
    return text;
  }

  private columnTypes(table: string): Promise<Map<string, string>> {
    let types = this.types.get(table);
    if (!types) {
      types = sql<{ name: string; type: string }>`
        SELECT attname AS name, format_type(atttypid, NULL) AS type FROM pg_attribute
        WHERE attrelid = ${table}::regclass AND attnum > 0 AND NOT attisdropped`
        .execute(this.db)
        .then(({ rows }) => new Map(rows.map((r) => [r.name, r.type])));
      types.catch(() => this.types.delete(table));
      this.types.set(table, types);
    }
    return types;
  }
}

/** The group's values as one array per column of each write, in the order of the batch statement's parameters. */
function columnsOf(group: readonly Pending[]): unknown[][] {
  const columns: unknown[][] = [];
  for (const [i, w] of group[0]!.writes.entries()) {
    for (let j = 0; j < w.parameters.length; j++) columns.push(group.map((p) => p.writes[i]!.parameters[j]));
  }
  return columns;
}

const coalescers = new WeakMap<Db, Coalescer>();

/**
 * Writes a change (rows made by `rowWrite`, run together as by `writeTogether`) in a statement shared with the other
 * changes of its shape waiting at the same time. Resolves once its rows are committed; rejects with the error its
 * rows alone would get. `order` places it within its batch (give the unique value two changes could share). In a
 * transaction the change is written at once, alone, since a batch commits on its own.
 */
export function writeCoalesced(db: Db, writes: readonly Write[], order = ''): Promise<void> {
  if (writes.length === 0) return Promise.resolve();
  if (db.isTransaction || !writes.every((w) => w.into !== undefined && w.parameters.every(scalar)))
    return writeTogether(db, writes);
  let c = coalescers.get(db);
  if (!c) coalescers.set(db, (c = new Coalescer(db)));
  return c.write(writes, order);
}
