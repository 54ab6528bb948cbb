/**
 * Subscriptions: create, list, read and cancel; on the test API also `POST /test/subscriptions/{id}/advance`. Schemas
 * here feed validation and the OpenAPI document; the Subscription object's schema is the module's.
 */
import { Type } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import {
  COLLECTIONS,
  INTERVALS,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  SUBSCRIPTION_LIMITS as L,
  SUBSCRIPTION_SCHEMAS,
  SUBSCRIPTION_STATUSES,
} from '../../modules/subscriptions/index.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { collectionRoutes } from './collection.ts';
import { keyActor } from '../actor.ts';
import { DateTime, LocaleField } from '../schemas/common.ts';

const Enum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );

export const CreateSubscriptionBody = Type.Object(
  {
    customer_email: Type.String({
      format: 'email',
      maxLength: L.emailMax,
      description: "Where each period's invoice is emailed.",
    }),
    customer_name: Type.Optional(Type.String({ maxLength: L.nameMax, description: 'Shown in the emails.' })),
    title: Type.String({
      minLength: 1,
      maxLength: L.titleMax,
      description: "What is billed; shown in the emails, on the checkout and as each payment's description.",
    }),
    amount_usd_cents: Type.Integer({
      minimum: L.centsMin,
      maximum: L.centsMax,
      description: 'US cents billed each period.',
    }),
    interval: Enum(INTERVALS, 'Calendar unit of a period (UTC): `week`, `month` (month ends clamped), `year`.'),
    interval_count: Type.Optional(
      Type.Integer({ minimum: 1, maximum: L.intervalCountMax, description: 'Intervals per period (default 1).' }),
    ),
    grace_days: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: L.graceDaysMax,
        description: 'Days after a due time an unpaid period may still be paid (default 0).',
      }),
    ),
    start_at: Type.Optional(
      DateTime(
        'Due time of the first period (default: now, invoiced at once); not in the past, at most 5 years ahead.',
      ),
    ),
    success_url: Type.Optional(
      Type.String({
        format: 'uri',
        maxLength: L.urlMax,
        description: "Where the payer's browser goes after paying (https on the live API).",
      }),
    ),
    locale: Type.Optional(LocaleField),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Your data, up to 4 kB as JSON; returned as sent.' }),
    ),
    collection: Type.Optional(
      Enum(
        COLLECTIONS,
        "`send_invoice` (default): each period's payment is emailed to pay by hand. `charge_automatically`: the customer's subscription page asks the payer to grant recurring charges once with their wallet (USDC; Kasse pays the network fees); from then on each period is charged when due, and emailed as an invoice only when no grant is active or a charge fails.",
      ),
    ),
  },
  { additionalProperties: false },
);

export const SimulateSubscriptionBody = Type.Object(
  {
    outcome: Enum(
      ['grant', 'revoke', 'insufficient_funds'] as const,
      '`grant`: the payer grants recurring charges (simulated; the due, unpaid period is charged at once) — on a simulated grant already in force, its wallet is funded again. `revoke`: the payer revokes the grant in force. `insufficient_funds`: the simulated wallet is emptied, so charges fail until `grant` funds it again.',
    ),
  },
  { additionalProperties: false },
);

export const ListSubscriptionsQuery = Type.Object(
  {
    status: Type.Optional(Enum(SUBSCRIPTION_STATUSES)),
    customer_email: Type.Optional(Type.String({ maxLength: L.emailMax, description: 'Exact address, any case.' })),
    cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT })),
  },
  { additionalProperties: false },
);

export const SubscriptionIdParam = Type.Object({
  id: Type.String({ pattern: ID_PATTERNS.sub, description: 'Subscription id' }),
});

const SubscriptionRef = Type.Unsafe({ $ref: 'Subscription#' });
const tags = ['Subscriptions'];

