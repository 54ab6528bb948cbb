/** `timestamptz` text from a real PostgreSQL, parsed by the fast parser (db/timestamps.ts) exactly as the general one does. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { parseTimestamptz } from '../../src/db/timestamps.ts';
import { createTestDatabase } from '../harness/db.ts';

let client: pg.Client;
let drop: () => Promise<void>;
const general = pg.types.getTypeParser(1184, 'text') as (v: string) => Date | number | null;

before(async () => {
  const t = await createTestDatabase();
  drop = t.drop;
  client = new pg.Client({ connectionString: t.url });
  await client.connect();
});
after(async () => {
  await client.end();
  await drop();
});

/** The session's text of `n` random instants between years 1000 and 9999, with microseconds, in the zone `zone`. */
async function sample(zone: string, n: number): Promise<string[]> {
  await client.query(`SET TimeZone = '${zone}'`);
  const { rows } = await client.query<{ t: string }>(
    `SELECT (timestamptz '1000-01-01 00:00:00+00' + random() * (timestamptz '9999-12-31 00:00:00+00' - timestamptz '1000-01-01 00:00:00+00')
      + (random() * 1e6)::int * interval '1 microsecond')::text AS t FROM generate_series(1, ${n})`,
  );
  return rows.map((r) => r.t);
}

test('every instant PostgreSQL writes, in UTC and in zones with hour, half-hour and negative offsets, parses to the same Date', async () => {
  for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham', 'America/New_York']) {
    const texts = await sample(zone, 5000);
    for (const t of [...texts, ...texts.map((s) => s.replace(/\.\d+/, ''))]) {
      const want = general(t) as Date;
      assert.equal((parseTimestamptz(t) as Date).getTime(), want.getTime(), `${zone}: ${t}`);
    }
  }
  await client.query(`SET TimeZone = 'UTC'`);
});

test('fractions truncate to the millisecond, and forms off the plain one go to the general parser', async () => {
  assert.equal((parseTimestamptz('2026-03-31 23:59:59.9999+00') as Date).toISOString(), '2026-03-31T23:59:59.999Z');
  assert.equal((parseTimestamptz('2026-03-31 23:59:59.57+00') as Date).toISOString(), '2026-03-31T23:59:59.570Z');
  assert.equal((parseTimestamptz('2026-04-01 05:30:00+05:30') as Date).toISOString(), '2026-04-01T00:00:00.000Z');
  for (const t of [
    'infinity',
    '-infinity',
    '0044-03-15 12:00:00+00 BC',
    '0099-12-31 00:00:00+00',
    '12026-01-01 00:00:00+00',
    '1883-11-18 12:00:00-04:56:02',
  ]) {
    const got = parseTimestamptz(t);
    const want = general(t);
    assert.equal(got instanceof Date ? got.getTime() : got, want instanceof Date ? want.getTime() : want, t);
  }
});
