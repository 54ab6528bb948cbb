/**
 * The one queue every family's sender runs on (src/chains/queue.ts), on a real PostgreSQL with a transfers table of
 * its own and steps played by the test: workers never drive one transfer twice, a failed step waits a backoff with
 * its tries counted, a refusal no retry cures fails only a transfer nothing of which can land, and only refunds and
 * payouts reach the sink, a pass's batch at a time.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { sql } from 'kysely';
import { FakeClock } from '../../src/core/clock.ts';
import { createLogger } from '../../src/core/log.ts';
import { Metrics } from '../../src/core/metrics.ts';
import { createDb, type Db } from '../../src/db/index.ts';
import { JsonRpcError } from '../../src/chains/jsonrpc.ts';
import { PermanentTransferError, type TransferResult, type TransferSink } from '../../src/chains/ports.ts';
import {
  TransferQueue,
  type QueueOptions,
  type QueuedTransfer,
  type StepOutcome,
  type TransferSteps,
} from '../../src/chains/queue.ts';
import type { NetworkConfig } from '../../src/chains/types.ts';
import { createTestDatabase } from '../harness/db.ts';

interface Row extends QueuedTransfer {
  tx_hash: string | null;
}

let db: Db;
let drop: () => Promise<void>;
const clock = new FakeClock('2026-03-01T12:00:00Z');
const log = createLogger('silent');
const network = { id: 'testnet', rpcUrls: ['http://node.invalid'] } as unknown as NetworkConfig;
const OPTIONS: QueueOptions = { batch: 3, leaseMs: 60_000, retryBaseMs: 1_000, retryMaxMs: 8_000 };

before(async () => {
  const t = await createTestDatabase();
  drop = t.drop;
  db = createDb(t.url, 10).db;
  await sql`
    CREATE TABLE queue_transfers (
      id text PRIMARY KEY, mode text NOT NULL, chain text NOT NULL, purpose text NOT NULL, status text NOT NULL,
      error text, tries int NOT NULL DEFAULT 0, next_attempt_at timestamptz NOT NULL, locked_until timestamptz,
      reported boolean NOT NULL DEFAULT false, created_at timestamptz NOT NULL, tx_hash text)`.execute(db);
});
after(async () => {
  await db.destroy();
  await drop();
});
beforeEach(async () => {
  await sql`DELETE FROM queue_transfers`.execute(db);
});

/** A sink that records what it was told. */
function recordingSink(): TransferSink & { settled: TransferResult[] } {
  const settled: TransferResult[] = [];
  return {
    settled,
    transfersSettled: async (_mode, results) => void settled.push(...results),
    transfersProgressed: async () => {},
  };
}

async function insert(id: string, purpose: string, status = 'pending', at = clock.now()): Promise<void> {
  await sql`INSERT INTO queue_transfers (id, mode, chain, purpose, status, next_attempt_at, created_at)
            VALUES (${id}, 'test', ${network.id}, ${purpose}, ${status}, ${at}, ${at})`.execute(db);
}

async function row(id: string): Promise<Row> {
  const { rows } = await sql<Row>`SELECT * FROM queue_transfers WHERE id = ${id}`.execute(db);
  return rows[0]!;
}

/** Steps that sign and send at once and settle when followed, unless `sign` is replaced. */
function steps(over: Partial<TransferSteps<Row>> = {}): TransferSteps<Row> {
  const move = (id: string, status: string, hash?: string) =>
    sql`UPDATE queue_transfers SET status = ${status}, tx_hash = coalesce(${hash ?? null}, tx_hash) WHERE id = ${id}`.execute(
      db,
    );
  return {
    sign: async (r) => {
      await move(r.id, 'signed', `0x${r.id}`);
      return 'progress';
    },
    broadcast: async (r) => {
      await move(r.id, 'broadcast');
      return 'progress';
    },
    follow: async (r) => {
      await move(r.id, 'sent');
      return 'done';
    },
    unsent: async (r) => r.status === 'pending',
    fail: async (r, reason) =>
      void (await sql`UPDATE queue_transfers SET status = 'failed', error = ${reason} WHERE id = ${r.id} AND status = ${r.status}`.execute(
        db,
      )),
    hash: (r) => r.tx_hash,
    ...over,
  };
}

