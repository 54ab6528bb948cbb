/**
 * The workers role's loops every family runs the same way: a watcher polling its chain from a stored cursor
 * (`PollingWatcher`), and one loop driving all of a family's senders (`senderLoop`). A family supplies what a pass
 * does; how passes are scheduled, woken, coalesced and stopped lives here (on `core/loop.ts`).
 */
import { Loop } from '../core/loop.ts';
import type { Logger } from '../core/log.ts';
import type { Mode } from '../core/mode.ts';
import { sql, type ExpressionBuilder, type FilterObject, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { Db, Tx } from '../db/index.ts';
import type { Database } from '../db/schema.ts';
import type { Metrics } from '../core/metrics.ts';
import type { HealthReport, NetworkHealth } from './health.ts';
import { JsonRpcError } from './jsonrpc.ts';
import type { FamilyWorker } from './plugin.ts';
import { PushChannel, recordWatchPath, type PushSpec, type WatchPath } from './push.ts';
import type { DepositSink } from './ports.ts';
import type { NetworkConfig } from './types.ts';

/** Kysely over tables named at run time: the cursor helpers take the family's table by name. */
type AnyTables = Kysely<Record<string, { mode: Mode; chain: string } & Record<string, unknown>>>;

/** A hot-wallet sender as its loop drives it: one network and mode, a pass over its due transfers, a wake-up call. */
export interface DueSender {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  /** Signs, broadcasts and settles what is due now. */
  runDue(): Promise<unknown>;
  /** Calls `listener` when work was recorded in this process (so the loop need not wait for its interval). */
  onWork(listener: () => void): void;
}

/**
 * One loop, `<family>-sender`, driving every sender's due transfers every `intervalMs`, or at once when one of them
 * says work was recorded in this process. A sender's failed pass is logged and the others still run. None when the
 * family has no senders.
 */
export function senderLoop(family: string, senders: DueSender[], intervalMs: number, log: Logger): FamilyWorker[] {
  if (senders.length === 0) return [];
  const loop = new Loop(
    `${family}-sender`,
    intervalMs,
    async () => {
      for (const sender of senders) {
        try {
          await sender.runDue();
        } catch (err) {
          log.error({ err, chain: sender.network.id, mode: sender.mode }, `${family} sender pass failed`);
        }
      }
    },
    log,
  );
  for (const sender of senders) sender.onWork(() => loop.wake());
  return [loop];
}

/** A family adapter as the workers role starts its loops: its watcher, and its sender if it has one. */
export interface LoopedAdapter {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  /** Whether a watcher follows this network. */
  readonly watched: boolean;
  watcher(sink: DepositSink): FamilyWorker;
  sender?: DueSender;
}

/**
 * A family's watcher and sender loops: a watcher per adapter that is `watched` (the others are logged) reporting to
 * `sink`, and one `senderLoop` over every adapter's sender.
 */
export function watcherAndSenderLoops(
  family: string,
  adapters: LoopedAdapter[],
  sink: DepositSink,
  senderIntervalMs: number,
  log: Logger,
): FamilyWorker[] {
  const out: FamilyWorker[] = [];
  for (const adapter of adapters) {
    if (adapter.watched) out.push(adapter.watcher(sink));
    else {
      const { id, paused, rpcUrls } = adapter.network;
      log.info({ chain: id, mode: adapter.mode, paused, rpcUrls: rpcUrls.length }, `${family} watcher not started`);
    }
  }
  const senders = adapters.flatMap((a) => (a.sender ? [a.sender] : []));
  out.push(...senderLoop(family, senders, senderIntervalMs, log));
  return out;
}

/** What every family's watcher is given, besides its node client and its own settings. */
export interface WatcherBasics {
  db: Db;
  /** Where each pass is reported (health.ts); none in some tests. */
  health?: NetworkHealth;
  log: Logger;
  metrics?: Metrics;
  network: NetworkConfig;
  mode: Mode;
  sink: DepositSink;
  /** What wakes the watcher between polls (push.ts); none: polling only. */
  push?: PushSpec | null;
}

/** A family adapter's basics for a watcher of its network and mode reporting to `sink`. */
export function watcherBasics(
  deps: Pick<WatcherBasics, 'db' | 'health' | 'log' | 'metrics'>,
  network: NetworkConfig,
  mode: Mode,
  sink: DepositSink,
): WatcherBasics {
  return { db: deps.db, health: deps.health, log: deps.log, metrics: deps.metrics, network, mode, sink };
}

/** The node answered something that does not fit together; the pass retries (after backoff, on the next URL). */
export class InconsistentChainError extends Error {
  override name = 'InconsistentChainError';
}

/** How a watcher retries a step whose answers from the node did not fit together (`InconsistentChainError`). */
export interface InconsistencyRetries {
  /** Retries in a row within one pass before it fails. Default 3. */
  inconsistencyRetries?: number;
  /** Backoff between those retries (full jitter up to base·2^n). Default 250 ms. */
  retryBackoffMs?: number;
}

/** Another worker process moved the cursor while this one scanned; the pass stops and the next one re-reads it. */
export class CursorMovedError extends Error {
  constructor() {
    super('the watcher cursor was moved by another process');
    this.name = 'CursorMovedError';
  }
}

/**
 * A watcher that polls its chain: `run` is one pass from the stored cursor, and says whether it stopped short of the
 * chain's tip (`behind`), in which case another pass follows at once instead of after the interval. Each pass is
 * reported to the network's health (health.ts): passed, or failed on a node call. Its loop is
 * `<family>-watcher:<mode>:<network>`, polling every `network.pollIntervalMs`, and woken at once by every
 * notification of its push channel when the network has `ws_urls` (push.ts): push only wakes, the pass is the same.
 */
export abstract class PollingWatcher<R extends { behind: boolean }> implements FamilyWorker {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  /** The network's id. */
  protected readonly chain: string;
  private readonly loopName: string;
  private readonly loopLog: Logger;
  private readonly health?: HealthReport;
  private loop: Loop | null = null;
  private push: PushChannel | null = null;
  private readonly basics: WatcherBasics;
  private ticking: Promise<R> | null = null;

  protected constructor(family: string, basics: WatcherBasics) {
    this.network = basics.network;
    this.mode = basics.mode;
    this.chain = basics.network.id;
    this.loopName = `${family}-watcher:${basics.mode}:${basics.network.id}`;
    this.loopLog = basics.log;
    this.health = basics.health?.reporter(basics.mode, basics.network.id);
    this.basics = basics;
  }

  /** How new blocks reach this watcher now: `push` while its push channel is subscribed, else `poll`. */
  get watchPath(): WatchPath {
    return this.push?.path ?? 'poll';
  }

  /** One pass over the chain from the stored cursor. */
  protected abstract run(): Promise<R>;

  /** Polls every `intervalMs` until stopped; a pass that fell behind is followed by another at once. */
  start(): this {
    if (this.loop) return this;
    this.loop = new Loop(
      this.loopName,
      this.network.pollIntervalMs,
      async () => {
        const r = await this.tick();
        if (r.behind) this.loop?.wake();
      },
      this.loopLog,
    );
    this.loop.start();
    const { push, log, metrics } = this.basics;
    if (push && push.urls.length > 0) {
      const wake = () => this.loop?.wake();
      this.push = new PushChannel({ ...push, chain: this.chain, mode: this.mode, log, metrics, onEvent: wake });
      this.push.start();
    } else recordWatchPath(metrics, this.chain, this.mode, 'poll');
    return this;
  }

  /** Resolves once the running pass (looped or called directly) has finished. */
  async stop(): Promise<void> {
    this.push?.stop();
    this.push = null;
    await this.loop?.stop();
    this.loop = null;
    await this.ticking?.catch(() => {});
  }

  /** One pass; concurrent calls share one run. */
  tick(): Promise<R> {
    this.ticking ??= this.reported().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  /** Whether `err` says another process moved the cursor (logged: this pass yields to it). */
  protected yieldsTo(err: unknown): boolean {
    if (!(err instanceof CursorMovedError)) return false;
    this.loopLog.info({ chain: this.chain, mode: this.mode }, 'another watcher moved the cursor; yielding');
    return true;
  }

  /**
   * What a pass does after a step threw `err`, `tries` retries in: 'yield' when another process moved the cursor;
   * 'retry' when the node's answers did not fit together and fewer than the allowed retries were made, after failing
   * over to the next RPC URL and a backoff that doubles with each try; anything else is thrown.
   */
  protected async afterFailure(
    err: unknown,
    tries: number,
    rpc: { failover(): void },
    retries: InconsistencyRetries,
  ): Promise<'yield' | 'retry'> {
    if (this.yieldsTo(err)) return 'yield';
    if (!(err instanceof InconsistentChainError) || tries >= (retries.inconsistencyRetries ?? 3)) throw err;
    this.loopLog.warn(
      { chain: this.chain, mode: this.mode, err: err.message, retry: tries + 1 },
      'inconsistent chain data; retrying on the next rpc url',
    );
    rpc.failover();
    const backoff = Math.floor(Math.random() * (retries.retryBackoffMs ?? 250) * 2 ** tries);
    await new Promise((r) => setTimeout(r, backoff));
    return 'retry';
  }

  /** A `where` for the rows of this watcher's network and mode: every table of a family's watcher is keyed by both. */
  protected readonly onNetwork = <TB extends keyof Database>(eb: ExpressionBuilder<Database, TB>) =>
    eb.and({ mode: this.mode, chain: this.chain } as unknown as FilterObject<Database, TB>);

  /** This network's row of the family's cursor `table` (none before the first pass). */
  protected async cursorRow<T extends keyof Database>(table: T): Promise<Selectable<Database[T]> | undefined> {
    const db = this.basics.db as unknown as AnyTables;
    return (await db
      .selectFrom(table as string)
      .selectAll()
      .where(this.onNetwork)
      .executeTakeFirst()) as Selectable<Database[T]> | undefined;
  }

  /**
   * Moves this network's row of the family's cursor `table` from `prev` to `next` (column values) inside `tx`, as a
   * compare-and-set: throws `CursorMovedError` when the row no longer holds `prev`, another process having moved it.
   */
  protected async moveCursorRow<T extends keyof Database>(
    tx: Tx,
    table: T,
    prev: Updateable<Database[T]>,
    next: Updateable<Database[T]>,
  ): Promise<void> {
    const r = await (tx as unknown as AnyTables)
      .updateTable(table as string)
      .set({ ...(next as Record<string, unknown>), updated_at: sql`now()` })
      .where(this.onNetwork)
      .where((eb) => eb.and(prev as Record<string, unknown>))
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) throw new CursorMovedError();
  }

  private async reported(): Promise<R> {
    let r: R;
    try {
      r = await this.run();
    } catch (err) {
      if (err instanceof JsonRpcError) await this.health?.failed(err);
      throw err;
    }
    await this.health?.passed();
    return r;
  }
}
