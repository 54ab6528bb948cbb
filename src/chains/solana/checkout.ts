/**
 * The Solana part of the hosted checkout (no key; the payment id in the path):
 *   GET  /solana/wallet.js                    the wallet script (static/wallet.js), cached by its hash
 *   POST /p/<id>/solana/transaction           { attempt_id, account, gasless? } → 200 { transaction, fee_payer, … }:
 *                                             the unsigned transaction paying that coin choice (gasless.ts)
 *   POST /p/<id>/solana/relay                 { attempt_id, transaction } → 202 { signature, status }: a
 *                                             payer-signed gasless USDC payment, checked, co-signed and sent
 * Both POSTs cost RPC calls, so a client address may make RELAY_PER_MINUTE of them a minute (429 `rate_limited`).
 * Refusals are 400/422 Error bodies naming the field, and change nothing.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ApiError, invalid, notFound } from '../../core/errors.ts';
import { ID_PATTERNS } from '../../core/ids.ts';
import type { Kasse } from '../../kasse.ts';
import { SolanaAdapter } from './adapter.ts';
import { buildPayment, RelayService, type PayableAttempt } from './gasless.ts';

/** NOTE: each request costs RPC calls; like the EVM relay, a client address may make this many a minute. */
export const RELAY_PER_MINUTE = 20;

const SCRIPT = readFileSync(new URL('./static/wallet.js', import.meta.url));
const SCRIPT_HASH = createHash('sha256').update(SCRIPT).digest('hex').slice(0, 12);

/** Where pages load the wallet script from. */
export const WALLET_SCRIPT_URL = `/solana/wallet.js?v=${SCRIPT_HASH}`;

/** Wallet Standard chain id of a mode's cluster. */
export function clusterOf(mode: 'test' | 'live'): string {
  return mode === 'live' ? 'solana:mainnet' : 'solana:devnet';
}

const Params = Type.Object({ id: Type.String({ pattern: ID_PATTERNS.pay }) });
const BuildBody = Type.Object(
  { attempt_id: Type.String({ minLength: 1, maxLength: 64 }), account: Type.String({ minLength: 32, maxLength: 44 }), gasless: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
const RelayBody = Type.Object({ attempt_id: Type.String({ minLength: 1, maxLength: 64 }), transaction: Type.String({ minLength: 1, maxLength: 4096 }) }, { additionalProperties: false });

/** The open coin choice `attemptId` of payment `paymentId` on a Solana network, with its adapter. */
async function payable(kasse: Kasse, paymentId: string, attemptId: string): Promise<{ adapter: SolanaAdapter; attempt: PayableAttempt }> {
  const found = await kasse.payments.findForCheckout(paymentId);
  if (!found) throw notFound('payment');
  const a = found.payment.attempts.find((x) => x.id === attemptId);
  if (!a) throw invalid('attempt_id is not a coin choice of this payment.', 'attempt_id');
  const adapter = kasse.chains.hasAdapter(found.mode, a.chain) ? kasse.chains.adapter(found.mode, a.chain) : null;
  const token = kasse.chains.token(found.mode, a.token);
  if (!(adapter instanceof SolanaAdapter) || !token) throw new ApiError('invalid_state', `${a.token} cannot be paid from a Solana wallet.`, 'attempt_id');
  const final = ['paid', 'expired', 'refunded', 'cancelled'].includes(found.payment.status);
  const open = a.status === 'waiting' && !final && Date.parse(a.expires_at) > kasse.clock.now().getTime();
  return { adapter, attempt: { id: a.id, paymentId, token, address: a.address, payAmount: BigInt(a.pay_amount), open } };
}

export async function solanaCheckoutRoutes(app: FastifyInstance, { kasse }: { kasse: Kasse }): Promise<void> {
  const limit = async (ip: string) => {
    const rate = await kasse.rateLimiter.take(`solana-pay:${ip}`, RELAY_PER_MINUTE);
    if (!rate.allowed) throw new ApiError('rate_limited', `Too many wallet payments from this address; retry in ${rate.resetSeconds} s.`, null, { 'Retry-After': String(rate.resetSeconds) });
  };
  app.get<{ Querystring: { v?: string } }>('/solana/wallet.js', async (req, reply) => {
    reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', req.query.v === SCRIPT_HASH ? 'public, max-age=31536000, immutable' : 'no-cache');
    return reply.send(SCRIPT);
  });
  app.post<{ Params: { id: string }; Body: { attempt_id: string; account: string; gasless?: boolean } }>(
    '/p/:id/solana/transaction',
    { schema: { params: Params, body: BuildBody } },
    async (req) => {
      await limit(req.ip);
      const { adapter, attempt } = await payable(kasse, req.params.id, req.body.attempt_id);
      return buildPayment(adapter, attempt, req.body.account, { gasless: req.body.gasless === true });
    },
  );
  app.post<{ Params: { id: string }; Body: { attempt_id: string; transaction: string } }>('/p/:id/solana/relay', { schema: { params: Params, body: RelayBody } }, async (req, reply) => {
    await limit(req.ip);
    const { adapter, attempt } = await payable(kasse, req.params.id, req.body.attempt_id);
    return reply.code(202).send(await new RelayService(adapter).submit(attempt, req.body.transaction));
  });
}
