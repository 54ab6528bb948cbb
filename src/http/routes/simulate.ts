/** POST /test/payments/{id}/simulate: the test-mode simulator. Registered on the test API only (404 on live). */
import type { ApiApp, ApiDeps } from '../api.ts';
import { keyActor } from '../actor.ts';
import { PaymentIdParam } from '../schemas/common.ts';
import { addPaymentSchemas, PaymentRef, SimulateBody } from '../schemas/payments.ts';

export default async function simulateRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
  if (mode !== 'test') return;
  addPaymentSchemas(app);
  app.post(
    '/test/payments/:id/simulate',
    {
      schema: {
        operationId: 'simulatePayment',
        summary: 'Simulate an outcome (test API only)',
        description:
          "Finishes a `waiting` test payment with `paid`, `underpaid`, `expired`, `late` or `wrong_asset`, running the real transitions, ledger and signed webhooks; only that outcome's event is sent. Without a coin choice, a stablecoin (base:usdc) is picked first, except for `expired`. `expired` and `late` act as if the payment's 24 hours ended now (a simulated late payment is not auto-accepted). `amount` sets what arrives for `paid` or `underpaid`; the outcome must still be what it brings (a short amount within the account’s tolerance is `paid`). `from` names the payer's address the money comes from (400 when it is not an address of the attempt's network). 422 `invalid_state` for a payment that is not waiting.",
        tags: ['Test mode'],
        params: PaymentIdParam,
        body: SimulateBody,
        errors: ['invalid_state', 'amount_too_small'],
        response: { 200: PaymentRef },
      },
    },
    async (req) =>
      kasse.simulator.simulate(
        req.auth,
        req.params.id,
        req.body.outcome,
        keyActor(req),
        req.body.amount === undefined ? undefined : BigInt(req.body.amount),
        req.body.from,
      ),
  );
}
