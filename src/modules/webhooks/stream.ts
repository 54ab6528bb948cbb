/**
 * The test-mode event stream behind `GET /test/events/stream` (and so `kasse listen`): a merchant's test events,
 * sent as they are committed, each as the exact body its webhook carries.
 *
 * A trigger announces every committed test event (`NOTIFY kasse_test_events, '<merchant> <seq>'`, migration 0016);
 * notifications arrive in commit order, so the hub loads each announced event once and hands it to the open streams
 * of its merchant in that order. Semantics, as for webhooks, are at least once: a client deduplicates on the id.
 *
 * Resuming: a stream opened with the id of the last event a client received (`Last-Event-ID`) first replays the
 * merchant's test events published after that one, then continues live. Live events that arrive during the replay
 * wait, and those the replay already sent are dropped until a marker this stream notifies itself comes back through
 * the channel: everything committed before the replay's queries was announced before the marker, so later
 * announcements cannot repeat the replay. Without an id a stream starts with the events committed after it opened.
 *
 * When the notification connection was lost, announcements may have been missed: every stream is ended and clients
 * resume from their last id. A stream whose client reads too slowly is ended the same way.
 */
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/index.ts';
import { eventBody } from './delivery.ts';

/** NOTIFY channel of committed test-mode events (see migration 0016). */
export const EVENT_STREAM_CHANNEL = 'kasse_test_events';

/** Open streams one merchant may hold at once. NOTE: a developer tool; more is a mistake or abuse. */
export const MAX_STREAMS_PER_MERCHANT = 10;

/** Events read per replay query; the replay waits for the client to take each page. */
const REPLAY_PAGE = 100;

export interface StreamedEvent {
  id: string;
  seq: bigint;
  type: string;
  /** The webhook body, byte for byte. */
  body: string;
}

export interface StreamSink {
  /** Writes one event; false when the client cannot keep up (a live stream is then closed). */
  send(event: StreamedEvent): boolean;
  /** Resolves when what was written has been taken by the client (a replay waits for it between pages). */
  drained(): Promise<void>;
  /** Ends the stream (server shutdown, lost notifications, slow client). */
  close(): void;
}

export interface Subscription {
  /** Replays the events after the one given to `open`, then lets live events through. */
  start(): Promise<void>;
  /** Ends the subscription (the client went away). */
  close(): void;
}

interface Subscriber {
  merchantId: string;
  types: ReadonlySet<string> | null;
  sink: StreamSink;
  /** While replaying: live events held back until the replay is done. */
  held: StreamedEvent[] | null;
  /** Seqs the replay sent, dropped from the live feed until the sync marker passes. */
  replayed: Set<bigint> | null;
}

type Announcement = { kind: 'event'; merchantId: string; seq: bigint } | { kind: 'marker'; token: string };

export class StreamLimitError extends Error {}
export class UnknownEventError extends Error {}

export class EventStreamHub {
  private readonly subscribers = new Map<string, Set<Subscriber>>();
  private readonly markers = new Map<string, () => void>();
  private queue: Announcement[] = [];
  private draining = false;

  constructor(private readonly db: Db) {}

  /** Handler of the notification channel. */
  announce(payload: string): void {
    const [first, second] = payload.split(' ');
    if (first === 'marker') this.queue.push({ kind: 'marker', token: second! });
    else if (this.subscribers.has(first!)) this.queue.push({ kind: 'event', merchantId: first!, seq: BigInt(second!) });
    else return;
    void this.drain();
  }

  /** Ends every stream: at shutdown, and when notifications may have been lost (the listening connection was re-made). */
  closeAll(): void {
    const all = [...this.subscribers.values()].flatMap((set) => [...set]);
    this.subscribers.clear();
    for (const s of all) s.sink.close();
  }

  /** Number of open streams (metrics, tests). */
  get size(): number {
    let n = 0;
    for (const set of this.subscribers.values()) n += set.size;
    return n;
  }

