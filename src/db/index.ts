/**
 * Database access: one Kysely instance over a `pg` pool, bigint for int8, and a transaction helper whose
 * after-commit hooks run only once the transaction is durable (used to wake in-process workers; other processes
 * learn through NOTIFY, which PostgreSQL itself delivers at commit).
 */
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;
export type DbOrTx = Db | Tx;

const INT8 = 20;
const NUMERIC = 1700;

export function createDb(url: string, max = 20): { db: Db; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    types: {
      getTypeParser(oid: number, format?: 'text' | 'binary') {
        if (oid === INT8) return (v: string) => BigInt(v);
        if (oid === NUMERIC) return (v: string) => v;
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
export async function withTx<T>(db: Db, fn: (tx: Tx, afterCommit: (hook: () => void) => void) => Promise<T>): Promise<T> {
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
