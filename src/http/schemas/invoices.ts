/** Schemas of the tax profile and the TaxInvoice (spec: TaxInvoice, CreateInvoice). */
import { Type } from 'typebox';
import { DateTime, Nullable } from './common.ts';

const StateCode = Type.String({
  pattern: '^[0-9]{2}$',
  description: 'GST state code, two digits (27 Maharashtra, 29 Karnataka, …; 96 outside India).',
});

export const TaxProfileSchema = Type.Object(
  {
    seller_name: Type.String({ minLength: 1, maxLength: 200, description: 'Trade name shown on invoices.' }),
    legal_name: Nullable(Type.String({ maxLength: 200, description: 'Legal name as registered, when different.' })),
    tax_id: Type.String({ description: 'GSTIN (15 characters, checked with its check character).' }),
    address: Type.String({ minLength: 1, maxLength: 500, description: 'Principal place of business.' }),
    state_code: { ...StateCode, description: 'GST state code of the seller; must match the GSTIN.' },
    invoice_prefix: Type.String({
      pattern: '^[A-Za-z0-9]{1,3}$',
      description: 'Up to 3 letters or digits; numbers are `<prefix>/<yy-yy>/<serial>`, at most 16 characters.',
    }),
    sac: Nullable(Type.String({ pattern: '^[0-9]{4,8}$', description: 'Services Accounting Code (default 997158).' })),
    tax_rate_bps: Type.Integer({
      minimum: 0,
      maximum: 10000,
      description: 'GST rate in basis points (default 1800 = 18 %).',
    }),
    tax_inclusive: Type.Boolean({ description: 'Whether payment prices include GST (default true).' }),
  },
  { additionalProperties: false, description: 'Who issues tax invoices in this mode, and on what terms.' },
);

/** PATCH /account's `tax_profile`: any subset, merged over the current profile (or the defaults). */
export const TaxProfilePatch = Type.Partial(TaxProfileSchema, {
  additionalProperties: false,
  description: 'Fields to set; the result must name the seller, GSTIN, address and state.',
});

export const CreateInvoiceBody = Type.Object(
  {
    customer_name: Type.Optional(Type.String({ maxLength: 200 })),
    customer_tax_id: Type.Optional(
      Type.String({ maxLength: 40, description: 'The buyer’s GSTIN (checked with its check character).' }),
    ),
    customer_state_code: Type.Optional({
      ...StateCode,
      description: 'The buyer’s state: the place of supply. Required for `inter` unless the GSTIN gives it.',
    }),
    place_of_supply: Type.Union([Type.Literal('intra'), Type.Literal('inter')], {
      description: '`intra`: CGST + SGST in the seller’s state; `inter`: IGST.',
    }),
    fx_rate: Type.Optional(
      Type.String({
        pattern: '^\\d{1,5}(\\.\\d{1,6})?$',
        description: 'Rupees per US dollar; without it the FX provider’s reference rate of the paid day is used.',
      }),
    ),
  },
  { additionalProperties: false },
);

const Rupees = (description: string) =>
  Type.String({ pattern: '^\\d+\\.\\d{2}$', description: `Rupees with 2 decimals. ${description}` });

export const TaxInvoiceSchema = Type.Object(
  {
    id: Type.String({ pattern: '^txi_[0-9A-Z]{26}$' }),
    payment_id: Type.String(),
    number: Type.String({ description: 'Consecutive per financial year (April–March, IST), at most 16 characters.' }),
    issued_at: DateTime(),
    customer: Type.Object(
      { name: Nullable(Type.String()), tax_id: Nullable(Type.String()), state_code: Nullable(Type.String()) },
      { additionalProperties: false },
    ),
    place_of_supply: Type.Union([Type.Literal('intra'), Type.Literal('inter')]),
    currency: Type.String({ description: 'Always `INR`.' }),
    fx: Type.Object(
      {
        rate: Type.String({ description: 'Rupees per US dollar.' }),
        source: Type.String({ description: '`manual` (the request’s `fx_rate`) or the FX provider (`frankfurter`).' }),
        date: Type.String({
          description:
            'Day of the rate (YYYY-MM-DD): the paid day in IST, or the provider’s last fixing on or before it.',
        }),
      },
      { additionalProperties: false },
    ),
    usd_cents: Type.Integer({ description: 'The payment’s price.' }),
    total: Rupees('usd_cents × fx.rate, half up (tax-inclusive).'),
    taxable: Rupees('total ÷ (1 + rate), half up (tax-inclusive).'),
    cgst: Rupees('intra: half the tax, rounded down.'),
    sgst: Rupees('intra: the rest of the tax.'),
    igst: Rupees('inter: the tax.'),
    tax_rate_bps: Type.Integer(),
    tax_inclusive: Type.Boolean(),
    sac: Nullable(Type.String()),
    description: Nullable(Type.String({ description: 'The payment’s description.' })),
    seller: Type.Object(
      {
        name: Type.String(),
        legal_name: Nullable(Type.String()),
        tax_id: Nullable(Type.String()),
        address: Nullable(Type.String()),
        state_code: Nullable(Type.String()),
      },
      { additionalProperties: false, description: 'The tax profile as it was at issue.' },
    ),
    created_at: DateTime(),
  },
  {
    $id: 'TaxInvoice',
    additionalProperties: false,
    description: 'A GST tax invoice for a paid payment; figures: docs/invoices.md.',
  },
);
