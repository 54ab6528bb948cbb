/**
 * Schemas of the payments resources: the payment objects (modules/payments/schema.ts), Currency, Estimate and
 * Balance as OpenAPI components, and the request bodies and queries of their operations.
 */
import { Type, type TSchema } from 'typebox';
import type { ApiApp } from '../api.ts';
import { IDEMPOTENCY_KEY_MAX } from '../../modules/idempotency/index.ts';
import {
  CAPTURE_METHODS,
  HOLD_DEFAULT_DAYS,
  HOLD_MAX_DAYS,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  METADATA_MAX_BYTES,
  type Payment,
  PAYMENT_SCHEMAS,
  PAYMENT_STATUSES,
  RateSource,
  SIMULATE_OUTCOMES,
} from '../../modules/payments/index.ts';
import { RefundSchema } from '../../modules/refunds/index.ts';
import { Amount, DateTime, Enum, Nullable, Ref } from '../../core/json-schema.ts';
import { LocaleField } from './common.ts';

const Url = (description: string) => Type.String({ format: 'uri', maxLength: 2048, description });

export const CurrencySchema = Type.Object(
  {
    token: Type.String(),
    chain: Type.String(),
    symbol: Type.String(),
    name: Type.String(),
    decimals: Type.Integer(),
    min_amount: Amount('Smallest accepted amount, smallest unit.'),
    min_amount_display: Type.String(),
    rate: Nullable(Type.String({ description: 'US dollars per whole coin now; null without a fresh price.' })),
    rate_source: Nullable(RateSource),
    paused: Type.Boolean({ description: 'No new coin choices on this network now (503 chain_paused).' }),
    gasless: Type.Boolean({ description: 'Payable by signature alone (USDC).' }),
    holdable: Type.Boolean({
      description:
        'Can be held: a payment with `capture_method: manual` may be paid in it (the payer authorizes, you capture later; docs/capture.md).',
    }),
    network_status: Enum(
      ['running', 'simulated', 'paused'],
      'Where the network stands: `running` (watched on chain), `simulated` (test mode without a chain connection: payments are finished with the simulator), `paused` (no new coin choices).',
    ),
    network_status_reason: Nullable(
      Type.String({
        description: 'Why the network is simulated or paused (what the operator is missing); null when running.',
      }),
    ),
  },
  { $id: 'Currency', additionalProperties: false, description: 'A coin on a network.' },
);

export const EstimateSchema = Type.Object(
  {
    token: Type.String(),
    price_amount: Type.Integer(),
    price_currency: Type.Literal('USD'),
    pay_amount: Amount(),
    pay_amount_display: Type.String(),
    rate: Type.String(),
    rate_source: RateSource,
    expires_at: DateTime('How long a coin choice made now would hold this amount.'),
  },
  { $id: 'Estimate', additionalProperties: false, description: 'What a price would cost in a coin now.' },
);

