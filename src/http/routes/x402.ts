/**
 * The x402 facilitator (docs/x402.md): `GET /x402/supported`, `POST /x402/verify`, `POST /x402/settle` as
 * `HTTPFacilitatorClient` of `@x402/core` calls them (its URL: `{base_url}/x402`, the API key as Bearer through
 * `createAuthHeaders`), and `GET /x402/pay_to`. A payment the client's payload cannot make is an answer
 * (`isValid: false`, `success: false` with the official code), not an error; a missing or wrong key is the Error
 * body with 401/403, as everywhere.
 */
import { Type } from 'typebox';
import { notFound } from '../../core/errors.ts';
import {
  type FacilitatorBody,
  FacilitatorBodySchema,
  SettleResponseSchema,
  SupportedResponseSchema,
  VerifyResponseSchema,
  X402_SCHEMAS,
} from '../../modules/x402/index.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { addPaymentSchemas } from '../schemas/payments.ts';

const idOf = (schema: object): string => (schema as { $id: string }).$id;

export default async function x402Routes(app: ApiApp, { kasse, mode }: ApiDeps) {
  addPaymentSchemas(app);
  for (const s of X402_SCHEMAS) if (!app.getSchema(idOf(s))) app.addSchema(s);
  const ref = (schema: object) => Type.Unsafe({ $ref: `${idOf(schema)}#` });

  app.get(
    '/x402/supported',
    {
      schema: {
        operationId: 'x402Supported',
        summary: 'x402: supported kinds',
        description:
          'Every `{x402Version: 2, scheme: "exact", network}` this mode settles, with `extra.payTo` (the merchant\'s x402 address on the network), the USDC `asset`, its `decimals` and what the network scheme needs to sign (such as the token `name` and `version`).',
        tags: ['x402'],
        response: { 200: ref(SupportedResponseSchema) },
      },
    },
    async (req) => kasse.x402.supported(mode, req.auth.merchantId),
  );

  app.get(
    '/x402/pay_to',
    {
      schema: {
        operationId: 'x402PayTo',
        summary: "x402: the merchant's address on a network",
        description: "The merchant's x402 receiving address on a CAIP-2 network of this mode (404 for other networks).",
        tags: ['x402'],
        querystring: Type.Object(
          { network: Type.String({ minLength: 1, maxLength: 128, description: 'CAIP-2 id, e.g. `eip155:8453`.' }) },
          { additionalProperties: false },
        ),
        errors: ['not_found'],
        response: {
          200: Type.Object({ pay_to: Type.String() }, { additionalProperties: false, description: 'The address.' }),
        },
      },
    },
    async (req) => {
      const payTo = await kasse.x402.payTo(mode, req.auth.merchantId, req.query.network);
      if (!payTo) throw notFound('network');
      return { pay_to: payTo };
    },
  );

  app.post(
    '/x402/verify',
    {
      schema: {
        operationId: 'x402Verify',
        summary: 'x402: verify a payment',
        description:
          "Checks a payment payload against the requirements without settling it: signature, recipient (this merchant), asset, amount, validity window, nonce unused on chain and in Kasse, the payer's balance. A refusal is `isValid: false` with the official `invalidReason`.",
        tags: ['x402'],
        body: FacilitatorBodySchema,
        response: { 200: ref(VerifyResponseSchema) },
      },
    },
    async (req) => kasse.x402.verify(mode, req.auth.merchantId, req.body as FacilitatorBody),
  );

  app.post(
    '/x402/settle',
    {
      schema: {
        operationId: 'x402Settle',
        summary: 'x402: settle a payment',
        description:
          'Verifies, then submits the authorization through Kasse\'s relayer (the hot wallet pays the fee) and answers once the network\'s confirmations are reached (at most 60 s; later: `success: false`, `errorReason: "settlement_pending"`, and the payment is recorded when it lands). Idempotent on the authorization. The settlement becomes a `paid` Payment with `source: "x402"` (`extra.payment_id`). On a test network served by the simulator, settlement is simulated (`extra.simulated`).',
        tags: ['x402'],
        body: FacilitatorBodySchema,
        response: { 200: ref(SettleResponseSchema) },
      },
    },
    async (req) => kasse.x402.settle(mode, req.auth.merchantId, req.body as FacilitatorBody),
  );
}
