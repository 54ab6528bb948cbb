/**
 * The Subscription object as the API shows it, as a TypeBox schema: the API registers it as an OpenAPI component and
 * serialises its answers with it, the renderer is typed by it (`Static<>`), and `subscription.*` webhook bodies are
 * serialised by the same compiled serializer, so an answer and a webhook cannot disagree on a field.
 */
import fastJson from 'fast-json-stringify';
import { Type, type Static } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import { DateTime, Enum, freeFormKeys, Nullable } from '../../core/json-schema.ts';
import { PAYMENT_STATUSES } from '../payments/index.ts';
import { INTERVALS } from './calendar.ts';
import {
  CANCELLATION_REASONS,
  CHARGE_FAILURE_REASONS,
  CHARGE_STATUSES,
  COLLECTIONS,
  GRANT_STATUSES,
  SUBSCRIPTION_STATUSES,
} from './model.ts';

export const SubscriptionInvoiceSchema = Type.Object(
  {
    payment_id: Type.String({
      pattern: ID_PATTERNS.pay,
      description: 'The payment issued (an ordinary payment: `GET /payments/{id}`).',
    }),
    period: Type.Integer({
      minimum: 1,
      description:
        "Billing period the payment is for; 1 is the first. A period that went unpaid past its payment's 24 hours has several payments.",
    }),
    status: Enum(PAYMENT_STATUSES, "The payment's status."),
    amount_usd_cents: Type.Integer({ description: 'US cents.' }),
    checkout_url: Type.String({ description: 'Hosted checkout page of the payment.' }),
    created_at: DateTime(),
    expires_at: DateTime("End of the payment's 24 hours."),
    paid_at: Nullable(DateTime()),
  },
  { $id: 'SubscriptionInvoice', additionalProperties: false, description: 'One payment issued for a subscription.' },
);

export const SubscriptionGrantSchema = Type.Object(
  {
    status: Enum(
      GRANT_STATUSES,
      '`none` (the payer has not granted yet, or the grant is still being submitted), `active`, `revoked` (by the payer, on chain or on the subscription page), `exhausted` (its end or its total reached). Periods are invoiced by email whenever no grant is `active`.',
    ),
    token: Nullable(Type.String({ description: 'The coin charged (`base:usdc`).' })),
    payer: Nullable(Type.String({ description: "The payer's address." })),
    amount_per_period: Nullable(
      Type.String({ description: "At most this much is charged per period, in the token's smallest unit." }),
    ),
    period_seconds: Nullable(
      Type.Integer({
        description:
          'At most one charge per this many seconds (the shortest time between two due times: a month is at least 28 days).',
      }),
    ),
    expires_at: Nullable(DateTime('Nothing is charged at or after this time.')),
    granted_at: Nullable(DateTime()),
    charges: Type.Integer({ minimum: 0, description: 'Charges that succeeded under this grant.' }),
    next_charge_at: Nullable(DateTime('When the next period will be charged (null when nothing is to charge).')),
  },
  {
    $id: 'SubscriptionGrant',
    additionalProperties: false,
    description: "The payer's permission for Kasse to charge each period (`collection` `charge_automatically`).",
  },
);

export const SubscriptionChargeSchema = Type.Object(
  {
    id: Type.String({ pattern: ID_PATTERNS.chg }),
    period: Type.Integer({ minimum: 1 }),
    attempt: Type.Integer({ minimum: 1, description: "1 at the period's due time; retries count up." }),
    status: Enum(CHARGE_STATUSES, '`pending`, `succeeded`, `failed`, or `cancelled` (not attempted after all).'),
    amount: Type.String({ description: "The token's smallest unit." }),
    token: Type.String(),
    payment_id: Nullable(Type.String({ description: 'The payment it paid (succeeded).' })),
    transaction: Nullable(
      Type.String({ description: 'The charge’s transaction on chain (a `0xsim…` hash when simulated).' }),
    ),
    failure_reason: Nullable(Enum(CHARGE_FAILURE_REASONS, 'Why it failed.')),
    failure_message: Nullable(Type.String()),
    created_at: DateTime(),
    settled_at: Nullable(DateTime()),
  },
  { $id: 'SubscriptionCharge', additionalProperties: false, description: 'One attempt to charge a period.' },
);

