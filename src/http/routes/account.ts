/** GET /account: the merchant behind the key, for checking a key and its mode (served from the key cache). */
import { Type } from 'typebox';
import type { ApiApp, ApiDeps } from '../api.ts';
import { DateTime, Nullable } from '../schemas/common.ts';

const Account = Type.Object(
  {
    id: Type.String({ pattern: '^mer_[0-9A-Z]{26}$' }),
    name: Type.String(),
    mode: Type.Union([Type.Literal('test'), Type.Literal('live')]),
    webhook_url: Nullable(Type.String({ description: 'Account default webhook URL for this mode' })),
    rate_limit_per_minute: Type.Integer(),
    created_at: DateTime(),
  },
  { $id: 'Account', additionalProperties: false },
);

export default async function accountRoutes(app: ApiApp, { mode }: ApiDeps) {
  app.addSchema(Account);
  app.get(
    '/account',
    {
      schema: {
        operationId: 'getAccount',
        summary: 'The account behind the API key',
        description: 'Which merchant and mode a key belongs to, its default webhook URL for this mode and its rate limit. A quick way to check a key.',
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
      };
    },
  );
}
