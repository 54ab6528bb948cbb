/**
 * The one durable queue of outgoing hot-wallet transfers every family's sender runs on. A transfer is a row of the
 * family's own transfers table (`<family>_transfers`, with the columns of `QueuedTransfer`) and moves `pending` →
 * `signed` → `broadcast` → `sent` | `failed`. The queue owns what is the same on every chain:
 *   - leasing: a pass takes the due open rows of its network and mode with `FOR UPDATE SKIP LOCKED` and holds them
 *     (`locked_until`) while it drives them, so several worker processes share the rows;
 *   - the step loop: one step per status (`TransferSteps`: sign, broadcast, follow), a few per pass per transfer;
 *   - failed steps: the one place `stepFailure` (ports.ts) is applied. A permanent failure ends the transfer `failed`
 *     with its reason while nothing of it can still land (the family says when: `unsent`); anything else is tried
 *     again after a backoff (base·2^tries, at most max), `tries` counted and the reason stored;
 *   - settlement reporting: refunds and payouts (the transfers module's purposes) are handed to the `TransferSink`
 *     once settled, those one chain transaction settled together (a batch and its members: one call, one database
 *     transaction there), then marked `reported`; a crash in between reports again (the sink is idempotent);
 *   - metrics: steps by chain and outcome.
 * A family supplies only its steps and its storage of signed versions (its own tables).
 */
import { sql, type Generated, type Kysely, type RawBuilder } from 'kysely';
import type { Clock } from '../core/clock.ts';
import { groupBy } from '../core/group.ts';
import type { Logger } from '../core/log.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Mode } from '../core/mode.ts';
import { afterCommit, type Db, type Tx } from '../db/index.ts';
import type { Timestamp } from '../db/schema.ts';
import type { RelayState } from './charges.ts';
import { stepFailure, type StepFailure, type TransferSink } from './ports.ts';
import type { NetworkConfig } from './types.ts';

/** What a step did: moved the transfer on (run the next step now), nothing to do until later, or settled. */
export type StepResult = 'progress' | 'wait' | 'done';

/** A step's answer: a StepResult, or `retry`: not now, for this reason (tried again after the backoff). */
export type StepOutcome = StepResult | { retry: string };

export type TransferStatus = 'pending' | 'signed' | 'broadcast' | 'sent' | 'failed';
const OPEN = ['pending', 'signed', 'broadcast'] as const;

/** The columns the queue reads and writes in a family's transfers table. */
export interface QueuedTransfer {
  id: string;
  mode: Mode;
  chain: string;
  purpose: string;
  status: TransferStatus;
  error: string | null;
  tries: number;
  next_attempt_at: Date;
  locked_until: Date | null;
  reported: boolean;
  created_at: Date;
}

/** Those columns (and the times of each step) as a family's transfers table declares them (its schema.ts). */
export interface TransferQueueColumns {
  id: string;
  mode: Mode;
  chain: string;
  status: TransferStatus;
  error: string | null;
  tries: Generated<number>;
  next_attempt_at: Timestamp;
  locked_until: Timestamp | null;
  reported: Generated<boolean>;
  created_at: Timestamp;
  signed_at: Timestamp | null;
  broadcast_at: Timestamp | null;
  settled_at: Timestamp | null;
}

/**
 * Those columns after the family's own in its migration (`CREATE TABLE <family>_transfers (…, ${queueColumns})`):
 * the last failed step's reason, consecutive failed tries of the current step and when the next try is due
 * (backoff), a worker's lease on the row while it works on it, whether the settlement was handed to the sink, and
 * when each step happened.
 */
export const queueColumns = sql.raw(
  [
    'error text',
    'tries integer NOT NULL DEFAULT 0',
    'next_attempt_at timestamptz NOT NULL',
    'locked_until timestamptz',
    'reported boolean NOT NULL DEFAULT false',
    'created_at timestamptz NOT NULL',
    'signed_at timestamptz',
    'broadcast_at timestamptz',
    'settled_at timestamptz',
  ].join(',\n      '),
);

/** The indexes a pass reads a family's transfers table by: the due open rows, and the settled ones not reported. */
export function queueIndexes(table: string): RawBuilder<unknown> {
  return sql.raw(
    `CREATE INDEX ${table}_due ON ${table} (mode, chain, next_attempt_at) WHERE status IN ('pending', 'signed', 'broadcast');
    CREATE INDEX ${table}_unreported ON ${table} (mode, chain) WHERE status IN ('sent', 'failed') AND NOT reported;`,
  );
}

