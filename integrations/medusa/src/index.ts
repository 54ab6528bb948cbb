/**
 * @kasse/medusa: Kasse's payment provider for Medusa v2. Registered in `medusa-config.ts` under the payment module
 * (`resolve: "@kasse/medusa"`, `id: "kasse"`), it is the provider `pp_kasse_kasse` (docs/integrations/medusa.md).
 */
import { ModuleProvider, Modules } from '@medusajs/framework/utils';
import { KassePaymentProviderService } from './service';

export default ModuleProvider(Modules.PAYMENT, { services: [KassePaymentProviderService] });
export { KassePaymentProviderService };
export type { KasseProviderOptions } from './mapping';
