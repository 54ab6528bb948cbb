/**
 * Agent-payable payment links: a fixed-amount link answers an x402 client the way `@x402/express`'s middleware
 * answers one, so an agent with `wrapFetchWithPayment` pays a link directly and a merchant sells to agents without
 * running any server.
 *
 *   GET /l/<slug>, no `PAYMENT-SIGNATURE`   402, `PAYMENT-REQUIRED`: the link's price in USDC on every network of
 *                                           the link's mode that takes x402 payments (`accepts`), the link's URL as
 *                                           the resource, its title as the description
 *   GET /l/<slug>, `PAYMENT-SIGNATURE`      the payload is matched to one of those requirements, verified and settled
 *                                           through the facilitator (a `paid` Payment with `source: "x402"`,
 *                                           `metadata.link_id`, the link's next order id); 200 with the JSON receipt
 *                                           and `PAYMENT-RESPONSE`, or 402 with `PAYMENT-REQUIRED` naming the reason
 *
 * An x402 client is a request carrying `PAYMENT-SIGNATURE`, or one whose `Accept` does not ask for HTML; browsers
 * keep getting the link page. A payment pays the link it was made for (its `resource`): shown to another link it is
 * asked for again and counts nothing there. A use of the link is counted before the money moves (`max_uses` stays a
 * hard cap) and given back when this request made no sale: the settlement failed, or the authorization was settled
 * already — another request with it is refused as a duplicate, and a retry with the same `payment-identifier` (the
 * 402 declares the extension) answers the receipt of that payment again. A settlement still waiting for its
 * confirmations keeps its use until it ends: the payment lands when they come, and a retry answers its receipt then;
 * a settlement that fails gives the use back as it ends (the facilitator's `saleFailed`). A link that
 * takes no new payment (turned off, expired, used up: 422) still answers the retries of payments it took.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { tenantOf } from '../core/tenant.ts';
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { declarePaymentIdentifierExtension, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import type { X402Requirements } from '../chains/x402.ts';
import { ApiError } from '../core/errors.ts';
import type { LinkRow, LinkService } from '../modules/links/index.ts';
import { type PaymentPayload, PaymentPayloadSchema, type X402Service } from '../modules/x402/index.ts';
import { bodyGuard } from '../http/validation.ts';

const X402_VERSION = 2;
/** What official servers send with a payment-required answer: never kept by a shared cache. */
const NO_STORE = 'no-store';
const isPayload = bodyGuard<PaymentPayload>(PaymentPayloadSchema);

/** What agent-payable links need of the facilitator. */
export type LinkFacilitator = Pick<X402Service, 'requirements' | 'sell' | 'resell'>;

/** Whether a request to a link page comes from an x402 client rather than a browser. */
export function isAgentRequest(req: FastifyRequest): boolean {
  if (req.headers['payment-signature'] !== undefined) return true;
  return !/\btext\/html\b/i.test(String(req.headers.accept ?? ''));
}

/** Whether `link` can be paid by an agent: a fixed amount and nothing to ask the payer. */
export function agentPayable(link: LinkRow): boolean {
  return link.kind === 'fixed' && !link.collect_email && link.amount_usd_cents !== null;
}

/** Requirements equal where an x402 server compares them: every field the client signs against. */
function sameRequirements(a: X402Requirements, b: Record<string, unknown>): boolean {
  return (
    a.scheme === b.scheme &&
    a.network === b.network &&
    a.asset === b.asset &&
    a.amount === b.amount &&
    a.payTo === b.payTo &&
    a.maxTimeoutSeconds === b.maxTimeoutSeconds &&
    JSON.stringify(a.extra ?? {}) === JSON.stringify(b.extra ?? {})
  );
}

/** The payload of a `PAYMENT-SIGNATURE` header, or why it is not one Kasse takes. */
function payloadOf(header: string): PaymentPayload | string {
  let decoded: unknown;
  try {
    decoded = decodePaymentSignatureHeader(header);
  } catch {
    return 'The PAYMENT-SIGNATURE header is not a base64 x402 payment payload.';
  }
  if (!isPayload(decoded) || decoded.x402Version !== X402_VERSION || !decoded.accepted)
    return `The PAYMENT-SIGNATURE header is not an x402 version ${X402_VERSION} payment payload.`;
  return decoded;
}