/** The purposes a sender is handed by the transfers module, and so reports to its sink; the rest are the family's. */
const SINK_PURPOSES: readonly string[] = ['refund', 'payout', 'authorize', 'capture', 'void'];
export const reportsToSink = (purpose: string): boolean => SINK_PURPOSES.includes(purpose);

/** What a family supplies: its steps, and how its rows settle. */
export interface TransferSteps<R extends QueuedTransfer> {
  /** pending → signed: build, sign and store version 0 (or settle when nothing is to be sent). */
  sign(row: R): Promise<StepOutcome>;
  /** signed → broadcast: send the newest stored version as stored. */
  broadcast(row: R): Promise<StepOutcome>;
  /** broadcast → sent | failed once it landed; resend, or replace with a new version (back to signed) when stuck. */
  follow(row: R): Promise<StepOutcome>;
  /** Nothing of the transfer can still land (so a permanent failure may end it `failed`). */
  unsent(row: R): Promise<boolean>;
  /** The settled transaction's hash (signature, txid) as the chain names it; null when none was sent. */
  hash(row: R): string | null;
  /** The block the settled transaction landed in, where the family keeps it; default unknown. */
  block?(row: R): bigint | null;
  /** Ends a transfer that is still as `row` says `failed` with `reason`, releasing what it held (no report). */
  fail(row: R, reason: string): Promise<void>;
  /** How a failed step's reason is stored (e.g. which step it was); default the reason itself. */
  describe?(row: R, err: unknown, failure: StepFailure): string;
  /** Settled rows reported with `row` (a batch's members); default none. */
  carried?(row: R): Promise<R[]>;
  /** Runs at the start of every pass, before leasing (e.g. gathering batches). */
  beforePass?(): Promise<void>;
  /** Further condition on the rows a pass leases, and their order (after it, creation order). */
  lease?: { where?: RawBuilder<boolean>; order?: RawBuilder<unknown> };
}

export interface QueueOptions {
  /** Transfers a pass takes, and how long it holds them (the network's `sender_lease_ms` comes first). */
  batch: number;
  leaseMs: number;
  /** Backoff after a failed try: base·2^tries, at most max. */
  retryBaseMs: number;
  retryMaxMs: number;
}

export interface QueueDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  /** Where refunds and payouts settle; null: nothing is reported (only marked). */
  sink: TransferSink | null;
}

/** The queue of one family's transfers (`<family>_transfers`) on one network in one mode. */
export class TransferQueue<R extends QueuedTransfer> {
  private readonly db: Kysely<Record<string, QueuedTransfer>>;
  private readonly table: string;

  constructor(
    readonly family: string,
    private readonly where: { network: NetworkConfig; mode: Mode },
    private readonly deps: QueueDeps,
    readonly options: QueueOptions,
    private readonly steps: TransferSteps<R>,
  ) {
    this.db = deps.db as unknown as Kysely<Record<string, QueuedTransfer>>;
    this.table = `${family}_transfers`;
  }

  private get chain(): string {
    return this.where.network.id;
  }

  /** A transfer as stored. */
  async get(id: string): Promise<R | undefined> {
    return (await this.db.selectFrom(this.table).selectAll().where('id', '=', id).executeTakeFirst()) as R | undefined;
  }

  /** The hash (signature, txid) of the transaction a transfer sent; null when none was sent. */
  hash(row: R): string | null {
    return this.steps.hash(row);
  }

