/**
 * The x402 facilitator (docs/x402.md): `GET /x402/supported`, `POST /x402/verify`, `POST /x402/settle` as
 * `HTTPFacilitatorClient` of `@x402/core` calls them (its URL: `{base_url}/x402`, the API key as Bearer through
 * `createAuthHeaders`), `GET /x402/pay_to`, and the public discovery catalogue `GET /x402/discovery/resources` as the
 * `bazaar` extension's `withBazaar` client lists it. A payment the client's payload cannot make is an answer
 * (`isValid: false`, `success: false` with the official code), not an error; a missing or wrong key is the Error
 * body with 401/403, as everywhere, and a payment identifier reused for another payment 409 `idempotency_conflict`.
 * The facilitator's routes count against the key's own x402 limit (`limit: 'x402'`), not the API's.
 */
import { Type } from 'typebox';
import { ApiError, notFound } from '../../core/errors.ts';
import { DISCOVERY_LIMIT_DEFAULT, DISCOVERY_LIMIT_MAX } from '../../modules/x402/index.ts';
import {
  DiscoveryResourcesSchema,
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
/** The facilitator's routes count against the key's x402 limit (`KASSE_X402_RATE_LIMIT`), sized for machines. */
const X402_LIMIT = { limit: 'x402' } as const;
/** NOTE: the public catalogue answers one client address this many times a minute. */
export const DISCOVERY_PER_MINUTE = 600;

export default async function x402Routes(app: ApiApp, { kasse, mode }: ApiDeps) {
  addPaymentSchemas(app);
  for (const s of X402_SCHEMAS) if (!app.getSchema(idOf(s))) app.addSchema(s);
  const ref = (schema: object) => Type.Unsafe({ $ref: `${idOf(schema)}#` });

  app.get(
    '/x402/supported',
    {
      config: X402_LIMIT,
      schema: {
        operationId: 'x402Supported',
        summary: 'x402: supported kinds',
        description:
          "Every `{x402Version: 2, scheme, network}` this mode settles (`exact` on every network with USDC; `auth-capture`, a hold the merchant captures, where the network has the escrow), with `extra.payTo` (the merchant's x402 address on the network), the USDC `asset`, its `decimals` and what the network scheme needs to sign (such as the token `name` and `version`).",
        tags: ['x402'],
        response: { 200: ref(SupportedResponseSchema) },
      },
    },
    async (req) => kasse.x402.supported(req.auth),
  );

  app.get(
    '/x402/pay_to',
    {
      config: X402_LIMIT,
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
      const payTo = await kasse.x402.payTo(req.auth, req.query.network);
      if (!payTo) throw notFound('network');
      return { pay_to: payTo };
    },
  );

  app.post(
    '/x402/verify',
    {
      config: X402_LIMIT,
      schema: {
        operationId: 'x402Verify',
        summary: 'x402: verify a payment',
        description:
          "Checks a payment payload against the requirements without settling it: signature, recipient (this merchant), asset, amount, validity window, nonce unused on chain and in Kasse, the payer's balance, an amount of at most $1,000,000. A refusal is `isValid: false` with the official `invalidReason`. A retry under the same `payment-identifier` with the same payment answers as before; another payment under it is 409 `idempotency_conflict`.",
        tags: ['x402'],
        body: FacilitatorBodySchema,
        errors: ['idempotency_conflict'],
        response: { 200: ref(VerifyResponseSchema) },
      },
    },
    async (req) => kasse.x402.verify(req.auth, req.body as FacilitatorBody),
  );

  app.post(
    '/x402/settle',
    {
      config: X402_LIMIT,
      schema: {
        operationId: 'x402Settle',
        summary: 'x402: settle a payment',
        description:
          'Verifies, then submits the authorization through Kasse\'s relayer (the hot wallet pays the fee) and answers once the network\'s confirmations are reached (at most 60 s; later: `success: false`, `errorReason: "settlement_pending"`, and the payment is recorded when it lands). One authorization is answered `success: true` once: every other settle of it, at the same time or later, through any Kasse process, answers `success: false` with the duplicate code of its scheme (as the official facilitator answers a used authorization) and credits nothing; a client that lost its answer retries under a `payment-identifier` (the same identifier and payment answers the same; another payment under it is 409 `idempotency_conflict`). At most $1,000,000 per authorization (`invalid_payment_requirements` above). The settlement becomes a `paid` Payment with `source: "x402"` (`extra.payment_id`); an `auth-capture` hold becomes an `authorized` manual-capture one, captured, voided and refunded through the payments API. On a test network served by the simulator, settlement is simulated (`extra.simulated`).',
        tags: ['x402'],
        body: FacilitatorBodySchema,
        errors: ['idempotency_conflict'],
        response: { 200: ref(SettleResponseSchema) },
      },
    },
    async (req) => kasse.x402.settle(req.auth, req.body as FacilitatorBody),
  );

  app.get(
    '/x402/discovery/resources',
    {
      config: { public: true },
      schema: {
        operationId: 'x402DiscoveryResources',
        summary: 'x402: discover paid resources',
        description: `The discovery catalogue of this mode (the \`bazaar\` extension of \`@x402/extensions\`), without a key: every merchant's active agent-payable payment links, and every resource a merchant's server declared through the extension when it verified or settled a payment through Kasse, once paid for. Each with what it accepts (price, network, asset, payTo), and how to call it and what it answers (\`extensions.bazaar\`). A resource drops out when its merchant turns it off on the dashboard, or when it has not been paid for \`KASSE_X402_DISCOVERY_DAYS\` days (30 by default). Newest news first; ${DISCOVERY_PER_MINUTE} requests a minute per client address.`,
        tags: ['x402'],
        security: [],
        querystring: Type.Object(
          {
            type: Type.Optional(Type.String({ maxLength: 16, description: '`http` or `mcp`.' })),
            limit: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: DISCOVERY_LIMIT_MAX,
                default: DISCOVERY_LIMIT_DEFAULT,
                description: `Resources per page (1 to ${DISCOVERY_LIMIT_MAX}, default ${DISCOVERY_LIMIT_DEFAULT}).`,
              }),
            ),
            offset: Type.Optional(
              Type.Integer({ minimum: 0, maximum: 100_000, default: 0, description: 'Resources to skip.' }),
            ),
            network: Type.Optional(
              Type.String({ maxLength: 128, description: 'Only those paid on this CAIP-2 network.' }),
            ),
            payTo: Type.Optional(Type.String({ maxLength: 128, description: "Only this x402 address's merchant's." })),
            scheme: Type.Optional(Type.String({ maxLength: 32, description: '`exact` (the only one).' })),
            extensions: Type.Optional(Type.String({ maxLength: 64, description: '`bazaar` (every one has it).' })),
          },
          { additionalProperties: false },
        ),
        errors: ['rate_limited'],
        response: { 200: ref(DiscoveryResourcesSchema) },
      },
    },
    async (req) => {
      const rate = await kasse.rateLimiter.take(`discovery:${req.ip}`, DISCOVERY_PER_MINUTE);
      if (!rate.allowed)
        throw new ApiError('rate_limited', `Too many discovery requests; retry in ${rate.resetSeconds} s.`, null, {
          'Retry-After': String(rate.resetSeconds),
        });
      return kasse.x402.discovery.list(mode, req.query);
    },
  );
}
