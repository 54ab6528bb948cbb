/** GET /account: the merchant behind the key, for checking a key and its mode (served from the key cache). */
import { Type } from 'typebox';
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
  },
  { $id: 'Account', additionalProperties: false },
);

export default async function accountRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
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
    (req) => {
      const m = req.auth.merchant;
      return {
        id: m.id,
        name: m.name,
        mode,
        webhook_url: m.webhookUrl[mode],
        rate_limit_per_minute: req.auth.rateLimit,
        created_at: m.createdAt,
        tax_profile: m.taxProfile[mode] ?? null,
      };
    },
  );

  app.patch(
    '/account',
    {
      schema: {
        operationId: 'updateAccount',
        summary: 'Update the account',
        description:
          'Sets this mode’s `tax_profile`: the fields given are merged over the current profile (or the defaults: SAC 997158, 1800 bps, tax-inclusive, prefix INV) and the result is checked whole (GSTIN with its check character, state code equal to the GSTIN’s, prefix of at most 3 letters or digits); `null` removes it. Lengths are in characters (code points). Concurrent requests that set different fields all keep theirs, and the answer is the account as this request’s change left it. Invoices already issued keep the seller they were issued with.',
        tags: ['Account'],
        body: Type.Object({ tax_profile: Type.Optional(Nullable(TaxProfilePatch)) }, { additionalProperties: false }),
        response: { 200: Type.Unsafe({ $ref: 'Account#' }) },
      },
    },
    async (req) => {
      const m =
        req.body.tax_profile === undefined
          ? req.auth.merchant
          : await kasse.invoices.setProfile(req.auth.merchantId, mode, req.body.tax_profile, keyActor(req));
      return {
        id: m.id,
        name: m.name,
        mode,
        webhook_url: m.webhookUrl[mode],
        rate_limit_per_minute: req.auth.rateLimit,
        created_at: m.createdAt,
        tax_profile: m.taxProfile[mode] ?? null,
      };
    },
  );
}
