/**
 * The merchant's tax profile (one per mode): who issues the tax invoices and on what terms. Stored as json on the
 * merchant row (it travels with the merchant in the key cache) and validated here: GSTIN with its check character,
 * state code matching the GSTIN, an invoice prefix short enough that every number fits in 16 characters.
 */
import { invalid } from '../../core/errors.ts';
import { textLength } from '../../core/text.ts';
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
export const PROFILE_DEFAULTS = {
  legal_name: null,
  invoice_prefix: 'INV',
  sac: '997158',
  tax_rate_bps: 1800,
  tax_inclusive: true,
} as const;

/** Fields of a profile, in the order forms show them. */
export const PROFILE_FIELDS = [
  'seller_name',
  'legal_name',
  'tax_id',
  'address',
  'state_code',
  'invoice_prefix',
  'sac',
  'tax_rate_bps',
  'tax_inclusive',
] as const;

/**
 * `patch` applied over `current` (or the defaults), checked whole with every rule of `PATCH /account` — so the API
 * and the dashboard refuse the same profiles: `seller_name` 1–200 characters, `legal_name` up to 200 or null,
 * `tax_id` a GSTIN with its check character, `address` 1–500, `state_code` the GSTIN's state, `invoice_prefix` 1–3
 * letters or digits, `sac` 4–8 digits or null, `tax_rate_bps` an integer 0–10000, `tax_inclusive` a boolean.
 * 400 on `tax_profile.<field>` otherwise.
 */
export function mergeProfile(current: TaxProfile | null, patch: Partial<TaxProfile>): TaxProfile {
  const p = { ...PROFILE_DEFAULTS, ...(current ?? {}), ...patch } as Record<string, unknown>;
  const bad = (f: string, why: string) => invalid(`tax_profile.${f} ${why}`, `tax_profile.${f}`);
  for (const f of Object.keys(patch))
    if (!(PROFILE_FIELDS as readonly string[]).includes(f)) throw bad(f, 'is not a field of the tax profile');
  const text = (f: string, max: number, required: boolean): string | null => {
    const v = p[f];
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) {
      if (required) throw bad(f, 'is required');
      return null;
    }
    if (typeof v !== 'string') throw bad(f, 'must be a string');
    if (textLength(v.trim()) > max) throw bad(f, `must be at most ${max} characters`);
    return v.trim();
  };
  const sellerName = text('seller_name', 200, true)!;
  const legalName = text('legal_name', 200, false);
  const taxId = text('tax_id', 40, true)!.toUpperCase();
  const address = text('address', 500, true)!;
  const stateCode = text('state_code', 10, true)!;
  const problem = gstinProblem(taxId);
  if (problem) throw bad('tax_id', problem);
  if (!/^[0-9]{2}$/.test(stateCode) || !isSellerState(stateCode)) throw bad('state_code', 'is not a GST state code');
  if (taxId.slice(0, 2) !== stateCode)
    throw bad('state_code', `${stateCode} differs from the GSTIN's state ${taxId.slice(0, 2)}`);
  const prefix = p.invoice_prefix;
  if (typeof prefix !== 'string' || !new RegExp(`^[A-Za-z0-9]{1,${PREFIX_MAX}}$`).test(prefix)) {
    throw bad(
      'invoice_prefix',
      `must be 1 to ${PREFIX_MAX} letters or digits, so that every invoice number fits in 16 characters`,
    );
  }
  const sac = p.sac ?? null;
  if (sac !== null && (typeof sac !== 'string' || !/^[0-9]{4,8}$/.test(sac)))
    throw bad('sac', 'must be 4 to 8 digits, or null');
  const rate = p.tax_rate_bps;
  if (typeof rate !== 'number' || !Number.isInteger(rate) || rate < 0 || rate > 10_000)
    throw bad('tax_rate_bps', 'must be an integer from 0 to 10000 (basis points)');
  if (typeof p.tax_inclusive !== 'boolean') throw bad('tax_inclusive', 'must be true or false');
  return {
    seller_name: sellerName,
    legal_name: legalName,
    tax_id: taxId,
    address,
    state_code: stateCode,
    invoice_prefix: prefix,
    sac,
    tax_rate_bps: rate,
    tax_inclusive: p.tax_inclusive,
  };
}
