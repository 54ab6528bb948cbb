/**
 * What a streaming method returns (`kasse.events.stream()`, test API only): an async iterable of the messages of a
 * server-sent event stream, each an event with the exact webhook body it came with. When the connection drops, the
 * iterator reconnects after the delay the server asked for and sends `Last-Event-ID`, so the server replays what was
 * missed; an answer that retrying cannot fix (400, 401, 403, 404) ends the iteration with its error.
 */
import { KasseConnectionError, KasseError, KasseRateLimitError } from './errors.ts';
import { createSseParser } from './sse.ts';
import type { KasseEvent } from './types.ts';

export interface StreamMessage {
  /** The event id (`evt_…`). */
  id: string;
  /** The event type (`payment.paid`, …). */
  type: string;
  /** The event's body exactly as its webhook carries it. */
  data: string;
  /** `data`, parsed. */
  event: KasseEvent;
}

export interface StreamOptions {
  /** Start after this event (what `lastEventId` held when a previous stream ended). */
  lastEventId?: string;
  /** Reconnect when the connection drops (default true). */
  reconnect?: boolean;
  /** Ends the stream. */
  signal?: AbortSignal;
  /** Called each time the stream is connected. */
  onConnect?: () => void;
  /** Called when a connection ended or failed and another will be tried; with the reason when there was one. */
  onDisconnect?: (error: unknown) => void;
}

const DEFAULT_RETRY_MS = 2_000;
const MAX_RETRY_MS = 30_000;

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Errors a new connection may get past: no answer, rate limited, the server failing. */
const transient = (err: unknown) =>
  err instanceof KasseConnectionError ||
  err instanceof KasseRateLimitError ||
  (err instanceof KasseError && (err.status ?? 0) >= 500);

export class EventStream implements AsyncIterable<StreamMessage> {
  /** The id of the last message received: where a new stream would resume. */
  lastEventId: string | undefined;

  constructor(
    private readonly connect: (lastEventId: string | undefined, signal: AbortSignal | undefined) => Promise<Response>,
    private readonly options: StreamOptions = {},
  ) {
    this.lastEventId = options.lastEventId;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamMessage> {
    const { signal, reconnect = true } = this.options;
    let retryMs = DEFAULT_RETRY_MS;
    let failures = 0;
    while (!signal?.aborted) {
      let reason: unknown = null;
      try {
        const res = await this.connect(this.lastEventId, signal);
        failures = 0;
        this.options.onConnect?.();
        const received: StreamMessage[] = [];
        const parser = createSseParser(
          (m) => {
            if (!m.id) return;
            this.lastEventId = m.id;
            received.push({ id: m.id, type: m.event, data: m.data, event: JSON.parse(m.data) as KasseEvent });
          },
          (ms) => (retryMs = Math.min(ms, MAX_RETRY_MS)),
        );
        const decoder = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          parser.push(decoder.decode(chunk, { stream: true }));
          while (received.length > 0) yield received.shift()!;
        }
      } catch (err) {
        if (signal?.aborted) return;
        if (!transient(err) && err instanceof KasseError && err.status !== null) throw err;
        reason =
          err instanceof KasseError
            ? err
            : new KasseConnectionError({
                message: `The event stream broke: ${(err as Error).message}`,
                status: null,
                code: null,
                param: null,
                requestId: null,
              });
        failures++;
      }
      if (!reconnect || signal?.aborted) {
        if (reason) throw reason;
        return;
      }
      this.options.onDisconnect?.(reason);
      await sleep(failures > 0 ? Math.min(retryMs * 2 ** (failures - 1), MAX_RETRY_MS) : retryMs, signal);
    }
  }
}
