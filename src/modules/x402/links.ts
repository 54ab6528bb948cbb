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
 * keep getting the link page. A use of the link is counted before the money moves (`max_uses` stays a hard cap) and
 * given back when the settlement fails or turns out to be a replay of a payment already made.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { ApiError } from '../../core/errors.ts';
import type { Mode } from '../../core/mode.ts';
import type { LinkRow, LinkService } from '../links/service.ts';

export const X402_VERSION = 2;
/** What official servers send with a payment-required answer: never cached by a shared cache. */
const NO_STORE = 'no-store';

/** A payment made through a link by an agent, as the facilitator reports it. */
export interface SettledLinkPayment {
  response: SettleResponse;
  /** The Payment created (or found again for a replayed payload); null when the settlement failed. */
  payment: { id: string; order_id: string | null; price_amount: number; price_currency: string } | null;
  /** True when the payload had been settled before: no new payment was made. */
  replay: boolean;
}

/** What agent-payable links need of the facilitator. */
export interface LinkFacilitator {
  /** The requirements an agent may pay `priceCents` US cents to the merchant with: one per network taking x402. */
  accepts(mode: Mode, merchantId: string, priceCents: number): Promise<PaymentRequirements[]>;
  /** Verifies and settles `payload` for `requirements`, recording a paid x402 Payment with `payment`'s fields. */
  settle(
    mode: Mode,
    merchantId: string,
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    payment: { resource: string; description: string; orderId: string; metadata: Record<string, string> },
  ): Promise<SettledLinkPayment>;
}

/** Whether a request to a link page comes from an x402 client rather than a browser. */
export function isAgentRequest(req: FastifyRequest): boolean {
  if (req.headers['payment-signature'] !== undefined) return true;
  return !/\btext\/html\b/i.test(String(req.headers.accept ?? ''));
}

/** Whether `link` can be paid by an agent: a fixed amount and nothing to ask the payer. */
export function agentPayable(link: LinkRow): boolean {
  return link.kind === 'fixed' && !link.collect_email && link.amount_usd_cents !== null;
}

/** Requirements equal where an x402 server compares them (`findMatchingRequirements`): every field but `extra`. */
function sameRequirements(a: PaymentRequirements, b: PaymentRequirements): boolean {
  return (
    a.scheme === b.scheme &&
    a.network === b.network &&
    a.asset === b.asset &&
    a.amount === b.amount &&
    a.payTo === b.payTo &&
    JSON.stringify(a.extra ?? {}) === JSON.stringify(b.extra ?? {})
  );
}

/** Answers an x402 client on a fixed-amount link (see the header comment). */
export async function answerAgent(
  deps: { links: LinkService; facilitator: LinkFacilitator },
  link: LinkRow,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const resource = deps.links.url(link);
  const accepts = await deps.facilitator.accepts(link.mode, link.merchant_id, link.amount_usd_cents!);
  if (accepts.length === 0)
    throw new ApiError(
      'chain_paused',
      `No network takes x402 payments in ${link.mode} mode now; GET /v1/x402/supported on the ${link.mode} API says which do.`,
    );
  const required = (error?: string): FastifyReply => {
    const body: PaymentRequired = {
      x402Version: X402_VERSION,
      ...(error ? { error } : {}),
      resource: { url: resource, description: link.title, mimeType: 'application/json' },
      accepts,
    };
    return reply
      .code(402)
      .header('PAYMENT-REQUIRED', encodePaymentRequiredHeader(body))
      .header('Cache-Control', NO_STORE)
      .send(body);
  };
  const header = req.headers['payment-signature'];
  if (header === undefined) return required('Payment required');
  let payload: PaymentPayload;
  try {
    payload = decodePaymentSignatureHeader(String(header));
  } catch {
    return required('The PAYMENT-SIGNATURE header is not a base64 x402 payment payload.');
  }
  if (payload?.x402Version !== X402_VERSION || typeof payload.accepted !== 'object' || payload.accepted === null)
    return required(`Only x402 version ${X402_VERSION} payloads are accepted here.`);
  const requirements = accepts.find((r) => sameRequirements(r, payload.accepted));
  if (!requirements) return required('No matching payment requirements');
  const seq = await deps.links.admit(link);
  let settled: SettledLinkPayment;
  try {
    settled = await deps.facilitator.settle(link.mode, link.merchant_id, payload, requirements, {
      resource,
      description: link.title,
      orderId: deps.links.orderId(link, seq),
      metadata: { link_id: link.id },
    });
  } catch (err) {
    await deps.links.release(link);
    throw err;
  }
  if (!settled.response.success || !settled.payment || settled.replay) await deps.links.release(link);
  reply.header('PAYMENT-RESPONSE', encodePaymentResponseHeader(settled.response));
  if (!settled.response.success || !settled.payment)
    return required(settled.response.errorReason ?? 'The payment could not be settled.');
  const p = settled.payment;
  return reply
    .code(200)
    .header('Cache-Control', NO_STORE)
    .send({
      payment_id: p.id,
      status: 'paid',
      order_id: p.order_id,
      price_amount: p.price_amount,
      price_currency: p.price_currency,
      description: link.title,
      network: settled.response.network,
      transaction: settled.response.transaction,
      payer: settled.response.payer ?? null,
    });
}
