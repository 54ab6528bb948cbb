/** The coin catalogue and price estimates. */
import { Type } from 'typebox';
import type { ApiApp, ApiDeps } from '../api.ts';
import { addPaymentSchemas, EstimateQuery } from '../schemas/payments.ts';

const tags = ['Currencies'];

export default async function currencyRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
  addPaymentSchemas(app);

  app.get(
    '/currencies',
    {
      schema: {
        operationId: 'listCurrencies',
        summary: 'List networks and coins',
        description:
          'Every configured coin of this mode with its current rate (null without a fresh price), `paused` (no new coin choices on that network now) and where its network stands (`network_status`, and `network_status_reason` saying why it is simulated or paused).',
        tags,
        response: { 200: Type.Object({ data: Type.Array(Type.Unsafe({ $ref: 'Currency#' })) }) },
      },
    },
    async () => ({ data: await kasse.payments.catalogue.currencies(mode) }),
  );

  app.get(
    '/estimate',
    {
      schema: {
        operationId: 'getEstimate',
        summary: 'Estimate a price in a coin',
        description:
          'What `price_amount` US cents would cost in `token` now, rounded up to its smallest unit. Same errors as choosing a coin: 400 (param `token`), 503 `chain_paused`, 503 `price_unavailable`, 422 `amount_too_small`.',
        tags,
        querystring: EstimateQuery,
        errors: ['amount_too_small', 'price_unavailable', 'chain_paused'],
        response: { 200: Type.Unsafe({ $ref: 'Estimate#' }) },
      },
    },
    async (req) =>
      kasse.payments.catalogue.estimate(mode, {
        price_amount: req.query.price_amount,
        price_currency: 'USD',
        token: req.query.token,
      }),
  );
}