function queue(
  sink: TransferSink | null,
  over: Partial<TransferSteps<Row>> = {},
  metrics?: Metrics,
): TransferQueue<Row> {
  return new TransferQueue<Row>(
    'queue',
    { network, mode: 'test' },
    { db, clock, log, metrics, sink },
    OPTIONS,
    steps(over),
  );
}

describe('leasing', () => {
  test('two workers passing at once drive every due transfer exactly once, a batch per pass', async () => {
    for (let i = 0; i < 5; i++) await insert(`po_${i}`, 'payout');
    const driven: string[] = [];
    const sign = steps().sign;
    const signing = (r: Row): Promise<StepOutcome> => {
      driven.push(r.id);
      return sign(r);
    };
    const [a, b] = await Promise.all([
      queue(null, { sign: signing }).runDue(),
      queue(null, { sign: signing }).runDue(),
    ]);
    assert.ok(a <= OPTIONS.batch && b <= OPTIONS.batch, 'a pass takes at most its batch');
    await queue(null, { sign: signing }).runDue();
    assert.deepEqual([...driven].sort(), ['po_0', 'po_1', 'po_2', 'po_3', 'po_4'], 'each signed once');
    assert.ok(
      (await Promise.all(driven.map(row))).every((r) => r.status === 'sent' && r.locked_until === null),
      'all sent, leases given back',
    );
  });

  test('a transfer another worker holds is left alone until its lease runs out', async () => {
    await insert('po_held', 'payout');
    await sql`UPDATE queue_transfers SET locked_until = ${new Date(clock.millis() + 30_000)}`.execute(db);
    assert.equal(await queue(null).runDue(), 0);
    assert.equal((await row('po_held')).status, 'pending');
    clock.advance(30_000);
    assert.equal(await queue(null).runDue(), 1);
    assert.equal((await row('po_held')).status, 'sent');
  });

  test("a pass holds its transfers for the network's sender_lease_ms when set, else the family's lease", async () => {
    const heldFor = async (where: NetworkConfig, id: string) => {
      await insert(id, 'payout');
      let ms = 0;
      const sign = steps().sign;
      const q = new TransferQueue<Row>(
        'queue',
        { network: where, mode: 'test' },
        { db, clock, log, sink: null },
        OPTIONS,
        {
          ...steps(),
          sign: async (r) => {
            ms = (await row(r.id)).locked_until!.getTime() - clock.millis();
            return sign(r);
          },
        },
      );
      assert.equal(await q.runDue(), 1);
      return ms;
    };
    assert.equal(await heldFor({ ...network, senderLeaseMs: 3_000 }, 'po_short'), 3_000);
    assert.equal(await heldFor(network, 'po_default'), OPTIONS.leaseMs);
  });
});

