/** Deposit address indexes taken a block at a time per process, on a real PostgreSQL. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createDb, type Db } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { ownMigrations } from '../../src/migrations.ts';
import { AddressIndexes } from '../../src/modules/payments/store/create.ts';
import { createTestDatabase } from '../harness/db.ts';

let db: Db;
let other: Db;
let drop: () => Promise<void>;

before(async () => {
  const t = await createTestDatabase();
  drop = t.drop;
  db = createDb(t.url, 8).db;
  other = createDb(t.url, 8).db;
  await migrateToLatest(db, ownMigrations);
});
after(async () => {
  await db.destroy();
  await other.destroy();
  await drop();
});

test('two processes drawing at once never get the same index, and each hands its block out in order', async () => {
  const a = new AddressIndexes(db, 16);
  const b = new AddressIndexes(other, 16);
  const draw = (p: AddressIndexes) => Promise.all(Array.from({ length: 50 }, () => p.next()));
  const [fromA, fromB] = await Promise.all([draw(a), draw(b)]);
  const all = [...fromA, ...fromB];
  assert.equal(new Set(all).size, 100, 'no index twice');
  for (const xs of [fromA, fromB]) {
    for (let i = 1; i < xs.length; i++) assert.ok(xs[i]! > xs[i - 1]!, 'ascending within a process');
  }
  // 50 draws take 4 blocks of 16 per process, so the sequence moved by 128 at most.
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const max = all.reduce((m, x) => (x > m ? x : m), 0n);
  assert.ok(max <= 128n, `sequence at ${max}`);
});
