/**
 * The workers role's loops every family runs the same way: a watcher polling its chain from a stored cursor
 * (`PollingWatcher`), and one loop driving all of a family's senders (`senderLoop`). A family supplies what a pass
 * does; how passes are scheduled, woken, coalesced and stopped lives here (on `core/loop.ts`).
 */
import { Loop } from '../core/loop.ts';
import type { Logger } from '../core/log.ts';
import type { Mode } from '../core/mode.ts';
import type { Db } from '../db/index.ts';
import type { Metrics } from '../core/metrics.ts';
import type { HealthReport, NetworkHealth } from './health.ts';
import { JsonRpcError } from './jsonrpc.ts';
import type { FamilyWorker } from './plugin.ts';
import type { DepositSink } from './ports.ts';
import type { NetworkConfig } from './types.ts';

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

/**
 * A watcher that polls its chain: `run` is one pass from the stored cursor, and says whether it stopped short of the
 * chain's tip (`behind`), in which case another pass follows at once instead of after the interval. Each pass is
 * reported to the network's health (health.ts): passed, or failed on a node call.
 */
export abstract class PollingWatcher<R extends { behind: boolean }> implements FamilyWorker {
  private loop: Loop | null = null;
  private ticking: Promise<R> | null = null;

  protected constructor(
    private readonly loopName: string,
    private readonly intervalMs: number,
    private readonly loopLog: Logger,
    private readonly health?: HealthReport,
  ) {}

  /** One pass over the chain from the stored cursor. */
  protected abstract run(): Promise<R>;

  /** Polls every `intervalMs` until stopped; a pass that fell behind is followed by another at once. */
  start(): this {
    if (this.loop) return this;
    this.loop = new Loop(
      this.loopName,
      this.intervalMs,
      async () => {
        const r = await this.tick();
        if (r.behind) this.loop?.wake();
      },
      this.loopLog,
    );
    this.loop.start();
    return this;
  }

  /** Resolves once the running pass (looped or called directly) has finished. */
  async stop(): Promise<void> {
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