  /**
   * Records a new transfer in `tx`, idempotent on `id`: the queue's columns (this network and mode, due now; signed
   * now when it starts `signed`) with the family's own `columns`.
   */
  async add(
    tx: Tx,
    id: string,
    columns: Record<string, unknown>,
    status: 'pending' | 'signed' = 'pending',
  ): Promise<void> {
    const now = this.deps.clock.now();
    const signedAt = status === 'signed' ? now : null;
    await (tx as unknown as Kysely<Record<string, Record<string, unknown>>>)
      .insertInto(this.table)
      .values({
        id,
        mode: this.where.mode,
        chain: this.chain,
        status,
        next_attempt_at: now,
        created_at: now,
        signed_at: signedAt,
        ...columns,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /**
   * Signed versions of a transfer in the family's table of them (`<family>_transfer_txs`, keyed by `transfer_id` and
   * `version`), oldest first.
   */
  async versions<V>(id: string): Promise<V[]> {
    const db = this.db as unknown as Kysely<Record<string, { transfer_id: string; version: number }>>;
    return (await db
      .selectFrom(`${this.family}_transfer_txs`)
      .selectAll()
      .where('transfer_id', '=', id)
      .orderBy('version')
      .execute()) as V[];
  }

  /**
   * One worker pass: leases the due open transfers of this network, drives each as far as it goes now, and reports
   * settled ones not yet reported. Returns how many transfers it drove.
   */
  async runDue(): Promise<number> {
    if (this.where.network.rpcUrls.length === 0) return 0;
    await this.steps.beforePass?.();
    const now = this.deps.clock.now();
    const due = this.due(this.db, now, this.steps.lease?.where)
      .select('id')
      .$if(this.steps.lease?.order !== undefined, (q) => q.orderBy(this.steps.lease!.order!))
      .orderBy('created_at')
      .limit(this.options.batch);
    const leased = await this.db
      .updateTable(this.table)
      .set({ locked_until: new Date(now.getTime() + (this.where.network.senderLeaseMs ?? this.options.leaseMs)) })
      .where('id', 'in', due)
      .returning('id')
      .execute();
    for (const id of await this.inOrder(leased.map((r) => r.id))) {
      try {
        await this.drive(id);
      } catch (err) {
        this.deps.log.error(
          { err: errorText(err), transferId: id, chain: this.chain, mode: this.where.mode },
          `${this.family} sender step failed`,
        );
      } finally {
        await this.db.updateTable(this.table).set({ locked_until: null }).where('id', '=', id).execute();
      }
    }
    await this.reportSettled();
    return leased.length;
  }

  /**
   * The open transfers of this network and mode that are due and that no pass holds (also matching `where`), locked
   * `FOR UPDATE SKIP LOCKED`: the one way rows are taken, by a pass or by a family regrouping rows before it.
   */
  private due(db: Kysely<Record<string, QueuedTransfer>>, now: Date, where?: RawBuilder<boolean>) {
    return db
      .selectFrom(this.table)
      .where('mode', '=', this.where.mode)
      .where('chain', '=', this.chain)
      .where('status', 'in', [...OPEN])
      .where('next_attempt_at', '<=', now)
      .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<=', now)]))
      .$if(where !== undefined, (q) => q.where(where!))
      .forUpdate()
      .skipLocked();
  }

  /**
   * Takes due transfers matching `where` inside the caller's transaction, oldest first, at most `limit`, locked until
   * it commits (a family's batching gathers its members here; a pass then leases the batch).
   */
  async claim(tx: Tx, where: RawBuilder<boolean>, limit: number): Promise<R[]> {
    const db = tx as unknown as Kysely<Record<string, QueuedTransfer>>;
    return (await this.due(db, this.deps.clock.now(), where)
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .limit(limit)
      .execute()) as R[];
  }

  /**
   * signed → broadcast for a transfer whose newest version is still the one `version` names (its hash column and
   * value): the first broadcast's time is kept, tries and error are cleared, plus the family's own `columns`. False
   * when the transfer moved on meanwhile.
   */
  async broadcasted(id: string, version: [column: string, hash: string], columns: object = {}): Promise<boolean> {
    const now = this.deps.clock.now();
    const db = this.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
    const r = await db
      .updateTable(this.table)
      .set({
        ...columns,
        status: 'broadcast',
        broadcast_at: sql`coalesce(broadcast_at, ${now})`,
        tries: 0,
        error: null,
        next_attempt_at: now,
      })
      .where('id', '=', id)
      .where('status', '=', 'signed')
      .where(version[0], '=', version[1])
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  /**
   * Ends a `pending` transfer (nothing signed) `failed` with `reason` in the caller's transaction; false when it was
   * signed meanwhile (followed as usual). The sign step locks the row and signs only a `pending` one: never both.
   */
  async withdraw(tx: Tx, id: string, reason: string): Promise<boolean> {
    const r = await (tx as unknown as Kysely<Record<string, QueuedTransfer & { settled_at: Date | null }>>)
      .updateTable(this.table)
      .set({ status: 'failed', error: reason, settled_at: this.deps.clock.now(), locked_until: null })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }

  /** Leased ids in the order the pass drives them (the family's order, then creation). */
  private async inOrder(ids: string[]): Promise<string[]> {
    if (ids.length < 2) return ids;
    const rows = await this.db
      .selectFrom(this.table)
      .select('id')
      .where('id', 'in', ids)
      .$if(this.steps.lease?.order !== undefined, (q) => q.orderBy(this.steps.lease!.order!))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /** Runs steps on one transfer until it waits or settles (at most a few, so one transfer cannot hog a pass). */
  async drive(id: string): Promise<StepResult> {
    let result: StepResult = 'progress';
    for (let i = 0; i < 4 && result === 'progress'; i++) result = await this.step(id);
    return result;
  }

  /**
   * Sends one transfer now, without waiting for the worker (a relay's request path): steps until it is `broadcast`
   * or has to wait. Returns the transfer as stored afterwards.
   */
  async push(id: string): Promise<R> {
    for (let i = 0; i < 3; i++) {
      const row = await this.get(id);
      if (!row || (row.status !== 'pending' && row.status !== 'signed')) break;
      if ((await this.step(id)) !== 'progress') break;
    }
    return (await this.get(id))!;
  }

  /**
   * `push` on a request path that has recorded the transfer (a relay): a failure now is logged and the transfer left
   * to the worker. Returns the transfer as stored afterwards.
   */
  async pushOrLeave(id: string): Promise<R> {
    try {
      return await this.push(id);
    } catch (err) {
      this.deps.log.error(
        { err: errorText(err), transferId: id },
        'transfer could not be sent now; the sender carries it on',
      );
      return (await this.get(id))!;
    }
  }

  /** Exactly one step of one transfer (tests stop between steps to play a crash). */
  async step(id: string): Promise<StepResult> {
    const row = await this.get(id);
    if (!row) throw new Error(`no ${this.family} transfer ${id}`);
    if (row.status === 'sent' || row.status === 'failed') {
      await this.report([row]);
      return 'done';
    }
    let outcome: StepOutcome;
    try {
      outcome =
        row.status === 'pending'
          ? await this.steps.sign(row)
          : row.status === 'signed'
            ? await this.steps.broadcast(row)
            : await this.steps.follow(row);
    } catch (err) {
      outcome = await this.failed(row, err);
    }
    const result = typeof outcome === 'string' ? outcome : await this.retryLater(row, outcome.retry);
    this.deps.metrics?.transferSteps.inc({
      chain: this.chain,
      outcome: typeof outcome === 'string' ? outcome : 'retry',
    });
    if (result === 'done') await this.reportWith(id);
    return result;
  }

  /** The failure rule: a permanent failure of a transfer nothing of which can land fails it; the rest is retried. */
  private async failed(row: R, err: unknown): Promise<StepOutcome> {
    const failure = stepFailure(err);
    const reason = this.steps.describe?.(row, err, failure) ?? failure.reason;
    if (!failure.permanent || !(await this.steps.unsent(row))) return { retry: reason };
    this.deps.log.warn(
      { transferId: row.id, chain: this.chain, mode: this.where.mode, status: row.status, reason },
      `${this.family} transfer failed for good`,
    );
    await this.steps.fail(row, reason);
    return 'done';
  }

  /** Keeps the transfer in its state and tries again after a backoff; the reason is stored and logged. */
  private async retryLater(row: R, error: string): Promise<StepResult> {
    const delay = Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** Math.min(row.tries, 20));
    await this.db
      .updateTable(this.table)
      .set({ tries: row.tries + 1, error, next_attempt_at: new Date(this.deps.clock.now().getTime() + delay) })
      .where('id', '=', row.id)
      .where('status', '=', row.status)
      .execute();
    this.deps.log.warn(
      { transferId: row.id, chain: this.chain, mode: this.where.mode, status: row.status, tries: row.tries + 1, error },
      `${this.family} transfer waits`,
    );
    return 'wait';
  }

  /** Reports a transfer that just settled with what it carried: together, as one chain transaction settled them. */
  private async reportWith(id: string): Promise<void> {
    const row = await this.get(id);
    if (!row) return;
    await this.report([...((await this.steps.carried?.(row)) ?? []), row]);
  }

  /**
   * Hands settled refunds and payouts to the sink in one call (one database transaction there), then marks them all
   * reported in one statement (other purposes are only marked).
   */
  private async report(rows: readonly R[]): Promise<void> {
    const due = rows.filter((r) => !r.reported && (r.status === 'sent' || r.status === 'failed'));
    if (due.length === 0) return;
    const results = due
      .filter((r) => reportsToSink(r.purpose))
      .map((r) => ({
        transferId: r.id,
        status: r.status as 'sent' | 'failed',
        txHash: this.steps.hash(r),
        error: r.error,
        blockNumber: this.steps.block?.(r) ?? null,
      }));
    if (results.length > 0) await this.deps.sink?.transfersSettled(this.where.mode, results);
    await this.db
      .updateTable(this.table)
      .set({ reported: true })
      .where(
        'id',
        'in',
        due.map((r) => r.id),
      )
      .execute();
  }

  /**
   * Reports settled transfers a crash left unreported, a pass's batch at a time; those one chain transaction settled
   * (the same hash) together, so one owner's failure holds back only its own.
   */
  async reportSettled(): Promise<void> {
    const rows = (await this.db
      .selectFrom(this.table)
      .selectAll()
      .where('mode', '=', this.where.mode)
      .where('chain', '=', this.chain)
      .where('status', 'in', ['sent', 'failed'])
      .where('reported', '=', false)
      .orderBy('created_at')
      .limit(this.options.batch)
      .execute()) as R[];
    for (const group of groupBy(rows, (row) => this.steps.hash(row) ?? `id:${row.id}`).values()) {
      try {
        await this.report(group);
      } catch (err) {
        this.deps.log.error(
          { err: errorText(err), transferIds: group.map((r) => r.id) },
          `${this.family} transfer settlement could not be reported`,
        );
      }
    }
  }

  /**
   * Tells the sink a refund or payout (or the ones `row` carries) was signed or broadcast. Best effort: a report lost
   * to a crash or an error is made good by the next one or by the settlement.
   */
  async progressed(row: R, status: 'signed' | 'broadcast', txHash: string): Promise<void> {
    if (!this.deps.sink) return;
    const ids = reportsToSink(row.purpose) ? [row.id] : ((await this.steps.carried?.(row)) ?? []).map((m) => m.id);
    if (ids.length === 0) return;
    try {
      await this.deps.sink.transfersProgressed(
        this.where.mode,
        ids.map((transferId) => ({ transferId, status, txHash })),
      );
    } catch (err) {
      this.deps.log.warn(
        { err: errorText(err), transferIds: ids, status },
        `${this.family} transfer progress could not be reported`,
      );
    }
  }
}

/**
 * A family's sender over its `TransferQueue`: the queue's passes and steps, and the listeners woken when a commit
 * recorded new work. A family supplies the queue (and its steps) and calls `workRecorded` after such a commit.
 */
export abstract class QueuedSender<R extends QueuedTransfer, V = unknown> {
  protected abstract readonly queue: TransferQueue<R>;
  private readonly listeners: Array<() => void> = [];

  /** Called after a commit that recorded new work (the worker loop wakes up). */
  onWork(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Records a new transfer in `tx` (`TransferQueue.add`); the loop is woken once `tx` commits. */
  protected async enqueued(...args: Parameters<TransferQueue<R>['add']>): Promise<void> {
    await this.queue.add(...args);
    afterCommit(args[0], () => {
      for (const l of this.listeners) l();
    });
  }

  /** A transfer as stored. */
  get(id: string): Promise<R | undefined> {
    return this.queue.get(id);
  }

  /**
   * Where a transfer stands as the relay of a payer's signed grant or revoke, or a charge until it is `done` and the
   * family reads what it moved; `failure` is the reason of a failed transfer that stored none.
   */
  async relayState(id: string, failure: string): Promise<RelayState> {
    const row = await this.get(id);
    if (!row || row.status === 'pending') return { status: 'pending', transaction: null };
    const hash = this.queue.hash(row);
    if (row.status === 'signed' || row.status === 'broadcast') return { status: 'pending', transaction: hash };
    if (row.status === 'failed') return { status: 'failed', message: row.error ?? failure, transaction: hash };
    return { status: 'done', transaction: hash! };
  }

  /** Ends a transfer not signed yet `failed` in `tx` (`TransferQueue.withdraw`); false when it was signed. */
  withdraw(tx: Tx, id: string, reason: string): Promise<boolean> {
    return this.queue.withdraw(tx, id, reason);
  }

  /** Every signed version of a transfer, oldest first. */
  versions(id: string): Promise<V[]> {
    return this.queue.versions<V>(id);
  }

  /** The newest signed version of a transfer (what is broadcast); throws when none is stored. */
  protected async newestVersion(id: string): Promise<V> {
    const newest = (await this.versions(id)).at(-1);
    if (!newest) throw new Error(`${this.queue.family} transfer ${id} has no stored transaction`);
    return newest;
  }

  /**
   * One worker pass (the queue's): leases the due open transfers of this network, drives each as far as it goes now,
   * and reports settled ones not yet reported. Returns how many transfers it drove.
   */
  runDue(): Promise<number> {
    return this.queue.runDue();
  }

  /** Runs steps on one transfer until it waits or settles. */
  drive(id: string): Promise<StepResult> {
    return this.queue.drive(id);
  }

  /** Steps a transfer until it has been sent once (the relay's request path), without waiting for the worker. */
  push(id: string): Promise<R> {
    return this.queue.push(id);
  }

  /** Steps a recorded transfer until it has been sent once where it can now; a failure leaves it to the worker. */
  pushOrLeave(id: string): Promise<R> {
    return this.queue.pushOrLeave(id);
  }

  /** Exactly one step of one transfer (tests stop between steps to play a crash). */
  step(id: string): Promise<StepResult> {
    return this.queue.step(id);
  }
}

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
