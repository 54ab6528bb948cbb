/** Concurrent changes written by shared statements (db/coalesce.ts), on a real PostgreSQL. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createDb, type Db } from '../../src/db/index.ts';
import { writeCoalesced } from '../../src/db/coalesce.ts';
import { rowInsert, rowWrite, type Write } from '../../src/db/statement.ts';
import { createTestDatabase } from '../harness/db.ts';

let db: Db;
let drop: () => Promise<void>;

before(async () => {
  const t = await createTestDatabase();
  drop = t.drop;
  db = createDb(t.url, 8).db;
  await sql`CREATE TABLE rows (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz, doc jsonb, raw json, flag boolean, note text, tags text[])`.execute(
    db,
  );
  await sql`CREATE TABLE notes (row_id text NOT NULL, seq bigint GENERATED ALWAYS AS IDENTITY, body text NOT NULL)`.execute(
    db,
  );
});
after(async () => {
  await db.destroy();
  await drop();
});

const ROW = rowInsert('rows', ['id', 'n', 'at', 'doc', 'raw', 'flag', 'note']);
const NOTE = rowInsert('notes', ['row_id', 'body']);
const change = (id: string, note: string | null, raw = '{"b":1,"a":[2,"x"]}'): Write[] => [
  rowWrite(ROW, [
    id,
    2n ** 62n + 7n,
    new Date('2026-02-28T23:59:59.123Z'),
    { z: 1, a: { q: 'x"y' } },
    raw,
    false,
    note,
  ]),
  rowWrite(NOTE, [id, `note of ${id}`]),
];

/** A Db whose statements are counted. */
function counted(): { db: Db; count(): number } {
  let n = 0;
  const c = db.withPlugin({
    transformQuery: (a) => a.node,
    transformResult: async (a) => {
      n++;
      return a.result;
    },
  });
  return { db: c, count: () => n };
}

test('changes made at once share statements, and every value lands as a statement of its own would write it', async () => {
  const awkward = ['NULL', '', 'a,b', '{braces}', 'quote " and \\ backslash', 'line\nbreak', 'ünïcødé ✓', null];
  const c = counted();
  const ids = Array.from({ length: 40 }, (_, i) => `r${i}`);
  await Promise.all(
    ids.map((id, i) => writeCoalesced(c.db, change(id, awkward[i % awkward.length]!, `{"k":${i}, "a" : "sp ace"}`))),
  );
  assert.ok(c.count() < 40, `${c.count()} statements for 40 changes`);

  const rows = await sql<{
    id: string;
    n: bigint;
    at: Date;
    doc: unknown;
    raw: string;
    flag: boolean;
    note: string | null;
  }>`
    SELECT id, n, at, doc, raw::text AS raw, flag, note FROM rows WHERE id LIKE 'r%' ORDER BY id`.execute(db);
  assert.equal(rows.rows.length, 40);
  for (const r of rows.rows) {
    const i = Number(r.id.slice(1));
    assert.equal(r.n, 2n ** 62n + 7n);
    assert.equal(r.at.toISOString(), '2026-02-28T23:59:59.123Z');
    assert.deepEqual(r.doc, { z: 1, a: { q: 'x"y' } });
    assert.equal(r.raw, `{"k":${i}, "a" : "sp ace"}`, 'json keeps its text exactly');
    assert.equal(r.flag, false);
    assert.equal(r.note, awkward[i % awkward.length]);
  }
  const notes = await sql<{ n: string }>`SELECT count(*)::text AS n FROM notes WHERE row_id LIKE 'r%'`.execute(db);
  assert.equal(notes.rows[0]!.n, '40');
});