export default async function subscriptionRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
  for (const s of SUBSCRIPTION_SCHEMAS) app.addSchema(s);
  const subscriptions = collectionRoutes(
    app,
    {
      noun: 'subscription',
      ref: SubscriptionRef,
      idParam: SubscriptionIdParam,
      query: ListSubscriptionsQuery,
      tags,
    },
    kasse.subscriptions,
  );

  subscriptions.create(
    {
      description:
        "Schedules invoices for a customer: at `start_at` (default now) and then every `interval_count` × `interval` (UTC calendar; 31 January + 1 month is the end of February, then the 31st again), an ordinary payment is created (`order_id` `<sub id>-<period>`, `metadata.subscription_id`, `metadata.period`) and its checkout link emailed to `customer_email`. When a period's payment ends unpaid (expires, or is cancelled), the subscription becomes `past_due` at once and a fresh payment is emailed — again each day until `grace_days` have passed since the due time, then the subscription is cancelled (with `grace_days` 0 it is cancelled when the payment ends). Refunding a paid period's payment changes neither the period's count nor the status: cancel the subscription to stop billing. Starting now, the first period is invoiced in the same call. Send `Idempotency-Key` to make retries safe: the same key and body answer 200 with the first subscription, a different body 409 `idempotency_conflict`.",
      errors: ['idempotency_conflict'],
      body: CreateSubscriptionBody,
    },
    (req, key, actor) => kasse.subscriptions.create(req.auth, req.body, key, actor),
  );

  subscriptions.list(
    'Newest first, filtered by `status` and `customer_email`. `limit` defaults to 20 (at most 100); pass `next_cursor` as `cursor` for the next page.',
  );

  subscriptions.get('With every payment issued for it (`invoices`).');

  subscriptions.transition('cancel', {
    description:
      'Ends the subscription now (`cancelled`, final; `cancellation_reason` `merchant`): no more invoices; its payments still waiting are cancelled (payments with money on the way finish); the customer is emailed. 422 `invalid_state` when it is already cancelled.',
  });

  if (mode !== 'test') return;
  app.post(
    '/test/subscriptions/:id/advance',
    {
      schema: {
        operationId: 'advanceSubscription',
        summary: 'Advance a subscription to its next due time (test API only)',
        description:
          "Moves this test subscription's own clock to its next due time and runs the scheduler through everything due on the way, in order: invoices whose 24 hours end expire (real `payment.expired`), charges and their retries are made (simulated grants), unpaid periods go `past_due` with a fresh payment each day, grace ends (cancelled), and the next period is invoiced (and charged, under an active grant). The emails and webhooks are the real ones. Afterwards the subscription's times (`next_due_at`, due times, `cancelled_at`) run ahead of the wall clock by the time advanced; its payments keep wall-clock times. 422 `invalid_state` for a cancelled subscription.",
        tags: ['Test mode'],
        errors: ['invalid_state'],
        params: SubscriptionIdParam,
        response: { 200: SubscriptionRef },
      },
    },
    async (req) => kasse.subscriptions.scheduler.advance(req.auth, req.params.id, keyActor(req)),
  );

  app.post(
    '/test/subscriptions/:id/simulate',
    {
      schema: {
        operationId: 'simulateSubscription',
        summary: "Simulate the payer's grant of a charged subscription (test API only)",
        description:
          "For a test subscription with `collection` `charge_automatically`: simulates what the payer does with their wallet — grant recurring charges, revoke them, or run short of funds — with no chain involved. Everything that follows is the real path: charges of due periods settle the period's payment (`payment.paid`, the ledger, `subscription.paid` with the charge's `0xsim…` transaction), failures send `subscription.charge_failed` and email the customer the payment to pay by hand, retries and `past_due` follow as the test clock is advanced (`POST /test/subscriptions/{id}/advance`). 422 `invalid_state` for a cancelled subscription, one paid by invoice, `revoke` or `insufficient_funds` with no grant in force.",
        tags: ['Test mode'],
        errors: ['invalid_state'],
        params: SubscriptionIdParam,
        body: SimulateSubscriptionBody,
        response: { 200: SubscriptionRef },
      },
    },
    async (req) => kasse.subscriptions.grants.simulate(req.auth, req.params.id, req.body.outcome, keyActor(req)),
  );
}
