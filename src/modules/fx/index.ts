/** The FX module's front door: reference rates for tax invoices from the Frankfurter API (frankfurter.ts). */
export { FrankfurterClient, FxUnavailableError, type FxProvider, type FxRate } from './frankfurter.ts';
