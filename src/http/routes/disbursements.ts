/** Disbursements: create, list, read and cancel. Approval and release happen only on the dashboard, by owners. */
import { Type } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import {
  CreateDisbursementBody,
  DisbursementSchema,
  ListDisbursementsQuery,
} from '../../modules/disbursements/index.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { idempotent, keyActor } from '../actor.ts';
import { PageOf } from '../schemas/common.ts';
import { IdempotentCreate } from '../schemas/payments.ts';

const DisbursementIdParam = Type.Object({
  id: Type.String({ pattern: ID_PATTERNS.dsb, description: 'Disbursement id' }),
});
const DisbursementRef = Type.Unsafe({ $ref: 'Disbursement#' });
const tags = ['Disbursements'];
/**
 * NOTE: a CreateDisbursement within the spec's limits (500 items, 120-character labels, every character possibly
 * \u-escaped) can reach about 400 KB, above the API's general body limit; this route takes up to 512 KB.
 */
const CREATE_BODY_LIMIT = 512 * 1024;

export default async function disbursementRoutes(app: ApiApp, { kasse }: ApiDeps) {
  app.addSchema(DisbursementSchema);

  app.post(
    '/disbursements',
    {
      bodyLimit: Math.max(CREATE_BODY_LIMIT, kasse.config.bodyLimitBytes),
      schema: {
        operationId: 'createDisbursement',
        summary: 'Create a disbursement',
        description:
          "Creates a batch of 1 to 500 payouts in the merchant's payout coin (`payout_token`, default `base:usdc`), each priced now (stablecoins exactly at the peg). The batch is `pending_approval` until the number of owners in `approvals_required` approve it on the dashboard with their second factor; an owner then releases it, which takes `total_usd_cents` from the available balance and sends every item. A refused item names itself in `param` (`items.17.destination`). Send `Idempotency-Key` to make retries safe: the same key and body answer 200 with the first batch, a different body 409 `idempotency_conflict`. 503 `price_unavailable` when a payout coin that is not a stablecoin has no current price.",
        tags,
        errors: ['idempotency_conflict', 'price_unavailable'],
        body: CreateDisbursementBody,
        ...IdempotentCreate(DisbursementRef, 'disbursement'),
      },
    },
    async (req, reply) => {
      const result = await kasse.disbursements.create(req.auth, req.body, ...idempotent(req));
      return reply.code(result.status as 200 | 201).send(result.disbursement);
    },
  );

  app.get(
    '/disbursements',
    {
      schema: {
        operationId: 'listDisbursements',
        summary: 'List disbursements',
        description:
          'Newest first, optionally filtered by `status`. `limit` defaults to 20 (at most 100); pass `next_cursor` as `cursor` for the next page.',
        tags,
        querystring: ListDisbursementsQuery,
        response: { 200: PageOf(DisbursementRef) },
      },
    },
    async (req) => kasse.disbursements.list(req.auth, req.query),
  );

  app.get(
    '/disbursements/:id',
    {
      schema: {
        operationId: 'getDisbursement',
        summary: 'Get a disbursement',
        description: "With every item, its payout and the batch's progress.",
        tags,
        params: DisbursementIdParam,
        response: { 200: DisbursementRef },
      },
    },
    async (req) => kasse.disbursements.get(req.auth, req.params.id),
  );

  app.post(
    '/disbursements/:id/cancel',
    {
      schema: {
        operationId: 'cancelDisbursement',
        summary: 'Cancel a disbursement',
        description:
          'Cancels a batch that is `pending_approval` or `approved`; once released (or cancelled) it answers 422 `invalid_state`. Publishes `disbursement.cancelled`.',
        tags,
        errors: ['invalid_state'],
        params: DisbursementIdParam,
        response: { 200: DisbursementRef },
      },
    },
    async (req) => kasse.disbursements.cancel(req.auth, req.params.id, keyActor(req)),
  );
}