describe('failed steps', () => {
  test('a step that throws waits base·2^tries (at most max), its tries counted and its reason kept; then it goes on', async () => {
    await insert('rfd_flaky', 'refund');
    let down = true;
    const metrics = new Metrics();
    const q = queue(
      recordingSink(),
      {
        follow: async (r) => {
          if (down) throw new Error('connect ECONNREFUSED');
          return steps().follow(r);
        },
      },
      metrics,
    );
    const start = clock.millis();
    await q.runDue();
    let r = await row('rfd_flaky');
    assert.equal(r.status, 'broadcast', 'it stays where it got');
    assert.equal(r.tries, 1);
    assert.equal(r.error, 'connect ECONNREFUSED');
    assert.equal(r.next_attempt_at.getTime(), start + 1_000);
    assert.equal(await q.runDue(), 0, 'not due during the backoff');
    for (const expected of [2_000, 4_000, 8_000, 8_000]) {
      clock.set(r.next_attempt_at);
      await q.runDue();
      r = await row('rfd_flaky');
      assert.equal(r.next_attempt_at.getTime() - clock.millis(), expected);
    }
    assert.equal(r.tries, 5);
    down = false;
    clock.set(r.next_attempt_at);
    await q.runDue();
    assert.equal((await row('rfd_flaky')).status, 'sent');
    const counted = (await metrics.registry.getSingleMetric('kasse_chain_transfer_steps_total')!.get()).values;
    assert.equal(counted.find((v) => v.labels.outcome === 'retry')?.value, 5);
  });

  test('a refusal no retry cures fails a transfer nothing of which can land, with its reason, reported once', async () => {
    await insert('rfd_bad', 'refund');
    const sink = recordingSink();
    const q = queue(sink, { sign: () => Promise.reject(new PermanentTransferError('xyz is not an address')) });
    await q.runDue();
    const r = await row('rfd_bad');
    assert.deepEqual(
      { status: r.status, error: r.error, reported: r.reported },
      { status: 'failed', error: 'xyz is not an address', reported: true },
    );
    assert.deepEqual(sink.settled, [
      { transferId: 'rfd_bad', status: 'failed', txHash: null, error: 'xyz is not an address', blockNumber: null },
    ]);
    await q.step('rfd_bad');
    assert.equal(sink.settled.length, 1, 'a settled transfer is not reported again');
  });

  test('the same refusal of a transfer that may still land (a node verdict while it is out) only waits', async () => {
    await insert('rfd_out', 'refund', 'broadcast');
    const sink = recordingSink();
    const verdict = new JsonRpcError('execution reverted', 3, false);
    await queue(sink, { follow: () => Promise.reject(verdict) }).runDue();
    const r = await row('rfd_out');
    assert.deepEqual(
      { status: r.status, tries: r.tries, error: r.error },
      { status: 'broadcast', tries: 1, error: 'execution reverted' },
    );
    assert.deepEqual(sink.settled, []);
  });
});

describe('settlement reports', () => {
  test("refunds and payouts reach the sink; the family's own transfers are only marked reported", async () => {
    for (const [id, purpose] of [
      ['rfd_1', 'refund'],
      ['po_1', 'payout'],
      ['swp_1', 'sweep'],
      ['gl_1', 'gasless'],
    ])
      await insert(id!, purpose!);
    const sink = recordingSink();
    await queue(sink).runDue();
    await queue(sink).runDue();
    assert.deepEqual(sink.settled.map((s) => [s.transferId, s.status, s.txHash]).sort(), [
      ['po_1', 'sent', '0xpo_1'],
      ['rfd_1', 'sent', '0xrfd_1'],
    ]);
    for (const id of ['rfd_1', 'po_1', 'swp_1', 'gl_1']) assert.equal((await row(id)).reported, true, id);
  });

  test('settlements a crash left unreported are reported a batch per pass; a sink that fails leaves them for the next', async () => {
    for (let i = 0; i < 5; i++) await insert(`po_${i}`, 'payout', 'sent', new Date(clock.millis() + i));
    const failing: TransferSink = {
      transfersSettled: () => Promise.reject(new Error('owner down')),
      transfersProgressed: async () => {},
    };
    await queue(failing).runDue();
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM queue_transfers WHERE reported`.execute(db);
    assert.equal(Number(rows[0]!.n), 0);
    const sink = recordingSink();
    await queue(sink).runDue();
    assert.deepEqual(
      sink.settled.map((s) => s.transferId),
      ['po_0', 'po_1', 'po_2'],
      'a batch, oldest first',
    );
    await queue(sink).runDue();
    assert.deepEqual(
      sink.settled.map((s) => s.transferId),
      ['po_0', 'po_1', 'po_2', 'po_3', 'po_4'],
    );
  });
});
