/**
 * Database access: one Kysely instance over a `pg` pool, bigint for int8, timestamps by a fast parser, and a transaction helper whose
 * after-commit hooks run only once the transaction is durable (used to wake in-process workers; other processes
 * learn through NOTIFY, which PostgreSQL itself delivers at commit).
 */
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';
import { parseTimestamptz, TIMESTAMPTZ } from './timestamps.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DbOrTx = Db | Tx;

/** Whether `err` is PostgreSQL's unique violation (23505): of `constraint`, when one is named. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string } | null | undefined;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

const INT8 = 20;
const NUMERIC = 1700;

/**
 * Statements the hot paths run, kept as named prepared statements: each connection parses and plans one of them
 * once and afterwards only binds and executes it, which is most of PostgreSQL's work for a multi-table INSERT.
 * Registered by text (see `prepare`); any other text runs as an unnamed statement, as before.
 */
const preparedNames = new Map<string, string>();
const PREPARED_MAX = 256;

/**
 * Marks a statement text (with $n parameters) to run as a named prepared statement on every connection. For
 * texts made once per shape, not per call: the number kept is bounded, and texts past the bound run unnamed.
 */
export function prepare(text: string): string {
  if (!preparedNames.has(text) && preparedNames.size < PREPARED_MAX)
    preparedNames.set(text, `kasse_${preparedNames.size + 1}`);
  return text;
}

/** The pool's client: a statement text marked by `prepare` goes out named. */
class PreparingClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    // A connection the server ends while the client is checked out (a restart, a failover, the embedded server
    // stopping on a terminal's Ctrl-C) fails the client's queries, and the pool drops it at release. Without a
    // listener the client's 'error' event (pg-pool listens only while it is idle) would end the process.
    this.on('error', () => {});
  }

  override query(...args: unknown[]): never {
    const [text, values] = args;
    const name =
      typeof text === 'string' && Array.isArray(values) && args.length === 2 ? preparedNames.get(text) : undefined;
    const query = super.query as unknown as (...a: unknown[]) => never;
    return name ? query.call(this, { name, text, values }) : query.apply(this, args);
  }
}

export function createDb(url: string, max = 20): { db: Db; pool: pg.Pool } {
  const pool = new pg.Pool({
    Client: PreparingClient,
    connectionString: url,
    max,
    types: {
      getTypeParser(oid: number, format?: 'text' | 'binary') {
        if (oid === INT8) return (v: string) => BigInt(v);
        if (oid === NUMERIC) return (v: string) => v;
        if (oid === TIMESTAMPTZ && format !== 'binary') return parseTimestamptz;
        return pg.types.getTypeParser(oid, format as 'text');
      },
    } as pg.CustomTypesConfig,
  });
  pool.on('error', () => {
    // An idle client lost its connection (server restart); the pool replaces it on the next checkout.
  });
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

const txHooks = new WeakMap<Tx, Array<() => void>>();

/** Runs `fn` in a transaction; hooks registered through `afterCommit` run after a successful commit. */
export async function withTx<T>(
  db: Db,
  fn: (tx: Tx, afterCommit: (hook: () => void) => void) => Promise<T>,
): Promise<T> {
  const hooks: Array<() => void> = [];
  const result = await db.transaction().execute((tx) => {
    txHooks.set(tx, hooks);
    return fn(tx, (h) => hooks.push(h));
  });
  for (const h of hooks) {
    try {
      h();
    } catch {
      // hooks only nudge workers; the durable state is already committed
    }
  }
  return result;
}

/**
 * Registers an after-commit hook on a transaction opened by `withTx`, for code that is handed only the `Tx`
 * (an event publisher). Returns false, registering nothing, for a transaction opened another way.
 */
export function afterCommit(tx: Tx, hook: () => void): boolean {
  const hooks = txHooks.get(tx);
  hooks?.push(hook);
  return hooks !== undefined;
}
