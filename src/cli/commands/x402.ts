/**
 * The x402 facilitator's settlements, for the operator (docs/x402.md):
 *
 *   kasse x402 settlements --merchant mer_… --mode test|live [--status pending|settled|failed] [--limit N] [--json]
 *
 * newest first, each with its status and, for a failed one, the reason it ended so (a settlement that could not be
 * completed is never retried: here and on the dashboard's Agents page is where it shows).
 */
import { listFilters, listFlags, mode, requireString, type Command } from '../context.ts';

const STATUSES = ['pending', 'settled', 'failed'] as const;
/** The most `x402 settlements --limit` shows at once. */
const LIST_MAX = 1000;

export const x402Commands: Command[] = [
  {
    name: 'x402 settlements',
    usage:
      'x402 settlements --merchant ID --mode test|live [--status pending|settled|failed] [--limit N] [--json]   (newest first; a failed one says why)',
    flags: listFlags({ merchant: { type: 'string' }, mode: { type: 'string' } }),
    run: async (kasse, f) => {
      const rows = await kasse.x402.settlements(
        { mode: mode(f), merchantId: requireString(f, 'merchant') },
        listFilters(f, STATUSES, { byDefault: 50, max: LIST_MAX }),
      );
      return rows.map((r) => {
        const [reason, ...message] = (r.error ?? '').split(': ');
        return {
          id: r.id,
          status: r.status,
          network: r.network,
          payer: r.payer,
          pay_to: r.pay_to,
          amount: r.amount,
          resource: r.resource,
          transaction: r.transaction,
          payment_id: r.payment_id,
          error_reason: r.error ? reason : null,
          error_message: r.error ? message.join(': ') || null : null,
          created_at: r.created_at.toISOString(),
          ended_at: r.settled_at?.toISOString() ?? null,
        };
      });
    },
  },
];
