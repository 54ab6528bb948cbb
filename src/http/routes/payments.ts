/** Payments: create, list, read, coin choices, cancel, accept and refund. */
import { Type } from 'typebox';
import type { ApiApp, ApiDeps } from '../api.ts';
import { collectionRoutes } from './collection.ts';
import { idempotencyKey, keyActor } from '../actor.ts';
import { PaymentIdParam } from '../schemas/common.ts';
import {
  addPaymentSchemas,
  CreateAttemptBody,
  CapturePaymentBody,
  CreatePaymentBody,
  IdempotencyHeaders,
  ListPaymentsQuery,
  PaymentRef,
  RefundBody,
} from '../schemas/payments.ts';

const tags = ['Payments'];

export default async function paymentRoutes(app: ApiApp, { kasse }: ApiDeps) {
  addPaymentSchemas(app);
  const payments = collectionRoutes(
    app,
    { noun: 'payment', ref: PaymentRef, idParam: PaymentIdParam, query: ListPaymentsQuery, tags },
    kasse.payments,
  );

  payments.create(
    {
      description:
        'Creates a payment in US cents (status `waiting`, with a `checkout_url`). With `token` (and optionally `chain`, which must match it) the coin choice is issued in the same call and the checkout skips its coin picker; `chain` without `token` is refused (400, param `token`). URLs must be https:// on the live API. Send `Idempotency-Key` to make retries safe: the same key and body answer 200 with the first payment, a different body 409 `idempotency_conflict`.',
      errors: ['idempotency_conflict', 'amount_too_small', 'price_unavailable', 'chain_paused'],
      body: CreatePaymentBody,
    },
    (req, key, actor) => kasse.payments.create(req.auth, req.body, key, actor, req.auth.merchant.name),
  );

  payments.list(
    'Newest first, filtered by `order_id`, `status` and `source`. `limit` defaults to 20 (at most 100); pass `next_cursor` as `cursor` for the next page.',
  );

  payments.get("The source of truth for a payment's state.");

  app.post(
    '/payments/:id/attempts',
    {
      schema: {
        operationId: 'createPaymentAttempt',
        summary: 'Choose a coin',
        description:
          "Issues a deposit address and an exact amount for a network and coin, held for 10 minutes. At most 3 per payment (409 `too_many_attempts`); not on a final payment (422 `invalid_state`); 503 `chain_paused` or `price_unavailable`; 422 `amount_too_small` below the coin's minimum.",
        tags,
        params: PaymentIdParam,
        body: CreateAttemptBody,
        errors: ['too_many_attempts', 'invalid_state', 'amount_too_small', 'price_unavailable', 'chain_paused'],
        response: { 201: PaymentRef },
      },
    },
    async (req, reply) =>
      reply.code(201).send(await kasse.payments.createAttempt(req.auth, req.params.id, req.body, keyActor(req))),
  );

  // Changes of state the payment's own state machine decides (else 422 `invalid_state`).
  payments.transition('cancel', {
    description:
      'Only a `waiting` payment before any money is seen (else 422 `invalid_state`). Sends `payment.cancelled`.',
  });
  payments.transition('accept', {
    summary: 'Accept an underpaid or late payment',
    description:
      'Marks an `underpaid` or `late` payment paid with what arrived (else 422 `invalid_state`). Sends `payment.paid` and credits the balance.',
  });

  app.post(
    '/payments/:id/capture',
    {
      schema: {
        operationId: 'capturePayment',
        summary: 'Capture a held payment',
        description:
          "Moves `amount_usd_cents` (default: all that remains) of an `authorized` manual payment's hold to you (docs/capture.md). Captures may repeat, each settling on chain (`payment.captured`; the first also makes the payment `paid` with `payment.paid`), until the authorized amount is captured or `authorization.capture_before`. Answers the Payment at once, the capture in `authorization.pending_usd_cents` until it settles. 422 `invalid_state` for a payment that is not manual or not authorized, a hold voided or past `capture_before`, a refund of the payment on its way, or more than remains (the message names the remainder). Send `Idempotency-Key` to make retries safe.",
        tags,
        params: PaymentIdParam,
        headers: IdempotencyHeaders,
        body: CapturePaymentBody,
        errors: ['invalid_state', 'idempotency_conflict'],
        response: { 200: PaymentRef },
      },
      // No body at all captures all that remains, as an empty object does.
      preValidation: async (req) => {
        req.body ??= {};
      },
    },
    async (req) =>
      (await kasse.capture.capture(req.auth, req.params.id, req.body ?? {}, idempotencyKey(req), keyActor(req)))
        .payment,
  );

  app.post(
    '/payments/:id/void',
    {
      schema: {
        operationId: 'voidPayment',
        summary: 'Void a held payment',
        description:
          "Returns what was not captured of a manual payment's hold to the payer, once settled on chain: before any capture the payment becomes `cancelled` (`payment.cancelled`); after captures it stays `paid` (or `refunded`) and `authorization.voided` becomes true. 422 `invalid_state` for a payment that is not manual or not authorized, whose hold was voided or fully captured, or while a capture of it is on its way (void once it settles). Taken after `capture_before` too. Send `Idempotency-Key` to make retries safe. Kasse voids by itself at `authorization.capture_before`.",
        tags,
        params: PaymentIdParam,
        headers: IdempotencyHeaders,
        errors: ['invalid_state', 'idempotency_conflict'],
        response: { 200: PaymentRef },
      },
    },
    async (req) => (await kasse.capture.void(req.auth, req.params.id, idempotencyKey(req), keyActor(req))).payment,
  );

  app.post(
    '/payments/:id/refund',
    {
      schema: {
        operationId: 'refundPayment',
        summary: 'Refund a payment',
        description:
          "Returns the confirmed money of the attempt holding it to `destination` (an address on that attempt's network; 400 otherwise; for a payment an x402 client made it defaults to the paying address `x402.payer`). 422 `invalid_state` when no confirmed money arrived, the payment is refunded, a refund is already pending, or a capture or void of a held payment is on its way (refund once it settles). Answers 202 with the Refund (`pending`); when it is sent the payment becomes `refunded` and `payment.refunded` is sent. When it fails (the network can never deliver it), the Refund becomes `failed` with its `error`, `refund.failed` is sent with the Refund as `data`, and a new refund may be requested.",
        tags,
        params: PaymentIdParam,
        body: RefundBody,
        errors: ['invalid_state'],
        response: { 202: Type.Unsafe({ $ref: 'Refund#' }) },
      },
    },
    async (req, reply) =>
      reply.code(202).send(await kasse.refunds.create(req.auth, req.params.id, req.body, keyActor(req))),
  );
}
