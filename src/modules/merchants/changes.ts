/**
 * What a change of a merchant's settings changed, as its audit row names it: the fields by their API names, each read
 * from the merchant before and after the change.
 */
import type { MerchantRecord } from './service.ts';

/** Fields by the name the audit row gives them, each read from a merchant. */
export type Fields = Record<string, (m: MerchantRecord) => unknown>;

/** What `kasse merchant update` may change, as the audit row names it. */
export const OPERATOR_FIELDS: Fields = {
  webhook_url_test: (m) => m.webhookUrl.test,
  webhook_url_live: (m) => m.webhookUrl.live,
  rate_limit_per_minute: (m) => m.rateLimitPerMinute,
  x402_rate_limit_per_minute: (m) => m.x402RateLimitPerMinute,
  fee_bps: (m) => m.feeBps,
};

/** `{name: {from, to}}` for each of `fields` that differs between `before` and `after`; null when none does. */
export function changes(
  before: MerchantRecord,
  after: MerchantRecord,
  fields: Fields,
): Record<string, { from: unknown; to: unknown }> | null {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const [name, read] of Object.entries(fields))
    if (read(before) !== read(after)) out[name] = { from: read(before), to: read(after) };
  return Object.keys(out).length > 0 ? out : null;
}
