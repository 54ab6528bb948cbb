/**
 * Push from a node over WebSocket (JSON-RPC subscriptions: EVM `eth_subscribe`, Solana `slotSubscribe`): a
 * notification only wakes the network's watcher, which then reads from its stored cursor as on any poll, so a push
 * can neither skip nor double a block, and polling at the network's interval stays the safety net.
 *
 * A channel connects to the network's `ws_urls` in turn, sends the family's subscriptions, and counts as live
 * (`push`) once every one was acknowledged; any notification, and every (re)connection, wakes the watcher. When the
 * socket closes, errs or stops answering pings (node restarted, proxy timeout), the path is `poll` until a new
 * connection is subscribed again; reconnection backs off (doubling from `baseMs` up to `maxMs`, with jitter, the
 * next URL each time). The live path is the gauge `kasse_chain_watch_path{chain,mode,path}` (1 on the live path).
 */
import { type RawData, WebSocket } from 'ws';
import type { Logger } from '../core/log.ts';
import type { Metrics } from '../core/metrics.ts';
import type { Mode } from '../core/mode.ts';
import { shownUrl } from './jsonrpc.ts';

/** How a watcher learns of new blocks: woken by its node (`push`), or only by its poll interval (`poll`). */
export type WatchPath = 'push' | 'poll';

/** What a family subscribes to on a network's WebSocket endpoints. */
export interface PushSpec {
  /** The network's `ws_urls`. */
  urls: string[];
  /** Subscription requests sent on each connection; each is answered with a subscription id. */
  subscribe: Array<{ method: string; params: unknown[] }>;
  /**
   * What a notification's `result` says is new (a block number, a slot and root); a notification saying what an
   * earlier one already said does not wake the watcher again (several subscriptions announce one block). Default:
   * every notification wakes.
   */
  news?: (result: unknown) => string | null;
  /** Reconnection backoff: first delay and cap. Defaults 500 ms and 30 s. */
  baseMs?: number;
  maxMs?: number;
  /** A ping every this long; a socket that did not answer the previous one is dropped. Default 30 s. */
  heartbeatMs?: number;
}

export interface PushChannelOptions extends PushSpec {
  chain: string;
  mode: Mode;
  log: Logger;
  metrics?: Metrics;
  /** Called on every notification and every (re)subscription. */
  onEvent(): void;
  random?: () => number;
}

interface Answer {
  id?: unknown;
  result?: unknown;
  error?: { message?: string };
  method?: string;
  params?: { subscription?: unknown; result?: unknown };
}

/** Records `path` as the live path of `chain` in `mode` (the other one reads 0). */
export function recordWatchPath(metrics: Metrics | undefined, chain: string, mode: Mode, path: WatchPath): void {
  metrics?.watchPath.set({ chain, mode, path: 'push' }, path === 'push' ? 1 : 0);
  metrics?.watchPath.set({ chain, mode, path: 'poll' }, path === 'poll' ? 1 : 0);
}

export class PushChannel {
  private socket: WebSocket | null = null;
  private live = false;
  private stopped = false;
  private attempt = 0;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private lastNews: string | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** Connections lost (or refused) since start. */
  drops = 0;

  constructor(private readonly opts: PushChannelOptions) {}

  get path(): WatchPath {
    return this.live ? 'push' : 'poll';
  }

  start(): this {
    this.setLive(false);
    this.connect();
    return this;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.socket?.terminate();
    this.socket = null;
    this.setLive(false);
  }

