/**
 * The merchant's tax profile (one per mode): who issues the tax invoices and on what terms. Stored as json on the
 * merchant row (it travels with the merchant in the key cache) and validated here: GSTIN with its check character,
 * state code matching the GSTIN, an invoice prefix short enough that every number fits in 16 characters.
 */
import { invalid } from '../../core/errors.ts';
import { gstinProblem, isSellerState, PREFIX_MAX } from './gst.ts';

export interface TaxProfile {
  seller_name: string;
  legal_name: string | null;
  tax_id: string;
  address: string;
  state_code: string;
  invoice_prefix: string;
  sac: string | null;
  tax_rate_bps: number;
  tax_inclusive: boolean;
}

/** NOTE: SAC 997158 (online marketplace and payment services), 18 % GST, prices including tax. */
export const PROFILE_DEFAULTS = { legal_name: null, invoice_prefix: 'INV', sac: '997158', tax_rate_bps: 1800, tax_inclusive: true } as const;

/**
 * `patch` applied over `current` (or the defaults), checked whole: `seller_name`, `tax_id`, `address` and
 * `state_code` are required once set. 400 on `tax_profile.<field>` otherwise.
 */
export function mergeProfile(current: TaxProfile | null, patch: Partial<TaxProfile>): TaxProfile {
  const p = { ...PROFILE_DEFAULTS, ...(current ?? {}), ...patch } as Partial<TaxProfile>;
  const param = (f: string) => `tax_profile.${f}`;
  for (const f of ['seller_name', 'tax_id', 'address', 'state_code'] as const) {
    if (p[f] === undefined || p[f] === null || String(p[f]).trim() === '') throw invalid(`tax_profile.${f} is required`, param(f));
  }
  const taxId = p.tax_id!.toUpperCase();
  const problem = gstinProblem(taxId);
  if (problem) throw invalid(`tax_profile.tax_id ${problem}`, param('tax_id'));
  if (!isSellerState(p.state_code!)) throw invalid('tax_profile.state_code is not a GST state code', param('state_code'));
  if (taxId.slice(0, 2) !== p.state_code) throw invalid(`tax_profile.state_code ${p.state_code} differs from the GSTIN's state ${taxId.slice(0, 2)}`, param('state_code'));
  if (!new RegExp(`^[A-Za-z0-9]{1,${PREFIX_MAX}}$`).test(p.invoice_prefix!)) {
    throw invalid(`tax_profile.invoice_prefix must be 1 to ${PREFIX_MAX} letters or digits, so that every invoice number fits in 16 characters`, param('invoice_prefix'));
  }
  return {
    seller_name: p.seller_name!.trim(),
    legal_name: p.legal_name?.trim() || null,
    tax_id: taxId,
    address: p.address!.trim(),
    state_code: p.state_code!,
    invoice_prefix: p.invoice_prefix!,
    sac: p.sac ?? null,
    tax_rate_bps: p.tax_rate_bps!,
    tax_inclusive: p.tax_inclusive!,
  };
}
