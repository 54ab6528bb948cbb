/**
 * Whether a watched network's nodes answer: the watchers (loops.ts) report every pass, success or a failed node call,
 * and the verdict is kept in PostgreSQL (`chain_health`), so it is the same in every process whatever roles it runs:
 * the workers role writes it, a process serving the API reads it once at start and again whenever a write is
 * announced (NOTIFY `kasse_chain_health`). The registry pauses a network whose nodes failed FAILED_PASSES_TO_PAUSE
 * watcher passes in a row (status `paused`, with the reason) until a pass reaches them again.
 */
import { sql } from 'kysely';
import type { Clock } from '../core/clock.ts';
import { CommandError } from '../core/flags.ts';
import type { Logger } from '../core/log.ts';
import type { Mode } from '../core/mode.ts';
import type { Db } from '../db/index.ts';
import { JsonRpcError, shownUrl } from './jsonrpc.ts';
import type { NetworkConfig } from './types.ts';

export const HEALTH_CHANNEL = 'kasse_chain_health';
/** Watcher passes in a row whose node calls failed before the network is paused (one failure may be a blip). */
export const FAILED_PASSES_TO_PAUSE = 2;
/** A healthy network's `ok_at` is written again after this long (nothing else changes while nodes answer). */
const OK_REFRESH_MS = 60_000;

export interface NodeHealth {
  /** The last watcher pass that reached the nodes. */
  okAt: Date | null;
  /** The last node failure, and its error (without credentials: the transport never puts them in messages). */
  failedAt: Date | null;
  error: string | null;
  /** First failure of the current run of failures; null while the nodes answer. */
  failingSince: Date | null;
  /** Failed passes in a row. */
  failures: number;
}

/** What a watcher reports after each pass. */
export interface HealthReport {
  passed(): Promise<void>;
  failed(err: JsonRpcError): Promise<void>;
}

interface Row {
  mode: Mode;
  chain: string;
  ok_at: Date | string | null;
  failed_at: Date | string | null;
  failing_since: Date | string | null;
  failures: number;
  error: string | null;
}

const date = (v: Date | string | null) => (v === null ? null : new Date(v));
const health = (r: Row): NodeHealth => ({
  okAt: date(r.ok_at),
  failedAt: date(r.failed_at),
  error: r.error,
  failingSince: date(r.failing_since),
  failures: r.failures,
});

export class NetworkHealth {
  private readonly known = new Map<string, NodeHealth>();

  constructor(private readonly deps: { db: Db; clock: Clock; log: Logger }) {}

  /** What this process knows of `chain` in `mode` (null before any pass was recorded). */
  get(mode: Mode, chain: string): NodeHealth | null {
    return this.known.get(`${mode}:${chain}`) ?? null;
  }

  /** The health of a network whose nodes do not answer now, or null. */
  down(mode: Mode, chain: string): NodeHealth | null {
    const h = this.get(mode, chain);
    return h && h.failures >= FAILED_PASSES_TO_PAUSE ? h : null;
  }

  /** Reads every network's health (at start, and when another process announces a change). */
  async load(): Promise<void> {
    const rows = await this.deps.db.selectFrom('chain_health').selectAll().execute();
    for (const r of rows) this.known.set(`${r.mode}:${r.chain}`, health(r as Row));
  }

  /** The stored health of one network, read now (operator commands). */
  async read(mode: Mode, chain: string): Promise<NodeHealth | null> {
    const r = await this.deps.db
      .selectFrom('chain_health')
      .selectAll()
      .where('mode', '=', mode)
      .where('chain', '=', chain)
      .executeTakeFirst();
    return r ? health(r as Row) : null;
  }

  /** The reporter of one network's watcher. */
  reporter(mode: Mode, chain: string): HealthReport {
    return { passed: () => this.passed(mode, chain), failed: (err) => this.failed(mode, chain, err) };
  }

  private async passed(mode: Mode, chain: string): Promise<void> {
    const now = this.deps.clock.now();
    const h = this.get(mode, chain);
    if (h && h.failures === 0 && h.okAt && now.getTime() - h.okAt.getTime() < OK_REFRESH_MS) return;
    await this.write(
      mode,
      chain,
      sql`
      INSERT INTO chain_health AS h (mode, chain, ok_at, failures) VALUES (${mode}, ${chain}, ${now}, 0)
      ON CONFLICT (mode, chain) DO UPDATE SET ok_at = excluded.ok_at, failures = 0, failing_since = NULL
      RETURNING h.*`,
    );
  }

  private async failed(mode: Mode, chain: string, err: JsonRpcError): Promise<void> {
    const now = this.deps.clock.now();
    await this.write(
      mode,
      chain,
      sql`
      INSERT INTO chain_health AS h (mode, chain, failed_at, failing_since, failures, error) VALUES (${mode}, ${chain}, ${now}, ${now}, 1, ${err.message})
      ON CONFLICT (mode, chain) DO UPDATE SET failed_at = excluded.failed_at, error = excluded.error, failures = h.failures + 1,
        failing_since = COALESCE(h.failing_since, excluded.failing_since)
      RETURNING h.*`,
    );
  }

  /** Runs the upsert, keeps its row and announces it to the other processes; a failed write is logged, never thrown. */
  private async write(mode: Mode, chain: string, upsert: ReturnType<typeof sql>): Promise<void> {
    try {
      const { rows } =
        await sql<Row>`WITH w AS (${upsert}) SELECT w.*, pg_notify(${HEALTH_CHANNEL}, '') FROM w`.execute(this.deps.db);
      if (rows[0]) this.known.set(`${mode}:${chain}`, health(rows[0]));
    } catch (err) {
      this.deps.log.warn({ err, chain, mode }, 'network health not recorded');
    }
  }
}

/** The nodes of `network`, as an operator may read them (origins only: URLs often carry a key or a password). */
export function shownNodes(network: NetworkConfig): string {
  return network.rpcUrls.map(shownUrl).join(', ');
}

/**
 * Runs an operator command's node calls; a node that does not answer becomes a CommandError naming the network, its
 * nodes and the error, and when the watcher last reached them.
 */
export async function fromNodes<T>(
  network: NetworkConfig,
  mode: Mode,
  healthOf: NetworkHealth,
  calls: () => Promise<T>,
): Promise<T> {
  try {
    return await calls();
  } catch (err) {
    if (!(err instanceof JsonRpcError)) throw err;
    const h = await healthOf.read(mode, network.id).catch(() => null);
    const nodes =
      network.rpcUrls.length === 1
        ? `its node at ${shownNodes(network)} does`
        : `none of its nodes (${shownNodes(network)}) does`;
    const last = h?.okAt ? ` The watcher last reached it at ${h.okAt.toISOString()}.` : '';
    throw new CommandError(
      `${network.name} (${mode} network ${network.id}): ${nodes} not answer: ${err.message}.${last}`,
    );
  }
}