  private connect(): void {
    if (this.stopped) return;
    const url = this.opts.urls[this.next++ % this.opts.urls.length]!;
    const ws = new WebSocket(url, { handshakeTimeout: 10_000 });
    this.socket = ws;
    let acked = 0;
    let answered = true;
    ws.on('open', () => {
      subscribeOn(ws, this.opts.subscribe);
      this.heartbeat = setInterval(() => {
        if (ws.readyState !== WebSocket.OPEN) return;
        if (!answered) return ws.terminate();
        answered = false;
        ws.ping();
      }, this.opts.heartbeatMs ?? 30_000);
      this.heartbeat.unref();
    });
    ws.on('pong', () => {
      answered = true;
    });
    ws.on('message', (data) => {
      const m = parseAnswer(data);
      if (!m) return;
      if (m.method !== undefined && m.params?.subscription !== undefined) return this.notified(m.params.result);
      if (m.id === undefined) return;
      if (m.error || m.result === undefined || m.result === null) {
        this.opts.log.warn(
          { chain: this.opts.chain, mode: this.opts.mode, url: shownUrl(url), error: m.error?.message },
          'node refused a push subscription; polling',
        );
        return ws.close();
      }
      if (++acked === this.opts.subscribe.length) {
        this.attempt = 0;
        this.setLive(true);
        this.opts.log.info({ chain: this.opts.chain, mode: this.opts.mode, url: shownUrl(url) }, 'push channel live');
        this.opts.onEvent();
      }
    });
    ws.on('error', (err) => {
      this.opts.log.debug({ err, chain: this.opts.chain, url: shownUrl(url) }, 'push channel error');
    });
    ws.on('close', () => this.dropped(ws, url));
  }

  private notified(result: unknown): void {
    const news = this.opts.news?.(result) ?? null;
    if (news !== null && news === this.lastNews) return;
    this.lastNews = news;
    this.opts.onEvent();
  }

  private dropped(ws: WebSocket, url: string): void {
    if (ws !== this.socket) return;
    this.socket = null;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    if (this.stopped) return;
    this.drops++;
    if (this.live)
      this.opts.log.warn(
        { chain: this.opts.chain, mode: this.opts.mode, url: shownUrl(url) },
        'push channel dropped; polling until it reconnects',
      );
    this.setLive(false);
    const base = this.opts.baseMs ?? 500;
    const ceiling = Math.min(this.opts.maxMs ?? 30_000, base * 2 ** this.attempt++);
    const delay = ceiling * (0.5 + (this.opts.random ?? Math.random)() / 2);
    this.timer = setTimeout(() => this.connect(), delay);
    this.timer.unref();
  }

  private setLive(live: boolean): void {
    this.live = live;
    recordWatchPath(this.opts.metrics, this.opts.chain, this.opts.mode, this.path);
  }
}

/** Sends each subscription request; request ids are 1, 2, … in order. */
function subscribeOn(ws: WebSocket, subscribe: PushSpec['subscribe']): void {
  for (const [i, s] of subscribe.entries())
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: s.method, params: s.params }));
}

/**
 * Whether a node of `spec` takes its subscriptions now (operator status commands: the watcher runs in another
 * process): `push` with the URL that answered, or `poll` with why not. Each URL is given `timeoutMs`.
 */
export async function probePush(
  spec: PushSpec,
  timeoutMs = 3_000,
): Promise<{ path: WatchPath; url: string | null; error: string | null }> {
  if (spec.urls.length === 0) return { path: 'poll', url: null, error: 'no ws_urls configured' };
  let error = '';
  for (const url of spec.urls) {
    error = await probeOne(url, spec.subscribe, timeoutMs);
    if (error === '') return { path: 'push', url: shownUrl(url), error: null };
  }
  return { path: 'poll', url: null, error };
}

/** A frame from the node as JSON-RPC, or null when it is not JSON (it is then ignored). */
function parseAnswer(data: RawData): Answer | null {
  try {
    return JSON.parse(data.toString('utf8')) as Answer;
  } catch {
    return null;
  }
}

function probeOne(url: string, subscribe: PushSpec['subscribe'], timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs });
    let acked = 0;
    const done = (error: string) => {
      clearTimeout(timer);
      ws.terminate();
      resolve(error);
    };
    const timer = setTimeout(() => done(`${shownUrl(url)}: no answer within ${timeoutMs} ms`), timeoutMs);
    ws.on('open', () => subscribeOn(ws, subscribe));
    ws.on('message', (data) => {
      const m = parseAnswer(data);
      if (m?.id === undefined) return;
      if (m.error || m.result === undefined || m.result === null)
        return done(`${shownUrl(url)}: ${m.error?.message ?? 'subscription refused'}`);
      if (++acked === subscribe.length) done('');
    });
    ws.on('error', (err) => done(`${shownUrl(url)}: ${err.message}`));
    ws.on('close', () => done(`${shownUrl(url)}: connection closed`));
  });
}