test('a change that fails fails alone: the others of its batch are written, and its own rows are not', async () => {
  await writeCoalesced(db, change('taken', 'first'));
  const ids = Array.from({ length: 12 }, (_, i) => `s${i}`);
  const outcomes = await Promise.allSettled(
    [...ids, 'taken', 's3'].map((id) => writeCoalesced(db, change(id, 'second'))),
  );
  const failed = outcomes.flatMap((o, i) =>
    o.status === 'rejected' ? [{ i, code: (o.reason as { code?: string }).code }] : [],
  );
  // 'taken' was stored before; one of the two 's3' changes loses to the other.
  assert.equal(failed.length, 2, JSON.stringify(failed));
  assert.ok(failed.every((f) => f.code === '23505'));
  assert.ok(
    failed.some((f) => f.i === 12),
    'the change reusing a stored id failed',
  );
  const stored = await sql<{
    id: string;
    note: string;
  }>`SELECT id, note FROM rows WHERE id LIKE 's%' OR id = 'taken' ORDER BY id`.execute(db);
  assert.equal(stored.rows.length, 13);
  assert.equal(stored.rows.find((r) => r.id === 'taken')!.note, 'first');
  const notes = await sql<{
    row_id: string;
  }>`SELECT row_id FROM notes WHERE row_id LIKE 's%' OR row_id = 'taken'`.execute(db);
  assert.equal(notes.rows.filter((n) => n.row_id === 'taken').length, 1, 'the failed change wrote no note');
  assert.equal(notes.rows.filter((n) => n.row_id === 's3').length, 1);
  assert.equal(notes.rows.length, 13);
});

test('a change with an array value, or of another kind of statement, is written on its own as before', async () => {
  const withTags = (id: string): Write[] => [
    rowWrite(rowInsert('rows', ['id', 'n', 'tags']), [id, 1n, ['a,b', 'c']]),
    { sql: 'INSERT INTO notes (row_id, body) SELECT $1, $2', parameters: [id, 'by select'] },
  ];
  await Promise.all(['t1', 't2', 't3'].map((id) => writeCoalesced(db, withTags(id))));
  const rows = await sql<{
    id: string;
    tags: string[];
  }>`SELECT id, tags FROM rows WHERE id LIKE 't%' AND id <> 'taken' ORDER BY id`.execute(db);
  assert.deepEqual(
    rows.rows,
    ['t1', 't2', 't3'].map((id) => ({ id, tags: ['a,b', 'c'] })),
  );
});

test('a batch writes its changes in the order given, whatever order they arrived in', async () => {
  const ids = ['u5', 'u1', 'u4', 'u2', 'u3', 'u0'];
  // The first two go out alone (nothing in flight yet); the other four wait and form one batch.
  await Promise.all(ids.map((id) => writeCoalesced(db, change(id, null), id)));
  const { rows } = await sql<{ row_id: string }>`SELECT row_id FROM notes WHERE row_id LIKE 'u%' ORDER BY seq`.execute(
    db,
  );
  const written = rows.map((r) => r.row_id);
  // The batch may go out before the second lone change lands (when its connection is the slower to open).
  const alone = (id: string) => id === 'u5' || id === 'u1';
  assert.deepEqual(written.filter(alone).sort(), ['u1', 'u5'], 'the two written alone, in either order');
  assert.deepEqual(
    written.filter((id) => !alone(id)),
    ['u0', 'u2', 'u3', 'u4'],
    'the batch, in order',
  );
});

test('inside a transaction a change is written at once, in that transaction, and goes with its rollback', async () => {
  await assert.rejects(
    db.transaction().execute(async (tx) => {
      await writeCoalesced(tx, change('in-tx', null));
      const seen = await sql<{ n: string }>`SELECT count(*)::text AS n FROM rows WHERE id = 'in-tx'`.execute(tx);
      assert.equal(seen.rows[0]!.n, '1', 'written in the transaction');
      throw new Error('roll back');
    }),
    /roll back/,
  );
  const after = await sql<{ n: string }>`SELECT count(*)::text AS n FROM rows WHERE id = 'in-tx'`.execute(db);
  assert.equal(after.rows[0]!.n, '0');
});
