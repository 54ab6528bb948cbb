/** GET /statements/{month}: a month's statement of the merchant's balance, computed from the ledger. */
import { Type } from 'typebox';
import type { ApiApp, ApiDeps } from '../api.ts';
import { DateTime, Nullable } from '../schemas/common.ts';

const Int = (description?: string) => Type.Integer(description ? { description } : {});
const Cents = (description: string) => Type.Integer({ description: `US cents. ${description}` });

const Statement = Type.Object(
  {
    month: Type.String({ pattern: '^\\d{4}-\\d{2}$', description: 'The UTC month, `YYYY-MM`.' }),
    from: DateTime('First instant of the month (UTC).'),
    to: DateTime('End of the period: the first instant of the next month, or now for the month in progress.'),
    opening_balance_usd_cents: Cents('Balance at `from`.'),
    closing_balance_usd_cents: Cents(
      'Balance at `to` = opening + credits.net + conversions.net − reversals.net − what payouts took.',
    ),
    clawback_change_usd_cents: Cents(
      'Change of the part of the balance below zero (reversals after the money was paid out).',
    ),
    reconciliation_gap_usd_cents: Cents(
      'The ledger’s movement of the balance less the same month recomputed from payments, refunds and payouts; 0 unless something is wrong.',
    ),
    payments: Type.Object(
      {
        count: Int('Credits posted in the month (stablecoin and other coins).'),
        gross_usd_cents: Cents('Their prices.'),
      },
      { additionalProperties: false },
    ),
    credits: Type.Object(
      {
        count: Int(),
        value_usd_cents: Cents(
          'Values credited for payments in stablecoins: the price, or the value received for a payment paid short within the tolerance.',
        ),
        fee_usd_cents: Cents('Service fees.'),
        net_usd_cents: Cents('value − fee.'),
      },
      { additionalProperties: false },
    ),
    held: Type.Object(
      {
        count: Int('Payments holding money received but not credited at `to` (underpaid, late, wrong asset, surplus).'),
        value_usd_cents: Cents('Its value at the rate of its attempt.'),
      },
      { additionalProperties: false },
    ),
    conversions: Type.Object(
      {
        count: Int(),
        value_usd_cents: Cents('Values credited for payments in coins that are not stablecoins (as in `credits`).'),
        swap_fee_usd_cents: Cents('The conversion spread.'),
        fee_usd_cents: Cents('Service fees.'),
        net_usd_cents: Cents('value − swap fee − fee.'),
      },
      { additionalProperties: false },
    ),
    reversals: Type.Object(
      {
        count: Int('Credits reversed by a reorg or a sent refund.'),
        net_usd_cents: Cents('What they took back from the balance.'),
      },
      { additionalProperties: false },
    ),
    payouts: Type.Object(
      {
        count: Int('Payouts sent in the month.'),
        usd_cents: Cents('Their amount.'),
        requested_count: Int('Payouts released in the month (taken from the balance).'),
        requested_usd_cents: Cents('Their amount.'),
        items: Type.Array(
          Type.Object(
            {
              id: Type.String(),
              sent_at: DateTime(),
              usd_cents: Int(),
              token: Type.String(),
              symbol: Type.String(),
              amount_display: Type.String(),
              destination: Type.String(),
              tx_hash: Nullable(Type.String()),
            },
            { additionalProperties: false },
          ),
          { description: 'The payouts sent in the month, oldest first.' },
        ),
      },
      { additionalProperties: false },
    ),
    by_coin: Type.Array(
      Type.Object(
        {
          token: Type.String(),
          symbol: Type.String(),
          chain: Type.String(),
          payments: Int('Credits in this coin.'),
          received_display: Type.String({ description: 'Coins received on the credited attempts.' }),
          value_usd_cents: Int('Their prices.'),
        },
        { additionalProperties: false },
      ),
      { description: 'Credits and conversions of the month by coin.' },
    ),
  },
  { $id: 'Statement', additionalProperties: false, description: 'How each figure is computed: docs/statements.md.' },
);

export default async function statementRoutes(app: ApiApp, { kasse }: ApiDeps) {
  app.addSchema(Statement);
  app.get(
    '/statements/:month',
    {
      schema: {
        operationId: 'getStatement',
        summary: 'Get a monthly statement',
        description:
          'The statement of a UTC month (`YYYY-MM`) from the ledger: balances at both ends, credits, conversions, held money, reversals, payouts and a breakdown by coin, with a reconciliation against the payments, refunds and payouts. The month in progress runs to now; a month in the future or a malformed one is 400 on `month`.',
        tags: ['Statements'],
        params: Type.Object({
          month: Type.String({ pattern: '^\\d{4}-\\d{2}$', description: 'UTC month, `YYYY-MM`' }),
        }),
        response: { 200: Type.Unsafe({ $ref: 'Statement#' }) },
      },
    },
    async (req) => kasse.statements.get(req.auth, req.params.month),
  );
}
