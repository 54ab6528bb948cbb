/**
 * Counts what this process sends PostgreSQL while `fn` runs: statements (every `query` of a pg client, BEGIN and
 * COMMIT included), rows the statements returned, and bytes of parameters sent. For tests that bound the database
 * work of an operation; run it while nothing else in the process uses the database.
 */
import pg from 'pg';

export interface QueryCount {
  statements: number;
  commits: number;
  rows: number;
  paramBytes: number;
}

const sizeOf = (v: unknown): number =>
  v === null || v === undefined
    ? 0
    : Buffer.isBuffer(v)
      ? v.length
      : Array.isArray(v)
        ? v.reduce((s: number, x) => s + sizeOf(x), 0)
        : Buffer.byteLength(String(v));

export async function countQueries<T>(fn: () => Promise<T>): Promise<{ result: T; count: QueryCount }> {
  const count: QueryCount = { statements: 0, commits: 0, rows: 0, paramBytes: 0 };
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const [q, values] = args;
    const text = typeof q === 'string' ? q : ((q as { text?: string })?.text ?? '');
    const params = Array.isArray(values) ? values : ((q as { values?: unknown[] })?.values ?? []);
    count.statements++;
    if (/^\s*commit\b/i.test(text)) count.commits++;
    count.paramBytes += sizeOf(params);
    const out = original.apply(this, args);
    if (out instanceof Promise)
      out.then(
        (r: { rows?: unknown[] }) => void (count.rows += r?.rows?.length ?? 0),
        () => {},
      );
    return out;
  };
  try {
    return { result: await fn(), count };
  } finally {
    proto.query = original;
  }
}
