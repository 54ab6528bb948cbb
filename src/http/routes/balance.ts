/** GET /balance: what the merchant is owed, from the ledger. */
import { Type } from 'typebox';
import type { ApiApp, ApiDeps } from '../api.ts';
import { addPaymentSchemas } from '../schemas/payments.ts';

export default async function balanceRoutes(app: ApiApp, { kasse }: ApiDeps) {
  addPaymentSchemas(app);
  app.get(
    '/balance',
    {
      schema: {
        operationId: 'getBalance',
        summary: 'Get the balance',
        description:
          'US cents credited for paid payments (less fees and reversals), cents on the way, and coins held per token. See docs/ledger.md.',
        tags: ['Balance'],
        response: { 200: Type.Unsafe({ $ref: 'Balance#' }) },
      },
    },
    async (req) => kasse.payments.balance(req.auth),
  );
}
