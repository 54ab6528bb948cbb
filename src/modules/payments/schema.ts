/**
 * The payment objects as the API shows them — Payment, with its Attempts and their Deposits — as TypeBox schemas.
 * They are the one definition: the API registers them as OpenAPI components and serialises its answers with them,
 * the store's renderers are typed by them (`Static<>`), and webhook bodies are serialised by the same compiled
 * serializer (`serializePayment`), so an answer and a webhook cannot disagree on a field.
 */
import fastJson from 'fast-json-stringify';
import { Type, type Static } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import { Amount, DateTime, Enum, freeFormKeys, Nullable, Ref } from '../../core/json-schema.ts';
import { ATTEMPT_STATUSES, CAPTURE_METHODS, DEPOSIT_STATUSES, PAYMENT_STATUSES } from './model.ts';

export const RATE_SOURCES = ['coingecko', 'binance', 'peg'] as const;
export const RateSource = Enum(RATE_SOURCES, 'Where the rate came from; `peg` for stablecoins at 1.00.');

export const DepositSchema = Type.Object(
  {
    tx_hash: Type.String({ description: 'Transaction hash (`0xsim…` for simulated deposits).' }),
    token: Type.String({
      description: "Token id of the coin that arrived (differs from the attempt's on a wrong asset).",
    }),
    amount: Amount("Amount in the coin's smallest unit."),
    amount_display: Type.String({ description: 'Amount in whole coins, exact decimal.' }),
    from: Nullable(Type.String({ description: 'Sender address, when known.' })),
    block_number: Nullable(
      Type.String({ description: 'Block of the transfer as a decimal string; null for simulated deposits.' }),
    ),
    status: Enum(DEPOSIT_STATUSES),
    confirmations: Type.Integer({ minimum: 0 }),
    explorer_url: Nullable(Type.String()),
  },
  { $id: 'Deposit', additionalProperties: false, description: "A transfer seen on chain to an attempt's address." },
);
export type Deposit = Static<typeof DepositSchema>;

export const AttemptSchema = Type.Object(
  {
    id: Type.String({ description: '`att_` + 26 characters.' }),
    chain: Type.String({ description: 'Network id.' }),
    token: Type.String({ description: 'Token id `<chain>:<symbol>`.' }),
    symbol: Nullable(Type.String({ description: 'Display symbol (upper case).' })),
    address: Type.String({ description: 'Deposit address issued for this choice.' }),
    pay_amount: Amount('Exact amount to pay, smallest unit, rounded up.'),
    pay_amount_display: Type.String(),
    received_amount: Amount('Sum of non-orphaned deposits of this coin (pending included).'),
    received_amount_display: Type.String(),
    rate: Type.String({ description: 'US dollars per whole coin when the choice was made.' }),
    rate_source: RateSource,
    status: Enum(ATTEMPT_STATUSES),
    overpaid: Type.Boolean(),
    wrong_asset: Type.Boolean(),
    confirmation_tier: Type.Integer({
      minimum: 1,
      description: "Tier of the network's confirmation table applied (1 = smallest amounts).",
    }),
    confirmations_required: Nullable(Type.Union([Type.Integer(), Type.String()])),
    expires_at: DateTime('End of the 10-minute price hold.'),
    uri: Nullable(Type.String({ description: 'Payment URI (EIP-681, Solana Pay).' })),
    deposits: Type.Array(Ref<Deposit>('Deposit')),
  },
  { $id: 'Attempt', additionalProperties: false, description: 'One coin choice of a payment.' },
);
export type Attempt = Static<typeof AttemptSchema>;

export const X402DetailsSchema = Type.Object(
  {
    resource: Nullable(Type.String({ description: 'URL of the resource paid for, as the resource server named it.' })),
    description: Nullable(Type.String({ description: "The resource server's description of what was paid for." })),
    payer: Type.String({ description: 'Address that signed the authorization (refunds go back to it).' }),
    network: Type.String({ description: 'CAIP-2 network id, e.g. `eip155:8453`.' }),
    transaction: Type.String({ description: 'Settling transaction (`0xsim…` when simulated).' }),
    simulated: Type.Boolean({ description: 'Settlement was simulated (a test-mode network on the simulator).' }),
    amount_usd: Type.String({ description: 'Exact amount in US dollars, e.g. `0.001` (see docs/x402.md).' }),
  },
  { $id: 'X402Details', additionalProperties: false, description: 'How an x402 payment was settled.' },
);

export const CaptureSchema = Type.Object(
  {
    amount_usd_cents: Type.Integer({ minimum: 1, description: 'US cents this capture moved to you.' }),
    amount: Amount("The same in the coin's smallest unit."),
    amount_display: Type.String({ description: 'The same in whole coins, exact decimal.' }),
    tx_hash: Type.String({ description: 'The capture transaction (`0xsim…` when simulated).' }),
    captured_at: DateTime('When the capture settled with its confirmations.'),
  },
  { $id: 'Capture', additionalProperties: false, description: 'One settled capture of a hold.' },
);

