/**
 * x402 v2 on the wire, as `HTTPFacilitatorClient` of `@x402/core` 2.27 sends and reads it: the body of verify and
 * settle, and the VerifyResponse, SettleResponse and SupportedResponse. Objects of the protocol accept properties
 * Kasse does not read (clients add fields between versions); what Kasse reads is typed here.
 */
import { Type, type Static } from 'typebox';

const Open = { additionalProperties: true } as const;

export const RequirementsSchema = Type.Object(
  {
    scheme: Type.String({ description: '`exact`, or `auth-capture` (a hold in the escrow).' }),
    network: Type.String({ description: 'CAIP-2 network id, e.g. `eip155:8453`.' }),
    amount: Type.String({ description: 'Smallest units of the asset, as a decimal string (USDC: 6 decimals).' }),
    asset: Type.String({ description: "The network's USDC (its contract or mint)." }),
    payTo: Type.String({ description: "The merchant's x402 address on the network (`GET /x402/pay_to`)." }),
    maxTimeoutSeconds: Type.Integer({ minimum: 0 }),
    extra: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { ...Open, description: 'x402 v2 PaymentRequirements.' },
);

export const PaymentPayloadSchema = Type.Object(
  {
    x402Version: Type.Integer(),
    resource: Type.Optional(
      Type.Object(
        {
          url: Type.Optional(Type.String()),
          description: Type.Optional(Type.String()),
          mimeType: Type.Optional(Type.String()),
        },
        Open,
      ),
    ),
    accepted: Type.Optional(
      Type.Object({ scheme: Type.Optional(Type.String()), network: Type.Optional(Type.String()) }, Open),
    ),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The scheme payload, as the network scheme defines it.',
    }),
  },
  { ...Open, description: 'x402 v2 PaymentPayload, as the client sent it.' },
);
export type PaymentPayload = Static<typeof PaymentPayloadSchema>;

export const FacilitatorBodySchema = Type.Object(
  {
    x402Version: Type.Integer({ description: '2.' }),
    paymentPayload: PaymentPayloadSchema,
    paymentRequirements: RequirementsSchema,
  },
  { ...Open, description: 'What `HTTPFacilitatorClient` posts to verify and settle.' },
);
export type FacilitatorBody = Static<typeof FacilitatorBodySchema>;

export const VerifyResponseSchema = Type.Object(
  {
    isValid: Type.Boolean(),
    invalidReason: Type.Optional(Type.String({ description: "The official facilitator's refusal code." })),
    invalidMessage: Type.Optional(Type.String()),
    payer: Type.Optional(Type.String()),
  },
  { $id: 'X402VerifyResponse', additionalProperties: false, description: 'x402 v2 VerifyResponse.' },
);
export type VerifyResponse = Static<typeof VerifyResponseSchema>;

export const SettleResponseSchema = Type.Object(
  {
    success: Type.Boolean(),
    errorReason: Type.Optional(Type.String()),
    errorMessage: Type.Optional(Type.String()),
    payer: Type.Optional(Type.String()),
    transaction: Type.String({ description: 'The settling transaction (`0xsim…` when simulated); empty if none.' }),
    network: Type.String(),
    amount: Type.Optional(Type.String()),
    extra: Type.Optional(
      Type.Object(
        {
          payment_id: Type.Union([Type.String(), Type.Null()], {
            description: 'The Payment it became: `paid`, or `authorized` for an `auth-capture` hold.',
          }),
          simulated: Type.Boolean({ description: 'Settlement was simulated (a network on the simulator).' }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { $id: 'X402SettleResponse', additionalProperties: false, description: 'x402 v2 SettleResponse.' },
);
export type SettleResponse = Static<typeof SettleResponseSchema>;

export const SupportedResponseSchema = Type.Object(
  {
    kinds: Type.Array(
      Type.Object(
        {
          x402Version: Type.Integer(),
          scheme: Type.String(),
          network: Type.String(),
          extra: Type.Record(Type.String(), Type.Unknown(), {
            description:
              "`payTo` (the merchant's address), `asset`, `decimals`, what the scheme needs to sign (the token's `name` and `version`), `simulated` on the simulator; for `auth-capture` also the escrow and Kasse's operator terms (`authCaptureEscrow`, `captureAuthorizer`, `feeRecipient`, `minFeeBps`, `maxFeeBps`).",
          }),
        },
        { additionalProperties: false },
      ),
    ),
    extensions: Type.Array(Type.String()),
    signers: Type.Record(Type.String(), Type.Array(Type.String())),
  },
  { $id: 'X402SupportedResponse', additionalProperties: false, description: 'x402 v2 SupportedResponse.' },
);
export type SupportedResponse = Static<typeof SupportedResponseSchema>;

const OpenObject = Type.Object({}, { additionalProperties: true });

export const DiscoveryResourcesSchema = Type.Object(
  {
    x402Version: Type.Integer({ description: '2.' }),
    items: Type.Array(
      Type.Object(
        {
          resource: Type.String({
            description: "The resource's URL (a payment link's, or as the merchant's server declared it).",
          }),
          type: Type.String({ description: '`http` or `mcp`.' }),
          x402Version: Type.Integer(),
          accepts: Type.Array(OpenObject, {
            description: 'The PaymentRequirements it is paid with, one per network (as it was last paid on each).',
          }),
          lastUpdated: Type.String({ description: 'ISO 8601: when it was last paid (a link: changed or paid).' }),
          description: Type.Optional(Type.String()),
          mimeType: Type.Optional(Type.String()),
          serviceName: Type.Optional(Type.String()),
          tags: Type.Optional(Type.Array(Type.String())),
          iconUrl: Type.Optional(Type.String()),
          extensions: Type.Optional(
            Type.Record(Type.String(), Type.Unknown(), {
              description: '`bazaar`: how to call it (input) and what it answers (output), with its JSON Schema.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    pagination: Type.Object(
      { limit: Type.Integer(), offset: Type.Integer(), total: Type.Integer() },
      { additionalProperties: false },
    ),
  },
  {
    $id: 'X402DiscoveryResources',
    additionalProperties: false,
    description: "The `bazaar` extension's DiscoveryResourcesResponse.",
  },
);

export const X402_SCHEMAS = [
  VerifyResponseSchema,
  SettleResponseSchema,
  SupportedResponseSchema,
  DiscoveryResourcesSchema,
];
