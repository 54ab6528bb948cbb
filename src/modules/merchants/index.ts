/**
 * The merchants module's front door: merchants, API keys and the webhook secret (service.ts), the account's
 * dashboard changes (settings.ts), brand colours and logos (branding.ts, logos.ts), and what other modules read of a
 * merchant's row in their own transaction (lookup.ts).
 */
export { checkBrandColor } from './branding.ts';
export { brandLogoUrl, mailBrand, merchantBrands, type MerchantBrand } from './logos.ts';
export {
  approvalsRequired,
  defaultWebhookUrl,
  lockMerchant,
  merchantFeeBps,
  merchantName,
  underpaymentToleranceBps,
} from './lookup.ts';
export { migrations } from './migrations/index.ts';
export {
  KEYS_CHANNEL,
  MerchantService,
  TOLERANCE_MAX_BPS,
  type AuthenticatedKey,
  type MerchantRecord,
} from './service.ts';
export { MerchantSettings } from './settings.ts';