export const AuthorizationSchema = Type.Object(
  {
    amount_usd_cents: Type.Integer({
      description: 'US cents the payer authorizes: the price. Captures take at most this much in all.',
    }),
    captured_usd_cents: Type.Integer({ minimum: 0, description: 'US cents captured and settled on chain so far.' }),
    pending_usd_cents: Type.Integer({
      minimum: 0,
      description: 'US cents of captures asked for and not settled yet (they count against what remains).',
    }),
    capture_before: DateTime(
      'Captures are possible until then; what is not captured by then goes back to the payer (Kasse voids it).',
    ),
    refund_before: DateTime(
      'Refunds of captured money go back through the escrow until then, afterwards from the hot wallet.',
    ),
    voided: Type.Boolean({
      description:
        'The rest of the hold went back to the payer: voided by you, at `capture_before`, or reclaimed by the payer. Nothing more can be captured.',
    }),
    captures: Type.Array(Ref<Static<typeof CaptureSchema>>('Capture'), {
      description: 'Settled captures, oldest first; a `payment.captured` event reports the newest.',
    }),
  },
  {
    $id: 'Authorization',
    additionalProperties: false,
    description:
      "A manual payment's hold (docs/capture.md): what the payer authorized, what was captured, and until when.",
  },
);

export const PaymentSchema = Type.Object(
  {
    id: Type.String({ pattern: ID_PATTERNS.pay }),
    status: Enum(PAYMENT_STATUSES),
    price_amount: Type.Integer({
      description:
        "US cents. An x402 payment counts the whole cents it carries the merchant's x402 total across, 0 below a cent (docs/x402.md).",
    }),
    price_currency: Type.Literal('USD'),
    order_id: Type.String(),
    description: Nullable(Type.String()),
    checkout_url: Type.String({ description: 'Hosted checkout page.' }),
    expires_at: DateTime('End of the 24-hour payment lifetime.'),
    paid_at: Nullable(DateTime()),
    paid_attempt_id: Nullable(Type.String()),
    success_url: Nullable(Type.String()),
    cancel_url: Nullable(Type.String()),
    locale: Type.Optional(
      Type.String({ description: "The payer's language, as given on creation (or inherited); absent when not set." }),
    ),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    created_at: DateTime(),
    attempts: Type.Array(Ref<Attempt>('Attempt')),
    underpaid_within_tolerance: Type.Optional(
      Type.Boolean({
        description:
          "Present (true) only when the payment was paid although its confirmed amount fell short of the paid attempt's `pay_amount`, by no more than the account's `underpayment_tolerance_bps` allows (an accepted underpayment does not have it).",
      }),
    ),
    tolerance_shortfall: Type.Optional(
      Nullable(
        Amount(
          'With `underpaid_within_tolerance`: how much the confirmed amount fell short, in the paid coin’s smallest unit.',
        ),
      ),
    ),
    source: Type.Optional(
      Type.Literal('x402', { description: 'Present for a payment an x402 client paid through `/x402/settle`.' }),
    ),
    x402: Type.Optional(Ref<Static<typeof X402DetailsSchema>>('X402Details')),
    capture_method: Type.Optional(
      Enum(
        CAPTURE_METHODS,
        'Present on manual payments only (absent: `automatic`): the payer authorizes a hold you capture later.',
      ),
    ),
    authorization: Type.Optional(Ref<Static<typeof AuthorizationSchema>>('Authorization')),
  },
  {
    $id: 'Payment',
    additionalProperties: false,
    description: 'A payment; `GET /payments/{id}` is the source of truth.',
  },
);
/** The Payment object: what the API answers and what `payment.*` webhooks carry as `data`. */
export type Payment = Static<typeof PaymentSchema>;

/** The schemas above, in dependency order, for registration as OpenAPI components. */
export const PAYMENT_SCHEMAS = [
  DepositSchema,
  AttemptSchema,
  X402DetailsSchema,
  CaptureSchema,
  AuthorizationSchema,
  PaymentSchema,
] as const;

/** JSON text of a Payment exactly as the API serialises it (the same schema, the same serializer). */
export const serializePayment: (payment: Payment) => string = fastJson(freeFormKeys(PaymentSchema) as never, {
  schema: freeFormKeys({
    Attempt: AttemptSchema,
    Deposit: DepositSchema,
    X402Details: X402DetailsSchema,
    Capture: CaptureSchema,
    Authorization: AuthorizationSchema,
  }) as never,
}) as (payment: Payment) => string;
