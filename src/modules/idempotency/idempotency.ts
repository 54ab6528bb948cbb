/**
 * Idempotency-Key for any creating POST. The key's row is inserted first, inside the same transaction as the work
 * it guards: a concurrent request with the same key blocks on that row until the first commits, then replays it.
 * A failed request (any error) rolls back with its row, so the key can be retried.
 *
 * Same key, same request → the stored response, with status 200. Same key, different request →
 * 409 idempotency_conflict. Keys are scoped to the merchant and mode.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { sql } from 'kysely';
import type { Tenant } from '../../core/tenant.ts';
import { ApiError } from '../../core/errors.ts';
import { type Db, type DbOrTx, type Tx, isUniqueViolation } from '../../db/index.ts';
import { rowInsert, rowWrite, type Write } from '../../db/statement.ts';
import { textLength } from '../../core/text.ts';

export const IDEMPOTENCY_KEY_MAX = 255;

export interface IdempotentResult<T> {
  status: number;
  body: T;
  replayed: boolean;
}

/**
 * Hash of what identifies a request: method, route and the parsed body in RFC 8785 canonical JSON (keys sorted,
 * numbers and strings in one spelling), so the same body sent with its keys in another order is the same request.
 */
export function requestHash(method: string, route: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${route}\n${canonicalize(body ?? null)}`)
    .digest('hex');
}

export function validateKey(key: string | undefined): string | null {
  if (key === undefined) return null;
  if (key.length < 1 || textLength(key) > IDEMPOTENCY_KEY_MAX) {
    throw new ApiError(
      'invalid_request',
      `Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} characters`,
      'Idempotency-Key',
    );
  }
  return key;
}

/** The request a key guards: the key (null when the request sent none) and the request's hash (`requestHash`). */
export type KeyedRequest = { key: string | null; hash: string };

/** A key as the tenant sent it: keys are scoped to the merchant and mode. */
type Key = Tenant & { key: string; hash: string };

/** The key's stored row: null when the key is new; 409 `idempotency_conflict` when it was used with another request. */
async function usedKey(db: DbOrTx, scope: Key): Promise<{ body: unknown } | null> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_body'])
    .where('merchant_id', '=', scope.merchantId)
    .where('mode', '=', scope.mode)
    .where('key', '=', scope.key)
    .executeTakeFirst();
  if (!row) return null;
  if (row.request_hash !== scope.hash) {
    throw new ApiError(
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request.',
      'Idempotency-Key',
    );
  }
  return { body: row.response_body };
}

/**
 * The answer stored for a key already used with the same request, before any work is prepared (so a retry does not
 * price or derive anything); 409 `idempotency_conflict` when the key was used with a different request. Null for a
 * new key, or one whose first request has not committed yet (`idempotent` then waits for it).
 */
export async function storedResponse<T>(db: Db, tenant: Tenant, request: KeyedRequest): Promise<T | null> {
  if (request.key === null) return null;
  return ((await usedKey(db, { ...tenant, ...request, key: request.key }))?.body as T | null | undefined) ?? null;
}

/**
 * Runs `work` in a transaction guarded by the key (or plainly, without a key). `work` must not do network I/O:
 * prepare prices and anything remote before calling this.
 */
export async function idempotent<T>(
  db: Db,
  tenant: Tenant,
  request: KeyedRequest,
  successStatus: number,
  work: (tx: Tx) => Promise<T>,
  afterCommit?: () => void,
): Promise<IdempotentResult<T>> {
  const scope = { ...tenant, ...request };
  const result = await db.transaction().execute(async (tx): Promise<IdempotentResult<T>> => {
    if (scope.key === null) return { status: successStatus, body: await work(tx), replayed: false };
    const inserted = await sql`
      INSERT INTO idempotency_keys (merchant_id, mode, key, request_hash) VALUES (${scope.merchantId}, ${scope.mode}, ${scope.key}, ${scope.hash})
      ON CONFLICT DO NOTHING RETURNING key`.execute(tx);
    if (inserted.rows.length === 0) {
      const used = (await usedKey(tx, { ...scope, key: scope.key }))!;
      return { status: 200, body: used.body as T, replayed: true };
    }
    const body = await work(tx);
    await tx
      .updateTable('idempotency_keys')
      .set({ response_status: successStatus, response_body: JSON.stringify(body) })
      .where('merchant_id', '=', scope.merchantId)
      .where('mode', '=', scope.mode)
      .where('key', '=', scope.key)
      .execute();
    return { status: successStatus, body, replayed: false };
  });
  if (!result.replayed) afterCommit?.();
  return result;
}

const INSERT_KEY = rowInsert('idempotency_keys', [
  'merchant_id',
  'mode',
  'key',
  'request_hash',
  'response_status',
  'response_body',
]);

/** The key's row with its answer, as a write to run together with the work it guards (db/statement.ts). */
function keyWrite(scope: Key, status: number, body: unknown): Write {
  return rowWrite(INSERT_KEY, [scope.merchantId, scope.mode, scope.key, scope.hash, status, JSON.stringify(body)]);
}

/** True for the unique violation of a key already stored (`idempotency_keys`' primary key). */
function keyTaken(err: unknown): boolean {
  return isUniqueViolation(err, 'idempotency_keys_pkey');
}

/**
 * For work whose answer is known before it is written (ids and times made in the process): `write` gets the key's
 * row, answer included, to write in the same statement or transaction as the work (null without a key). A key
 * already stored makes that write fail as a whole; the stored answer is then replayed (200), or 409
 * `idempotency_conflict` for a different request. A concurrent first request with the same key is waited for by
 * PostgreSQL's unique check, so its answer is committed by the time this one reads it. The common case, a new key,
 * costs no read and no transaction of its own.
 */
export async function once<T>(
  db: Db,
  tenant: Tenant,
  request: KeyedRequest,
  status: number,
  body: T,
  write: (keyRow: Write | null) => Promise<void>,
): Promise<IdempotentResult<T>> {
  const scope = { ...tenant, ...request };
  const key = scope.key;
  if (key === null) {
    await write(null);
    return { status, body, replayed: false };
  }
  for (let tries = 1; ; tries++) {
    try {
      await write(keyWrite({ ...scope, key }, status, body));
      return { status, body, replayed: false };
    } catch (err) {
      if (!keyTaken(err)) throw err;
      const used = await usedKey(db, { ...scope, key });
      if (used) return { status: 200, body: used.body as T, replayed: true };
      // Only a key removed between the two statements leaves nothing to replay: write again, once.
      if (tries === 2) throw err;
    }
  }
}