export const SubscriptionSchema = Type.Object(
  {
    id: Type.String({ pattern: ID_PATTERNS.sub }),
    merchant_id: Type.String({ pattern: ID_PATTERNS.mer }),
    customer: Type.Object({ email: Type.String(), name: Nullable(Type.String()) }, { additionalProperties: false }),
    title: Type.String(),
    amount_usd_cents: Type.Integer({ description: 'US cents billed each period.' }),
    interval: Enum(INTERVALS),
    interval_count: Type.Integer({ description: 'Periods are `interval_count` × `interval` long.' }),
    grace_days: Type.Integer({
      description:
        'Days after a due time during which an unpaid period may still be paid (a fresh payment is emailed each day); then the subscription is cancelled.',
    }),
    status: Enum(
      SUBSCRIPTION_STATUSES,
      "`active`; `past_due` as soon as a period's payment ended unpaid with grace left (back to `active` when paid); `cancelled` (final).",
    ),
    started_at: DateTime('Due time of the first period.'),
    next_due_at: DateTime(
      'Due time of the next period to invoice (for a cancelled subscription: the one it would have been).',
    ),
    periods_invoiced: Type.Integer({ minimum: 0 }),
    periods_paid: Type.Integer({
      minimum: 0,
      description: 'Periods with a paid payment; a period paid twice counts once.',
    }),
    last_payment_id: Nullable(Type.String({ description: 'The latest payment issued.' })),
    success_url: Nullable(Type.String()),
    locale: Type.Optional(
      Type.String({
        description: "The customer's language of emails, the subscription page and its payments; absent when not set.",
      }),
    ),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    cancelled_at: Nullable(DateTime()),
    cancellation_reason: Nullable(
      Enum(
        CANCELLATION_REASONS,
        'Who ended it: the `merchant` (API or dashboard), the `customer` (the emailed link), or `unpaid` (grace ended).',
      ),
    ),
    created_at: DateTime(),
    collection: Enum(
      COLLECTIONS,
      '`send_invoice`: each period is emailed as a payment to pay by hand. `charge_automatically`: each period is charged under the payer’s grant (given once on the subscription page), and invoiced by email when no grant is active or a charge fails.',
    ),
    grant: Type.Unsafe<Static<typeof SubscriptionGrantSchema>>({ $ref: 'SubscriptionGrant#' }),
    charges: Type.Array(Type.Unsafe<Static<typeof SubscriptionChargeSchema>>({ $ref: 'SubscriptionCharge#' }), {
      description: 'Every charge attempt, oldest first (none for `send_invoice`).',
    }),
    invoices: Type.Array(Type.Unsafe<Static<typeof SubscriptionInvoiceSchema>>({ $ref: 'SubscriptionInvoice#' }), {
      description: 'One per payment issued, oldest first.',
    }),
  },
  {
    $id: 'Subscription',
    additionalProperties: false,
    description:
      'Scheduled invoices for a customer: each period an ordinary payment is created and its checkout link emailed.',
  },
);

/** The Subscription object: what the API answers and what `subscription.*` webhooks carry as `data`. */
export type Subscription = Static<typeof SubscriptionSchema>;
export type SubscriptionInvoice = Static<typeof SubscriptionInvoiceSchema>;
export type SubscriptionGrant = Static<typeof SubscriptionGrantSchema>;
export type SubscriptionCharge = Static<typeof SubscriptionChargeSchema>;

/** The schemas above, in dependency order, for registration as OpenAPI components. */
export const SUBSCRIPTION_SCHEMAS = [
  SubscriptionInvoiceSchema,
  SubscriptionGrantSchema,
  SubscriptionChargeSchema,
  SubscriptionSchema,
] as const;

/** JSON text of a Subscription exactly as the API serialises it. */
export const serializeSubscription: (s: Subscription) => string = fastJson(freeFormKeys(SubscriptionSchema) as never, {
  schema: freeFormKeys({
    SubscriptionInvoice: SubscriptionInvoiceSchema,
    SubscriptionGrant: SubscriptionGrantSchema,
    SubscriptionCharge: SubscriptionChargeSchema,
  }) as never,
}) as (s: Subscription) => string;
