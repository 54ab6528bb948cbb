/**
 * The Disbursement object and the CreateDisbursement body as TypeBox schemas: one definition that validates the API's
 * requests, serialises its answers and webhook data, and documents both in the OpenAPI document.
 */
import { Type, type Static } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import { Amount, DateTime, Enum, Nullable } from '../../core/json-schema.ts';

/** NOTE: the spec's limits for disbursements. */
export const DISBURSEMENT_LIMITS = {
  titleMax: 120,
  itemsMax: 500,
  centsMin: 100,
  centsMax: 500_000,
  labelMax: 120,
  /** GET /disbursements: default and largest page. */
  listDefault: 20,
  listMax: 100,
} as const;

export const DESTINATION_PATTERN = '^0x[0-9a-fA-F]{40}$';
export const DISBURSEMENT_STATUSES = ['pending_approval', 'approved', 'released', 'cancelled'] as const;
export const PAYOUT_STATUSES = ['pending', 'signed', 'broadcast', 'sent', 'failed'] as const;
export type DisbursementStatus = (typeof DISBURSEMENT_STATUSES)[number];
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];

const L = DISBURSEMENT_LIMITS;

export const CreateDisbursementBody = Type.Object(
  {
    title: Type.String({
      minLength: 1,
      maxLength: L.titleMax,
      description: 'Shown to the owners who approve the batch.',
    }),
    items: Type.Array(
      Type.Object(
        {
          destination: Type.String({ pattern: DESTINATION_PATTERN, description: 'Address the payout goes to.' }),
          usd_cents: Type.Integer({
            minimum: L.centsMin,
            maximum: L.centsMax,
            description: 'Value of the payout in US cents, priced in the payout coin at creation.',
          }),
          label: Type.Optional(
            Type.String({ maxLength: L.labelMax, description: 'Your reference for the payee (shown to approvers).' }),
          ),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: L.itemsMax, description: '1 to 500 payouts; `item_no` is the position, from 1.' },
    ),
  },
  { additionalProperties: false },
);
export type CreateDisbursementInput = Static<typeof CreateDisbursementBody>;

export const PayoutSchema = Type.Object(
  {
    id: Type.String({ description: "`po_` + 26 characters; the outgoing transfer's id." }),
    status: Enum(PAYOUT_STATUSES, '`pending` → `signed` → `broadcast` → `sent`, or `failed` (with `error`).'),
    tx_hash: Nullable(
      Type.String({
        description: 'The transaction carrying the payout, once signed (`0xsim…` when simulated in test mode).',
      }),
    ),
    error: Nullable(Type.String({ description: 'Why the payout failed.' })),
    sent_at: Nullable(DateTime('When the payout was confirmed sent.')),
  },
  { additionalProperties: false },
);

export const DisbursementItemSchema = Type.Object(
  {
    item_no: Type.Integer({ minimum: 1 }),
    destination: Type.String(),
    usd_cents: Type.Integer(),
    amount: Amount('Amount of the payout coin, smallest units, priced at creation.'),
    amount_display: Type.String({ description: 'Amount in whole coins, exact decimal.' }),
    label: Nullable(Type.String()),
    payout: Nullable(PayoutSchema),
  },
  { additionalProperties: false },
);

export const DisbursementSchema = Type.Object(
  {
    id: Type.String({ pattern: ID_PATTERNS.dsb }),
    merchant_id: Type.String({ pattern: ID_PATTERNS.mer }),
    token: Type.String({ description: "The payout coin (the merchant's `payout_token` at creation)." }),
    symbol: Type.String(),
    chain: Type.String(),
    title: Type.String(),
    status: Enum(DISBURSEMENT_STATUSES),
    total_usd_cents: Type.Integer({ description: "Sum of the items' `usd_cents`." }),
    item_count: Type.Integer(),
    approvals_required: Type.Integer({ description: "Owner approvals needed (the merchant's quorum at creation)." }),
    approvals: Type.Array(
      Type.Object({ user_id: Type.String(), approved_at: DateTime() }, { additionalProperties: false }),
    ),
    approval_mac: Nullable(
      Type.String({
        description:
          'HMAC-SHA256 over the canonical batch, set at quorum; release refuses a batch that no longer matches it.',
      }),
    ),
    released_at: Nullable(DateTime()),
    released_by: Nullable(Type.String({ description: 'The owner (`usr_…`) who released it.' })),
    cancelled_at: Nullable(DateTime()),
    created_by: Type.String({ description: 'The API key (`key_…`) or dashboard user (`usr_…`) that created it.' }),
    created_at: DateTime(),
    items: Type.Array(DisbursementItemSchema),
    progress: Type.Object(
      {
        sent: Type.Integer(),
        failed: Type.Integer(),
        open: Type.Integer({ description: 'Items not yet sent or failed.' }),
      },
      { additionalProperties: false },
    ),
  },
  {
    $id: 'Disbursement',
    additionalProperties: false,
    description: "A batch of payouts approved by the merchant's owners on the dashboard.",
  },
);
export type Disbursement = Static<typeof DisbursementSchema>;

export const ListDisbursementsQuery = Type.Object(
  {
    status: Type.Optional(Enum(DISBURSEMENT_STATUSES)),
    cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: L.listMax, default: L.listDefault })),
  },
  { additionalProperties: false },
);
