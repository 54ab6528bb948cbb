/**
 * The `payment-identifier` extension (`@x402/extensions`) as the facilitator reads it: a client names a payment with
 * an id (16 to 128 characters of letters, digits, `-` and `_`) in `paymentPayload.extensions["payment-identifier"]`,
 * and a retry after a lost answer carries the same id with the same payment. The extension's own helpers read and
 * check the id; what the payment is, for comparing a retry with the original, is the digest of the signed scheme
 * payload, the resource it pays for (its URL: a signature does not name it, so the same payment shown to another
 * resource of the same price is another request) and the requirements it pays (RFC 8785 canonical JSON, so key order
 * and number spelling do not matter).
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { extractAndValidatePaymentIdentifier, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import type { PaymentPayload as OfficialPayload } from '@x402/core/types';
import { ApiError } from '../../core/errors.ts';
import type { FacilitatorBody } from './wire.ts';

/** Where the id sits in the body, as the Error body's `param` names it. */
export const IDENTIFIER_PARAM = `paymentPayload.extensions.${PAYMENT_IDENTIFIER}`;

/** The client's payment identifier and the digest of the payment it names; null when the client sent none. */
export interface Identified {
  id: string;
  digest: string;
}

/** The body's payment identifier, or null. 400 `invalid_request` when the extension is there but malformed. */
export function paymentIdentifier(body: FacilitatorBody): Identified | null {
  const { id, validation } = extractAndValidatePaymentIdentifier(body.paymentPayload as unknown as OfficialPayload);
  if (!validation.valid)
    throw new ApiError(
      'invalid_request',
      `The ${PAYMENT_IDENTIFIER} extension is malformed: ${(validation.errors ?? []).join('; ')}`,
      IDENTIFIER_PARAM,
    );
  if (id === null) return null;
  const r = body.paymentRequirements;
  const named = {
    payload: body.paymentPayload.payload,
    resource: body.paymentPayload.resource?.url ?? null,
    requirements: { scheme: r.scheme, network: r.network, asset: r.asset, amount: r.amount, payTo: r.payTo },
  };
  return { id, digest: createHash('sha256').update(canonicalize(named)!).digest('hex') };
}

/** 409 for an identifier already naming another payment of the merchant. */
export function identifierConflict(id: string): ApiError {
  return new ApiError(
    'idempotency_conflict',
    `The payment identifier ${id} already names another payment; a retry must send the same payment, and a new payment a new identifier.`,
    IDENTIFIER_PARAM,
  );
}
