/**
 * GET /test/events/stream: the merchant's test events as server-sent events, as they are committed (test API only;
 * 404 on the live API). Each message is `id: <event id>`, `event: <type>`, `data: <the webhook body>`. A client
 * that reconnects with `Last-Event-ID` gets the events after that one first. This is what `kasse listen` reads, so a
 * developer receives test webhooks on a machine Kasse cannot reach.
 */
import { PassThrough } from 'node:stream';
import { Type } from 'typebox';
import { ApiError } from '../../core/errors.ts';
import { ID_PATTERNS } from '../../core/ids.ts';
import {
  type StreamedEvent,
  StreamLimitError,
  type Subscription,
  UnknownEventError,
} from '../../modules/webhooks/index.ts';
import type { ApiApp, ApiDeps } from '../api.ts';

/** A keep-alive comment this often, so proxies and clients can tell an idle stream from a dead one. */
const KEEPALIVE_MS = 15_000;
/** A client this far behind is disconnected; it resumes from its last id. */
const MAX_BUFFERED_BYTES = 1 << 20;
/** Reconnection delay suggested to clients. */
const RETRY_MS = 2_000;

const EVENT_TYPE = '[a-z_]+\\.[a-z_]+';

const StreamQuery = Type.Object(
  {
    types: Type.Optional(
      Type.String({
        pattern: `^${EVENT_TYPE}(,${EVENT_TYPE})*$`,
        maxLength: 1000,
        description: 'Only these event types, comma-separated (`payment.paid,payment.expired`).',
      }),
    ),
  },
  { additionalProperties: false },
);

const StreamHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({
      pattern: ID_PATTERNS.evt,
      description: 'Resume: first send the events published after this one (the `id` of the last message received).',
    }),
  ),
});

const EXAMPLE = `retry: ${RETRY_MS}

id: evt_01JQ3TB6Y2M0R8WQ4C1ZK5N7HD
event: payment.paid
data: {"id":"evt_01JQ3TB6Y2M0R8WQ4C1ZK5N7HD","type":"payment.paid","created_at":"2026-03-01T12:04:12.000Z","data":{"id":"pay_…","status":"paid","…":"the full Payment"}}

: keep-alive
`;

const frame = (e: StreamedEvent) =>
  `id: ${e.id}\nevent: ${e.type}\n${e.body
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}\n`)
    .join('')}\n`;

export default async function eventStreamRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
  if (mode !== 'test') return;
  const hub = kasse.eventStream;
  // Open streams would keep the server from closing.
  app.addHook('preClose', (done) => {
    hub.closeAll();
    done();
  });

  app.get(
    '/test/events/stream',
    {
      schema: {
        operationId: 'streamEvents',
        summary: 'Stream events (test API only)',
        description:
          'Server-sent events: your test events as they happen, each message carrying the event id (`id:`), its type (`event:`) and, as `data:`, exactly the body its webhook has. ' +
          'A stream starts with the events committed after it opened; reconnect with `Last-Event-ID` to receive first the events published after that one (delivery is at least once: deduplicate on the id). ' +
          `A comment line is sent every ${KEEPALIVE_MS / 1000} seconds. At most 10 streams per account are open at once (429). \`kasse listen\` forwards this stream to a local URL.`,
        tags: ['Test mode'],
        querystring: StreamQuery,
        headers: StreamHeaders,
        produces: ['text/event-stream'],
        response: {
          200: {
            description: 'A stream of server-sent events that stays open.',
            content: { 'text/event-stream': { schema: { type: 'string' }, example: EXAMPLE } },
          },
        },
      },
    },
    async (req, reply) => {
      const stream = new PassThrough();
      let keepalive: NodeJS.Timeout | undefined;
      let subscription: Subscription | undefined;
      const end = () => {
        clearInterval(keepalive);
        subscription?.close();
        if (!stream.writableEnded) stream.end();
      };
      try {
        subscription = await hub.open(
          req.auth.merchantId,
          { types: req.query.types?.split(','), after: req.headers['last-event-id'] as string | undefined },
          {
            send: (e) => stream.write(frame(e)) || stream.writableLength < MAX_BUFFERED_BYTES,
            drained: () =>
              new Promise<void>((resolve) => {
                if (!stream.writableNeedDrain || stream.destroyed) return resolve();
                stream.once('drain', resolve).once('close', resolve);
              }),
            close: end,
          },
        );
      } catch (err) {
        if (err instanceof StreamLimitError)
          throw new ApiError('rate_limited', err.message, null, { 'Retry-After': String(RETRY_MS / 1000) });
        if (err instanceof UnknownEventError) throw new ApiError('invalid_request', err.message, 'Last-Event-ID');
        throw err;
      }
      reply.raw.on('close', end);
      keepalive = setInterval(() => stream.write(': keep-alive\n\n'), KEEPALIVE_MS).unref();
      // Sent at once, so the client knows it is connected before any event.
      stream.write(`retry: ${RETRY_MS}\n\n`);
      // The replay (after Last-Event-ID) runs once the stream is being sent, so it can wait for the client.
      setImmediate(() => void subscription!.start());
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('x-accel-buffering', 'no')
        .send(stream as never);
    },
  );
}