export const BalanceSchema = Type.Object(
  {
    available_usd_cents: Type.Integer({
      description: 'Credited to the merchant: paid payments less fees, less reversals.',
    }),
    pending_usd_cents: Type.Integer({
      description: 'Price of payments with money on the way (detected, confirming); not yet credited.',
    }),
    custody: Type.Array(
      Type.Object(
        {
          token: Type.String(),
          chain: Type.String(),
          symbol: Type.String(),
          amount: Amount(),
          amount_display: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: "Coins held for the merchant's credited payments, per token." },
    ),
  },
  { $id: 'Balance', additionalProperties: false, description: "The merchant's balance in this mode." },
);

const COMPONENTS: TSchema[] = [...PAYMENT_SCHEMAS, RefundSchema, CurrencySchema, EstimateSchema, BalanceSchema];

/** Adds the payments components to a route module's context (each module is its own encapsulated context). */
export function addPaymentSchemas(app: ApiApp): void {
  for (const s of COMPONENTS) if (!app.getSchema((s as { $id: string }).$id)) app.addSchema(s);
}

export const PaymentRef = Ref<Payment>('Payment');

export const CreatePaymentBody = Type.Object(
  {
    price_amount: Type.Integer({ minimum: 1, maximum: 100_000_000, description: 'US cents.' }),
    price_currency: Type.Literal('USD'),
    order_id: Type.String({ minLength: 1, maxLength: 128, description: 'Your reference; not unique.' }),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    chain: Type.Optional(Type.String({ description: 'Network id; needs `token`.' })),
    token: Type.Optional(
      Type.String({
        description: 'Token id; with it the coin choice is issued in the same call (its network is implied).',
      }),
    ),
    success_url: Type.Optional(
      Url('Browser redirect after paying. https:// on the live API; http:// also on the test API.'),
    ),
    cancel_url: Type.Optional(Url("Target of the checkout's back button after cancellation.")),
    webhook_url: Type.Optional(Url('Overrides the account default webhook URL for this payment.')),
    locale: Type.Optional(LocaleField),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: `Any JSON object up to ${METADATA_MAX_BYTES} bytes.` }),
    ),
    capture_method: Type.Optional(
      Enum(
        CAPTURE_METHODS,
        '`automatic` (default): the money is yours once it arrives. `manual`: the payer authorizes a hold of the price in a coin that can be held (`holdable` in GET /currencies), and you capture it later — in parts, until `capture_before` — or void it (docs/capture.md).',
      ),
    ),
    capture_before: Type.Optional(
      Type.String({
        format: 'date-time',
        description: `Manual payments only: until when captures are possible; later than the payment's 24 hours and at most ${HOLD_MAX_DAYS} days ahead. Default: ${HOLD_DEFAULT_DAYS} days after creation.`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: IDEMPOTENCY_KEY_MAX,
      description: `Up to ${IDEMPOTENCY_KEY_MAX} characters. Same key and body: 200 with the first payment; different body: 409.`,
    }),
  ),
});

/**
 * The `headers` and `response` of a create that takes an `Idempotency-Key` (`headers`): 201 with what it created, 200
 * with what an earlier request with the same key and body created (`reply.code(result.status)`).
 */
export const IdempotentCreate = (object: TSchema, noun: string) => ({
  headers: IdempotencyHeaders,
  response: {
    201: { ...object, description: `The ${noun} was created.` },
    200: {
      ...object,
      description: `A replay: the ${noun} an earlier request with the same Idempotency-Key and body created.`,
    },
  },
});

export const ListPaymentsQuery = Type.Object(
  {
    order_id: Type.Optional(Type.String()),
    status: Type.Optional(Enum(PAYMENT_STATUSES)),
    source: Type.Optional(Type.Literal('x402', { description: 'Only payments x402 clients paid (`/x402/settle`).' })),
    cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT })),
  },
  { additionalProperties: false },
);

export const CreateAttemptBody = Type.Object(
  { chain: Type.String(), token: Type.String() },
  { additionalProperties: false },
);

export const RefundBody = Type.Object(
  {
    destination: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description:
          'Address on the attempt\'s network. Required, except for a payment an x402 client made (`source: "x402"`): there it defaults to the paying address (`x402.payer`).',
      }),
    ),
    note: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);

export const EstimateQuery = Type.Object(
  {
    price_amount: Type.Integer({ minimum: 1, maximum: 100_000_000 }),
    price_currency: Type.Optional(Type.Literal('USD', { default: 'USD' })),
    token: Type.String(),
  },
  { additionalProperties: false },
);

export const CapturePaymentBody = Type.Optional(
  Type.Object(
    {
      amount_usd_cents: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: 100_000_000,
          description: 'US cents to capture; default: all that remains of the authorization.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

export const SimulateBody = Type.Object(
  {
    outcome: Enum(SIMULATE_OUTCOMES),
    amount: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,77}$',
        description:
          'For `paid` and `underpaid`: the amount that arrives, smallest unit (default: the pay amount, or half of it), to try the account’s `underpayment_tolerance_bps`.',
      }),
    ),
    from: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description:
          "For every outcome but `expired`: the payer's address on the attempt's network, recorded as the deposit's sender (`from`), as a chain watcher records it; refunds can then go back to it. Default: none (`from` null, as when the sender cannot be told).",
      }),
    ),
  },
  { additionalProperties: false },
);
