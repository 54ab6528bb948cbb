/** The Idempotency-Key mechanism on a real PostgreSQL, independent of any route. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ApiError } from '../../src/core/errors.ts';
import { createDb, type Db } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { ownMigrations } from '../../src/migrations.ts';
import { idempotent, once, requestHash, validateKey } from '../../src/modules/idempotency/idempotency.ts';
import { writeTogether, type Write } from '../../src/db/statement.ts';
import { createTestDatabase } from '../harness/db.ts';

let db: Db;
let drop: () => Promise<void>;
const merchantId = 'mer_01TESTTESTTESTTESTTESTTEST';
const tenant = { merchantId, mode: 'test' as const };

before(async () => {
  const t = await createTestDatabase();
  drop = t.drop;
  db = createDb(t.url, 20).db;
  await migrateToLatest(db, ownMigrations);
  await sql`INSERT INTO merchants (id, name, webhook_secret_enc) VALUES (${merchantId}, 'M', 'x')`.execute(db);
  await sql`CREATE TABLE created (id serial PRIMARY KEY, note text)`.execute(db);
});
after(async () => {
  await db.destroy();
  await drop();
});

const create = (note: string) => async (tx: Parameters<Parameters<typeof idempotent>[4]>[0]) => {
  const { rows } = await sql<{ id: number }>`INSERT INTO created (note) VALUES (${note}) RETURNING id`.execute(tx);
  return { id: rows[0]!.id, note };
};
const count = async () =>
  Number((await sql<{ n: string }>`SELECT count(*)::text AS n FROM created`.execute(db)).rows[0]!.n);

test('same key and body replays the stored response with 200; a different body is 409', async () => {
  const hash = requestHash('POST', '/payments', { b: 1, a: [1, 2] });
  assert.equal(hash, requestHash('POST', '/payments', { a: [1, 2], b: 1 }), 'key order does not matter');
  const scope = { key: 'k-1', hash };
  const first = await idempotent(db, tenant, scope, 201, create('one'));
  assert.equal(first.status, 201);
  assert.equal(first.replayed, false);
  const again = await idempotent(db, tenant, scope, 201, create('two'));
  assert.equal(again.status, 200);
  assert.equal(again.replayed, true);
  assert.deepEqual(again.body, first.body);
  const other = requestHash('POST', '/payments', { b: 2 });
  await assert.rejects(
    idempotent(db, tenant, { ...scope, hash: other }, 201, create('three')),
    (e: ApiError) => e.code === 'idempotency_conflict' && e.status === 409,
  );
  // scoped by mode: the same key in live mode is a new request
  const live = await idempotent(db, { ...tenant, mode: 'live' }, scope, 201, create('live'));
  assert.equal(live.status, 201);
  assert.equal(await count(), 2);
});

test('concurrent requests with one key create once and replay the rest', async () => {
  const before = await count();
  const scope = { key: 'k-concurrent', hash: requestHash('POST', '/x', { n: 1 }) };
  const results = await Promise.all(Array.from({ length: 12 }, () => idempotent(db, tenant, scope, 201, create('c'))));
  assert.equal(results.filter((r) => !r.replayed).length, 1);
  assert.equal(new Set(results.map((r) => (r.body as { id: number }).id)).size, 1);
  assert.equal(await count(), before + 1);
});

test('a failed request stores nothing, so the key can be retried', async () => {
  const scope = { key: 'k-fail', hash: requestHash('POST', '/x', {}) };
  await assert.rejects(
    idempotent(db, tenant, scope, 201, async (tx) => {
      await create('rolled back')(tx);
      throw new ApiError('invalid_state', 'no');
    }),
  );
  const retry = await idempotent(db, tenant, scope, 201, create('retried'));
  assert.equal(retry.replayed, false);
  assert.equal((retry.body as { note: string }).note, 'retried');
});

test('keys longer than 255 characters or empty are refused with param Idempotency-Key', () => {
  assert.equal(validateKey(undefined), null);
  assert.equal(validateKey('a'.repeat(255)), 'a'.repeat(255));
  for (const bad of ['', 'a'.repeat(256)]) {
    assert.throws(
      () => validateKey(bad),
      (e: ApiError) => e.code === 'invalid_request' && e.param === 'Idempotency-Key',
    );
  }
});

describe('once: the key written with the work, in one statement', () => {
  const write = (note: string) => async (keyRow: Write | null) => {
    await writeTogether(db, [
      { sql: 'INSERT INTO created (note) VALUES ($1)', parameters: [note] },
      ...(keyRow ? [keyRow] : []),
    ]);
  };
  const scope = (key: string, body: unknown) => ({
    key,
    hash: requestHash('POST', '/x', body),
  });

  test('a new key stores the answer; the same request replays it with 200; another request is 409', async () => {
    const before = await count();
    const first = await once(db, tenant, scope('once-1', { a: 1 }), 201, { note: 'first' }, write('first'));
    assert.deepEqual(first, { status: 201, body: { note: 'first' }, replayed: false });
    const again = await once(db, tenant, scope('once-1', { a: 1 }), 201, { note: 'second' }, write('second'));
    assert.deepEqual(again, { status: 200, body: { note: 'first' }, replayed: true });
    await assert.rejects(
      once(db, tenant, scope('once-1', { a: 2 }), 201, { note: 'third' }, write('third')),
      (e: ApiError) => e.code === 'idempotency_conflict' && e.status === 409,
    );
    assert.equal(await count(), before + 1, 'only the first request wrote');
  });

  test('concurrent requests with one key write once and replay the first answer', async () => {
    const before = await count();
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        once(db, tenant, scope('once-race', { n: 1 }), 201, { i }, write(`race-${i}`)),
      ),
    );
    const created = results.filter((r) => !r.replayed);
    assert.equal(created.length, 1);
    for (const r of results) assert.deepEqual(r.body, created[0]!.body);
    assert.equal(await count(), before + 1);
  });

  test('a write that fails stores no key, so the request can be retried; without a key every call writes', async () => {
    const before = await count();
    const failing = async (keyRow: Write | null) => {
      await writeTogether(db, [
        keyRow!,
        { sql: `INSERT INTO created (id, note) VALUES (-1, 'x'), (-1, $1)`, parameters: ['duplicate'] },
      ]);
    };
    await assert.rejects(once(db, tenant, scope('once-fail', {}), 201, {}, failing));
    const retry = await once(db, tenant, scope('once-fail', {}), 201, { ok: true }, write('retried'));
    assert.equal(retry.replayed, false);
    await once(db, tenant, { ...scope('x', {}), key: null }, 201, {}, write('no key'));
    await once(db, tenant, { ...scope('x', {}), key: null }, 201, {}, write('no key'));
    assert.equal(await count(), before + 3);
  });
});
