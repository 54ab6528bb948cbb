/**
 * The event log: `GET /events`, `GET /events/{id}` (with its deliveries and their attempts) and
 * `POST /events/{id}/redeliver`. Events of the other mode are not found.
 */
import { Type } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { keyActor } from '../actor.ts';
import { DateTime, EventIdParam, Nullable } from '../schemas/common.ts';

const Event = Type.Object(
  {
    id: Type.String({ pattern: ID_PATTERNS.evt, description: 'Event id; the key to deduplicate deliveries on.' }),
    type: Type.String({ description: 'Event type, e.g. `payment.paid`.' }),
    created_at: DateTime('When the event happened.'),
    data: Type.Unknown({
      description: 'The object the event is about as it was at that moment (the full Payment for `payment.*`).',
    }),
  },
  {
    $id: 'Event',
    additionalProperties: false,
    description: 'An event; exactly the body of the webhook that announces it.',
  },
);

const Attempt = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1, description: 'Number of the attempt within its delivery, from 1.' }),
    started_at: DateTime(),
    duration_ms: Type.Integer({ minimum: 0 }),
    outcome: Type.Union(
      [
        Type.Literal('delivered'),
        Type.Literal('http_error'),
        Type.Literal('timeout'),
        Type.Literal('network_error'),
        Type.Literal('refused'),
      ],
      {
        description:
          '`delivered`: a 2xx answer. `refused`: a live-mode URL resolving to a private or reserved address.',
      },
    ),
    http_status: Nullable(Type.Integer({ description: 'Status your endpoint answered with' })),
    error: Nullable(Type.String()),
    response_body: Nullable(Type.String({ description: 'The first 1 KiB of your endpoint’s answer' })),
  },
  { $id: 'WebhookAttempt', additionalProperties: false, description: 'One HTTP request made for a delivery.' },
);

const Delivery = Type.Object(
  {
    id: Type.String({ pattern: '^dlv_[0-9A-Z]{26}$' }),
    url: Type.String({ description: 'Where this delivery is sent.' }),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
      description: '`failed` after 7 unsuccessful attempts (retries after 1 min, 5 min, 30 min, 2 h, 6 h, 12 h).',
    }),
    attempt_count: Type.Integer({ minimum: 0 }),
    next_attempt_at: Nullable(DateTime('When the next attempt is due; null once delivered or failed.')),
    delivered_at: Nullable(DateTime()),
    created_at: DateTime(),
    attempts: Type.Array(Type.Unsafe({ $ref: 'WebhookAttempt#' }), { description: 'Oldest first.' }),
  },
  {
    $id: 'WebhookDelivery',
    additionalProperties: false,
    description: 'The sending of one event to one URL, with its retries.',
  },
);

const EventWithDeliveries = Type.Object(
  {
    id: Event.properties.id,
    type: Event.properties.type,
    created_at: Event.properties.created_at,
    data: Event.properties.data,
    deliveries: Type.Array(Type.Unsafe({ $ref: 'WebhookDelivery#' }), {
      description:
        'Every delivery of the event, oldest first: the original and any redeliveries. Empty when no webhook URL was set.',
    }),
  },
  {
    $id: 'EventWithDeliveries',
    additionalProperties: false,
    description: 'An event with the record of its deliveries.',
  },
);

const ListQuery = Type.Object(
  {
    type: Type.Optional(
      Type.String({ pattern: '^[a-z_]+\\.[a-z_]+$', maxLength: 64, description: 'Only events of this type.' }),
    ),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: '`next_cursor` from the previous page.' })),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1 to 100 (default 20).' }),
    ),
  },
  { additionalProperties: false },
);

const EventList = Type.Object(
  {
    data: Type.Array(Type.Unsafe({ $ref: 'Event#' })),
    next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
  },
  { additionalProperties: false },
);

export default async function eventRoutes(app: ApiApp, { kasse }: ApiDeps) {
  app.addSchema(Event);
  app.addSchema(Attempt);
  app.addSchema(Delivery);
  app.addSchema(EventWithDeliveries);

  app.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        summary: 'List events',
        description:
          'Events of this mode, newest first, as they were sent (or would have been sent) to your webhook URL.',
        tags: ['Events'],
        querystring: ListQuery,
        response: { 200: EventList },
      },
    },
    async (req) => kasse.webhooks.list(req.auth, req.query),
  );

  app.get(
    '/events/:id',
    {
      schema: {
        operationId: 'getEvent',
        summary: 'Retrieve an event',
        description:
          'The event and every delivery of it with each attempt: when, what your endpoint answered, how long it took.',
        tags: ['Events'],
        params: EventIdParam,
        response: { 200: Type.Unsafe({ $ref: 'EventWithDeliveries#' }) },
      },
    },
    async (req) => kasse.webhooks.get(req.auth, req.params.id),
  );

  app.post(
    '/events/:id/redeliver',
    {
      schema: {
        operationId: 'redeliverEvent',
        summary: 'Redeliver an event',
        description:
          'Queues a new delivery of the event to its current destination (the payment’s `webhook_url`, else the account default), ' +
          'due at once and retried on the usual schedule. Answers 202 with the queued delivery; follow it with `GET /events/{id}`. ' +
          '422 `invalid_state` when no webhook URL is set.',
        tags: ['Events'],
        params: EventIdParam,
        body: Type.Object({}, { additionalProperties: false, description: 'No parameters: send no body or `{}`.' }),
        errors: ['invalid_state'],
        response: { 202: Type.Unsafe({ $ref: 'WebhookDelivery#' }) },
      },
      // No body at all is the usual call; it is validated as `{}`.
      preValidation: async (req) => {
        req.body ??= {};
      },
    },
    async (req, reply) => reply.code(202).send(await kasse.webhooks.redeliver(req.auth, req.params.id, keyActor(req))),
  );
}