  /**
   * Opens a stream of the merchant's test events. With `after` (an event id of this merchant's test mode) the events
   * published after it are replayed when `start` is called (once the client is connected), live ones held meanwhile.
   * Throws `StreamLimitError` or `UnknownEventError`.
   */
  async open(
    merchantId: string,
    opts: { types?: readonly string[]; after?: string },
    sink: StreamSink,
  ): Promise<Subscription> {
    const set = this.subscribers.get(merchantId) ?? new Set<Subscriber>();
    if (set.size >= MAX_STREAMS_PER_MERCHANT)
      throw new StreamLimitError(`At most ${MAX_STREAMS_PER_MERCHANT} event streams may be open at once.`);
    let afterSeq: bigint | null = null;
    if (opts.after) {
      const row = await this.db
        .selectFrom('events')
        .select('seq')
        .where('id', '=', opts.after)
        .where('merchant_id', '=', merchantId)
        .where('mode', '=', 'test')
        .executeTakeFirst();
      if (!row) throw new UnknownEventError(`No test event ${opts.after} to resume after.`);
      afterSeq = BigInt(row.seq);
    }
    const sub: Subscriber = {
      merchantId,
      types: opts.types && opts.types.length > 0 ? new Set(opts.types) : null,
      sink,
      held: afterSeq === null ? null : [],
      replayed: null,
    };
    set.add(sub);
    this.subscribers.set(merchantId, set);
    return {
      start: async () => {
        if (afterSeq === null) return;
        try {
          await this.replay(sub, afterSeq);
        } catch {
          this.remove(sub);
          sub.sink.close();
        }
      },
      close: () => this.remove(sub),
    };
  }

  private remove(sub: Subscriber): void {
    const set = this.subscribers.get(sub.merchantId);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) this.subscribers.delete(sub.merchantId);
  }

  private async replay(sub: Subscriber, afterSeq: bigint): Promise<void> {
    const replayed = new Set<bigint>();
    let cursor = afterSeq;
    for (;;) {
      const rows = await this.load(
        sql`merchant_id = ${sub.merchantId} AND mode = 'test' AND seq > ${cursor} ORDER BY seq LIMIT ${REPLAY_PAGE}`,
      );
      for (const e of rows) {
        replayed.add(e.seq);
        if (!sub.types || sub.types.has(e.type)) sub.sink.send(e);
      }
      await sub.sink.drained();
      if (rows.length < REPLAY_PAGE) break;
      cursor = rows[rows.length - 1]!.seq;
    }
    // Live events that came during the replay, without those it sent; repeats stay filtered until the marker passes.
    const held = sub.held ?? [];
    sub.held = null;
    sub.replayed = replayed;
    for (const e of held) if (!replayed.has(e.seq) && !this.deliver(sub, e)) return;
    const token = randomBytes(9).toString('base64url');
    this.markers.set(token, () => {
      sub.replayed = null;
    });
    await sql`SELECT pg_notify(${EVENT_STREAM_CHANNEL}, ${`marker ${token}`})`.execute(this.db);
  }

  private async load(where: ReturnType<typeof sql>): Promise<StreamedEvent[]> {
    const { rows } = await sql<{ id: string; seq: bigint; type: string; created_at: Date; data: string }>`
      SELECT id, seq, type, created_at, data::text AS data FROM events WHERE ${where}
    `.execute(this.db);
    return rows.map((r) => ({
      id: r.id,
      seq: BigInt(r.seq),
      type: r.type,
      body: eventBody({ eventId: r.id, type: r.type, createdAt: r.created_at, data: r.data }),
    }));
  }

  /** Sends to one subscriber, holding it back during a replay; false when the subscriber was closed. */
  private deliver(sub: Subscriber, e: StreamedEvent): boolean {
    if (sub.types && !sub.types.has(e.type)) return true;
    if (sub.sink.send(e)) return true;
    this.remove(sub);
    sub.sink.close();
    return false;
  }

  /** Loads announced events in batches and hands them out in announcement (commit) order. */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        const seqs = batch.flatMap((a) => (a.kind === 'event' ? [a.seq] : []));
        const loaded = new Map<bigint, StreamedEvent>();
        if (seqs.length > 0) {
          for (const e of await this.load(sql`seq = ANY(${seqs.map(String)}::bigint[]) AND mode = 'test'`))
            loaded.set(e.seq, e);
        }
        for (const a of batch) {
          if (a.kind === 'marker') {
            this.markers.get(a.token)?.();
            this.markers.delete(a.token);
            continue;
          }
          const e = loaded.get(a.seq);
          if (!e) continue;
          for (const sub of [...(this.subscribers.get(a.merchantId) ?? [])]) {
            if (sub.held) sub.held.push(e);
            else if (!sub.replayed?.has(e.seq)) this.deliver(sub, e);
          }
        }
      }
    } catch {
      // The database could not be read: the announcements are lost, so end the streams; clients resume by id.
      this.closeAll();
    } finally {
      this.draining = false;
    }
  }
}