/**
 * Answers an x402 client on a fixed-amount link (see the header comment). `closed`: why the link takes no new payment
 * (turned off, expired, used up); a payment it already has is still answered, anything else is 422 `invalid_state`.
 */
export async function answerAgent(
  deps: { links: LinkService; facilitator: LinkFacilitator },
  link: LinkRow,
  req: FastifyRequest,
  reply: FastifyReply,
  closed?: string,
): Promise<FastifyReply> {
  const resource = { url: deps.links.url(link), description: link.title, mimeType: 'application/json' };
  const accepts = await deps.facilitator.requirements(tenantOf(link), link.amount_usd_cents!);
  if (accepts.length === 0)
    throw new ApiError(
      'chain_paused',
      `No network takes x402 payments in ${link.mode} mode now; GET /v1/x402/supported on the ${link.mode} API says which do.`,
    );
  const required = (error: string): FastifyReply => {
    const body: PaymentRequired = {
      x402Version: X402_VERSION,
      error,
      resource,
      accepts: accepts as PaymentRequirements[],
      extensions: { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) },
    };
    return reply
      .code(402)
      .header('PAYMENT-REQUIRED', encodePaymentRequiredHeader(body))
      .header('Cache-Control', NO_STORE)
      .send(body);
  };
  // Asked to pay again; a closed link asks nothing: it is closed.
  const ask = (error: string): FastifyReply => {
    if (closed !== undefined) throw new ApiError('invalid_state', closed);
    return required(error);
  };
  const header = req.headers['payment-signature'];
  if (header === undefined) return ask('Payment required');
  const payload = payloadOf(String(header));
  if (typeof payload === 'string') return ask(payload);
  const requirements = accepts.find((r) => sameRequirements(r, payload.accepted!));
  if (!requirements) return ask('No matching payment requirements');
  // The signature does not name the link; the payload's resource says which one it was made for.
  if (payload.resource?.url !== resource.url)
    return ask(`This payment was made for ${payload.resource?.url ?? 'no resource'}, not for ${resource.url}.`);
  // The link is listed as the link; a payer's own bazaar declaration is not the merchant's and is dropped.
  const { bazaar: _, ...extensions } = (payload as { extensions?: Record<string, unknown> }).extensions ?? {};
  const body = {
    x402Version: X402_VERSION,
    paymentPayload: { ...payload, resource, extensions },
    paymentRequirements: requirements,
  };
  let settled: Awaited<ReturnType<LinkFacilitator['sell']>>;
  if (closed !== undefined) {
    // A retry of a sale the link made before it closed (its last use, say) answers that sale; nothing new is sold.
    const again = await deps.facilitator.resell(tenantOf(link), body);
    if (!again) throw new ApiError('invalid_state', closed);
    settled = again;
  } else {
    const seq = await deps.links.admit(link);
    try {
      settled = await deps.facilitator.sell(tenantOf(link), body, {
        orderId: deps.links.orderId(link, seq),
        description: link.title,
        metadata: { link_id: link.id },
      });
    } catch (err) {
      await deps.links.release(link);
      throw err;
    }
    // A settlement this request claimed holds the use until it ends; a failed one gives it back as it ends.
    if (!settled.made) await deps.links.release(link);
  }
  const { response, payment } = settled;
  reply.header(
    'PAYMENT-RESPONSE',
    encodePaymentResponseHeader(response as Parameters<typeof encodePaymentResponseHeader>[0]),
  );
  if (!payment) return required(response.errorMessage ?? response.errorReason ?? 'The payment could not be settled.');
  return reply
    .code(200)
    .header('Cache-Control', NO_STORE)
    .send({
      payment_id: payment.id,
      status: payment.status,
      order_id: payment.order_id,
      price_amount: payment.price_amount,
      price_currency: payment.price_currency,
      description: payment.description,
      network: response.network,
      transaction: response.transaction,
      payer: response.payer ?? null,
    });
}
