/**
 * Merchant and API-key administration. Output is snake_case, as in the API; every change is in the merchant's audit
 * log as done by the operator.
 */
import { OPERATOR } from '../../modules/audit/index.ts';
import type { MerchantRecord } from '../../modules/merchants/index.ts';
import type { Command } from '../context.ts';
import { mode, optionalInt, requireArg, requireString } from '../context.ts';

/** A merchant as the CLI prints it: the API's field style; null limits and fees mean the configured defaults. */
function merchantJson(m: MerchantRecord) {
  return {
    id: m.id,
    name: m.name,
    webhook_url_test: m.webhookUrl.test,
    webhook_url_live: m.webhookUrl.live,
    rate_limit_per_minute: m.rateLimitPerMinute,
    x402_rate_limit_per_minute: m.x402RateLimitPerMinute,
    fee_bps: m.feeBps,
    created_at: m.createdAt,
  };
}

export const merchantCommands: Command[] = [
  {
    name: 'merchant create',
    usage:
      'merchant create --name NAME [--webhook-url URL] [--json]   (an http:// URL serves test mode only; live needs https://)',
    flags: { name: { type: 'string' }, 'webhook-url': { type: 'string' }, json: { type: 'boolean' } },
    run: (kasse, f) =>
      kasse.merchants.create({
        name: requireString(f, 'name'),
        webhookUrl: (f['webhook-url'] as string | undefined) ?? null,
      }),
  },
  {
    name: 'merchant list',
    usage: 'merchant list [--json]',
    flags: { json: { type: 'boolean' } },
    run: async (kasse) => (await kasse.merchants.list()).map(merchantJson),
  },
  {
    name: 'merchant update',
    usage:
      'merchant update --merchant ID [--webhook-url URL] [--webhook-url-test URL] [--webhook-url-live URL] [--rate-limit N] [--x402-rate-limit N] [--fee-bps N] [--json]',
    flags: {
      merchant: { type: 'string' },
      'webhook-url': { type: 'string' },
      'webhook-url-test': { type: 'string' },
      'webhook-url-live': { type: 'string' },
      'rate-limit': { type: 'string' },
      'x402-rate-limit': { type: 'string' },
      'fee-bps': { type: 'string' },
      json: { type: 'boolean' },
    },
    run: async (kasse, f) => {
      const both = f['webhook-url'] as string | undefined;
      const updated = await kasse.merchants.update(
        requireString(f, 'merchant'),
        {
          webhookUrlTest: (f['webhook-url-test'] as string | undefined) ?? both,
          webhookUrlLive: (f['webhook-url-live'] as string | undefined) ?? both,
          rateLimitPerMinute: optionalInt(f, 'rate-limit'),
          x402RateLimitPerMinute: optionalInt(f, 'x402-rate-limit'),
          feeBps: optionalInt(f, 'fee-bps'),
        },
        OPERATOR,
      );
      return merchantJson(updated);
    },
  },
  {
    name: 'key roll',
    usage: 'key roll --merchant ID --mode test|live [--json]   (issues a new key, revokes the old ones of that mode)',
    flags: { merchant: { type: 'string' }, mode: { type: 'string' }, json: { type: 'boolean' } },
    run: (kasse, f) => kasse.merchants.rollKey({ mode: mode(f), merchantId: requireString(f, 'merchant') }, OPERATOR),
  },
  {
    name: 'key revoke',
    usage: 'key revoke KEY_ID_OR_KEY [--json]',
    flags: { json: { type: 'boolean' } },
    run: (kasse, _f, pos) =>
      kasse.merchants.revokeAnyKey(requireArg(pos, 'the key id (key_…) or the key itself'), OPERATOR),
  },
  {
    name: 'key list',
    usage: 'key list --merchant ID [--json]',
    flags: { merchant: { type: 'string' }, json: { type: 'boolean' } },
    run: (kasse, f) => kasse.merchants.listKeys(requireString(f, 'merchant')),
  },
  {
    name: 'migrate',
    usage: 'migrate   (applies pending migrations; the server also does this at start)',
    flags: {},
    run: async () => ({ migrated: true }),
  },
];
