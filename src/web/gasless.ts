/**
 * `POST /p/<payment_id>/gasless` on the checkout host (no key): the payer's EIP-3009 authorization for a USDC coin
 * choice, relayed by the hot wallet (src/chains/evm/gasless.ts). JSON in, `202 { tx_hash, status }` out; every
 * refusal is a 400 or 422 Error body whose `param` names the field, and changes nothing. Limited per client address
 * (429 `rate_limited`), as every submission costs RPC calls.
 */
import { Type } from 'typebox';
import { GaslessRelay, type GaslessAuthorization } from '../chains/evm/gasless.ts';
import { ApiError } from '../core/errors.ts';
import { ID_PATTERNS } from '../core/ids.ts';
import type { CheckoutRoute } from './routes.ts';

/** NOTE: each submission costs a few RPC calls, so a client address may submit this many per minute. */
const GASLESS_PER_MINUTE = 20;

const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });
const Seconds = Type.Union([Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.String({ pattern: '^\\d{1,20}$' })]);

export const GaslessBody = Type.Object(
  {
    attempt_id: Type.String({ minLength: 1, maxLength: 64 }),
    from: Address,
    to: Address,
    value: Type.String({ pattern: '^\\d{1,78}$' }),
    valid_after: Seconds,
    valid_before: Seconds,
    nonce: Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' }),
    signature: Type.String({ pattern: '^0x([0-9a-fA-F]{2}){65,2048}$' }),
  },
  { additionalProperties: false },
);

const gaslessRoute: CheckoutRoute = async (app, { kasse }) => {
  const relay = new GaslessRelay({ db: kasse.db, clock: kasse.clock, log: kasse.log, chains: kasse.chains });
  app.post<{ Params: { id: string }; Body: GaslessAuthorization }>(
    '/p/:id/gasless',
    { schema: { params: Type.Object({ id: Type.String({ pattern: ID_PATTERNS.pay }) }), body: GaslessBody } },
    async (req, reply) => {
      const rate = await kasse.rateLimiter.take(`gasless:${req.ip}`, GASLESS_PER_MINUTE);
      if (!rate.allowed) {
        throw new ApiError('rate_limited', `Too many signed payments from this address; retry in ${rate.resetSeconds} s.`, null, { 'Retry-After': String(rate.resetSeconds) });
      }
      return reply.code(202).send(await relay.submit(req.params.id, req.body));
    },
  );
};

export default gaslessRoute;
