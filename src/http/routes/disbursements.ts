/** Disbursements: create, list, read and cancel. Approval and release happen only on the dashboard, by owners. */
import { Type } from 'typebox';
import { ID_PATTERNS } from '../../core/ids.ts';
import {
  CreateDisbursementBody,
  DisbursementSchema,
  ListDisbursementsQuery,
} from '../../modules/disbursements/index.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { collectionRoutes } from './collection.ts';

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
  const disbursements = collectionRoutes(
    app,
    {
      noun: 'disbursement',
      ref: DisbursementRef,
      idParam: DisbursementIdParam,
      query: ListDisbursementsQuery,
      tags,
    },
    kasse.disbursements,
  );

  disbursements.create(
    {
      description:
        "Creates a batch of 1 to 500 payouts in the merchant's payout coin (`payout_token`, default `base:usdc`), each priced now (stablecoins exactly at the peg). The batch is `pending_approval` until the number of owners in `approvals_required` approve it on the dashboard with their second factor; an owner then releases it, which takes `total_usd_cents` from the available balance and sends every item. A refused item names itself in `param` (`items.17.destination`). Send `Idempotency-Key` to make retries safe: the same key and body answer 200 with the first batch, a different body 409 `idempotency_conflict`. 503 `price_unavailable` when a payout coin that is not a stablecoin has no current price.",
      errors: ['idempotency_conflict', 'price_unavailable'],
      body: CreateDisbursementBody,
      bodyLimit: Math.max(CREATE_BODY_LIMIT, kasse.config.bodyLimitBytes),
    },
    (req, key, actor) => kasse.disbursements.create(req.auth, req.body, key, actor),
  );

  disbursements.list(
    'Newest first, optionally filtered by `status`. `limit` defaults to 20 (at most 100); pass `next_cursor` as `cursor` for the next page.',
  );

  disbursements.get("With every item, its payout and the batch's progress.");

  disbursements.transition('cancel', {
    description:
      'Cancels a batch that is `pending_approval` or `approved`; once released (or cancelled) it answers 422 `invalid_state`. Publishes `disbursement.cancelled`.',
  });
}
