/** GET /account: the merchant behind the key, for checking a key and its mode (served from the key cache). */
import { Type } from 'typebox';
import {
  brandLogoUrl,
  checkBrandColor,
  type MerchantRecord,
  TOLERANCE_MAX_BPS,
} from '../../modules/merchants/index.ts';
import { keyActor } from '../actor.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { DateTime, Nullable } from '../schemas/common.ts';
import { TaxProfilePatch, TaxProfileSchema } from '../schemas/invoices.ts';

const Account = Type.Object(
  {
    id: Type.String({ pattern: '^mer_[0-9A-Z]{26}$' }),
    name: Type.String(),
    mode: Type.Union([Type.Literal('test'), Type.Literal('live')]),
    webhook_url: Nullable(Type.String({ description: 'Account default webhook URL for this mode' })),
    rate_limit_per_minute: Type.Integer(),
    created_at: DateTime(),
    tax_profile: Type.Union([TaxProfileSchema, Type.Null()], {
      description: 'Who issues tax invoices in this mode (null until set with PATCH /account).',
    }),
    branding: Type.Optional(
      Type.Object(
        {
          color: Nullable(Type.String({ pattern: '^#[0-9a-f]{6}$', description: 'Brand colour, lower case.' })),
          logo_url: Nullable(
            Type.String({
              description:
                'The logo as the checkout host serves it (PNG, content-addressed, cached for a year); uploaded on the dashboard.',
            }),
          ),
        },
        {
          additionalProperties: false,
          description: 'What payers see of the brand on the checkout, link pages, POS, emails and PDFs.',
        },
      ),
    ),
    underpayment_tolerance_bps: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: TOLERANCE_MAX_BPS,
        description:
          'A payment short by at most floor(pay_amount × bps / 10000) smallest units, with nothing pending, is paid (0: never).',
      }),
    ),
  },
  { $id: 'Account', additionalProperties: false },
);

export default async function accountRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
  /** The Account object of `m` in this mode. */
  const account = (m: MerchantRecord, rateLimit: number) => ({
    id: m.id,
    name: m.name,
    mode,
    webhook_url: m.webhookUrl[mode],
    rate_limit_per_minute: rateLimit,
    created_at: m.createdAt,
    tax_profile: m.taxProfile[mode] ?? null,
    branding: { color: m.brandColor, logo_url: m.logoSha256 ? brandLogoUrl(kasse.urls.checkout, m.logoSha256) : null },
    underpayment_tolerance_bps: m.underpaymentToleranceBps,
  });

  app.addSchema(Account);
  app.get(
    '/account',
    {
      schema: {
        operationId: 'getAccount',
        summary: 'The account behind the API key',
        description:
          'Which merchant and mode a key belongs to, its default webhook URL for this mode and its rate limit. A quick way to check a key.',
        tags: ['Account'],
        response: { 200: Type.Unsafe({ $ref: 'Account#' }) },
      },
    },
    // Synchronous: nothing to wait for, so the answer is written without a promise in between.
    (req) => account(req.auth.merchant, req.auth.rateLimit),
  );

  app.patch(
    '/account',
    {
      schema: {
        operationId: 'updateAccount',
        summary: 'Update the account',
        description:
          'Sets this mode’s `tax_profile`: the fields given are merged over the current profile (or the defaults: SAC 997158, 1800 bps, tax-inclusive, prefix INV) and the result is checked whole (GSTIN with its check character, state code equal to the GSTIN’s, prefix of at most 3 letters or digits); `null` removes it. Lengths are in characters (code points). Concurrent requests that set different fields all keep theirs, and the answer is the account as this request’s change left it. Invoices already issued keep the seller they were issued with. `branding.color` sets the brand colour (`#RRGGBB`; null clears it; `branding: null` clears the colour and the logo): it is refused with 400 when white text on it, or it as text on the page, would fall below the 4.5:1 contrast WCAG AA asks for, and the message names the nearest colour that passes (the same hue, darkened). The logo is uploaded on the dashboard. `underpayment_tolerance_bps` (0 to 500) treats a payment whose confirmed amount is short by at most floor(pay_amount × bps / 10000) smallest units as paid (see the Payment’s `underpaid_within_tolerance`).',
        tags: ['Account'],
        body: Type.Object(
          {
            tax_profile: Type.Optional(Nullable(TaxProfilePatch)),
            branding: Type.Optional(
              Nullable(
                Type.Object(
                  {
                    color: Type.Optional(
                      Nullable(Type.String({ pattern: '^#[0-9A-Fa-f]{6}$', description: 'Brand colour #RRGGBB.' })),
                    ),
                  },
                  { additionalProperties: false },
                ),
              ),
            ),
            underpayment_tolerance_bps: Type.Optional(Type.Integer({ minimum: 0, maximum: TOLERANCE_MAX_BPS })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Unsafe({ $ref: 'Account#' }) },
      },
    },
    async (req) => {
      const { tax_profile, branding, underpayment_tolerance_bps } = req.body;
      const actor = keyActor(req);
      let m = req.auth.merchant;
      // Every check runs before anything is written: the colour here, the tax profile in its own change (the
      // tolerance's bounds are the schema's), so a refused request changes nothing.
      if (branding?.color) checkBrandColor(branding.color);
      if (tax_profile !== undefined) m = await kasse.invoices.setProfile(req.auth, tax_profile, actor);
      if (branding !== undefined || underpayment_tolerance_bps !== undefined)
        m = await kasse.merchantSettings.saveBrandTolerance(
          req.auth.merchantId,
          { branding, underpaymentToleranceBps: underpayment_tolerance_bps },
          actor,
        );
      return account(m, req.auth.rateLimit);
    },
  );
}
