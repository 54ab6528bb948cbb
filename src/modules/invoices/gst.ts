/**
 * Indian GST rules as pure functions: GSTIN format and check character, state codes and names, the financial year
 * (April to March, IST) and invoice numbers, the invoice figures in paise with their rounding, and amounts in words
 * (Indian numbering: thousand, lakh, crore). Decisions and worked examples: docs/invoices.md.
 */
import { rateFraction } from '../../core/money.ts';

/** GST state and union territory codes with their names (as on the GST portal), plus 96 for outside India. */
export const STATE_NAMES: Record<string, string> = {
  '01': 'Jammu and Kashmir',
  '02': 'Himachal Pradesh',
  '03': 'Punjab',
  '04': 'Chandigarh',
  '05': 'Uttarakhand',
  '06': 'Haryana',
  '07': 'Delhi',
  '08': 'Rajasthan',
  '09': 'Uttar Pradesh',
  '10': 'Bihar',
  '11': 'Sikkim',
  '12': 'Arunachal Pradesh',
  '13': 'Nagaland',
  '14': 'Manipur',
  '15': 'Mizoram',
  '16': 'Tripura',
  '17': 'Meghalaya',
  '18': 'Assam',
  '19': 'West Bengal',
  '20': 'Jharkhand',
  '21': 'Odisha',
  '22': 'Chhattisgarh',
  '23': 'Madhya Pradesh',
  '24': 'Gujarat',
  '26': 'Dadra and Nagar Haveli and Daman and Diu',
  '27': 'Maharashtra',
  '29': 'Karnataka',
  '30': 'Goa',
  '31': 'Lakshadweep',
  '32': 'Kerala',
  '33': 'Tamil Nadu',
  '34': 'Puducherry',
  '35': 'Andaman and Nicobar Islands',
  '36': 'Telangana',
  '37': 'Andhra Pradesh',
  '38': 'Ladakh',
  '97': 'Other Territory',
  '96': 'Outside India',
};

/** State codes a registered seller (GSTIN) can have: every code but 96. */
export function isSellerState(code: string): boolean {
  return code in STATE_NAMES && code !== '96';
}

const GSTIN_CHARS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const GSTIN_SHAPE = /^[0-9]{2}[A-Z]{5}[0-9]{4}[A-Z][1-9A-Z][A-Z0-9][0-9A-Z]$/;

/** The check character of the first 14 characters of a GSTIN (weights 1, 2 alternating; base 36). */
export function gstinCheckChar(first14: string): string {
  let sum = 0;
  for (let i = 0; i < 14; i++) {
    const product = GSTIN_CHARS.indexOf(first14[i]!) * (i % 2 === 0 ? 1 : 2);
    sum += Math.floor(product / 36) + (product % 36);
  }
  return GSTIN_CHARS[(36 - (sum % 36)) % 36]!;
}

/** Why `gstin` (upper case) is not a valid GSTIN, or null when it is. */
export function gstinProblem(gstin: string): string | null {
  if (!GSTIN_SHAPE.test(gstin))
    return 'is not a GSTIN (15 characters: state code, PAN, entity number, Z or a letter, check character)';
  if (!isSellerState(gstin.slice(0, 2))) return `starts with ${gstin.slice(0, 2)}, which is not a GST state code`;
  if (gstinCheckChar(gstin.slice(0, 14)) !== gstin[14])
    return `has a wrong check character: its last character, ${gstin[14]}, does not match the first 14 (look for a typing mistake)`;
  return null;
}

const IST_OFFSET_MS = (5 * 60 + 30) * 60 * 1000;

/** The calendar date in India (IST, UTC+5:30) at `at`, as YYYY-MM-DD. */
export function istDate(at: Date): string {
  return new Date(at.getTime() + IST_OFFSET_MS).toISOString().slice(0, 10);
}

/** The Indian financial year (April–March, IST) of `at`: "26-27" for 1 April 2026 to 31 March 2027. */
export function financialYear(at: Date): string {
  const ist = new Date(at.getTime() + IST_OFFSET_MS);
  const start = ist.getUTCMonth() >= 3 ? ist.getUTCFullYear() : ist.getUTCFullYear() - 1;
  const yy = (y: number) => String(y % 100).padStart(2, '0');
  return `${yy(start)}-${yy(start + 1)}`;
}

/** NOTE: an invoice number is at most 16 characters (Rule 46): prefix + "/" + "26-27" + "/" + serial. */
export const NUMBER_MAX = 16;
export const PREFIX_MAX = 3;
const SERIAL_MIN_DIGITS = 6;

/** `KS/26-27/000123`; null when the serial no longer fits in 16 characters with this prefix. */
export function invoiceNumber(prefix: string, fy: string, serial: number): string | null {
  const digits = NUMBER_MAX - prefix.length - fy.length - 2;
  const text = String(serial).padStart(SERIAL_MIN_DIGITS, '0');
  return text.length > digits ? null : `${prefix}/${fy}/${text}`;
}

/** a / b rounded half up, for a ≥ 0 and b > 0. */
function divHalfUp(a: bigint, b: bigint): bigint {
  return (2n * a + b) / (2n * b);
}

export interface Figures {
  /** All in paise. */
  total: bigint;
  taxable: bigint;
  cgst: bigint;
  sgst: bigint;
  igst: bigint;
}

/**
 * The invoice's figures in paise for a price in US cents at `fxRate` rupees per US dollar:
 * tax-inclusive: total = cents × rate (half up), taxable = total ÷ (1 + tax rate) (half up), tax = total − taxable;
 * tax-exclusive: taxable = cents × rate (half up), tax = taxable × tax rate (half up), total = taxable + tax.
 * `intra` splits the tax into CGST (half, rounded down) and SGST (the rest); `inter` is IGST.
 */
export function invoiceFigures(
  usdCents: number,
  fxRate: string,
  taxRateBps: number,
  inclusive: boolean,
  supply: 'intra' | 'inter',
): Figures {
  const { num, den } = rateFraction(fxRate);
  const converted = divHalfUp(BigInt(usdCents) * num, den);
  const bps = BigInt(taxRateBps);
  let total: bigint;
  let taxable: bigint;
  if (inclusive) {
    total = converted;
    taxable = divHalfUp(total * 10_000n, 10_000n + bps);
  } else {
    taxable = converted;
    total = taxable + divHalfUp(taxable * bps, 10_000n);
  }
  const tax = total - taxable;
  if (supply === 'inter') return { total, taxable, cgst: 0n, sgst: 0n, igst: tax };
  const cgst = tax / 2n;
  return { total, taxable, cgst, sgst: tax - cgst, igst: 0n };
}

/** "832.50" for 83250 paise. */
export function rupees(paise: bigint): string {
  const whole = paise / 100n;
  return `${whole}.${String(paise % 100n).padStart(2, '0')}`;
}

/** "1,23,45,678.90": rupees with Indian digit grouping. */
export function rupeesGrouped(paise: bigint): string {
  const [whole, frac] = rupees(paise).split('.') as [string, string];
  const last3 = whole.slice(-3);
  const rest = whole.slice(0, -3).replace(/\B(?=(\d{2})+(?!\d))/g, ',');
  return `${rest ? `${rest},` : ''}${last3}.${frac}`;
}

const ONES = [
  '',
  'One',
  'Two',
  'Three',
  'Four',
  'Five',
  'Six',
  'Seven',
  'Eight',
  'Nine',
  'Ten',
  'Eleven',
  'Twelve',
  'Thirteen',
  'Fourteen',
  'Fifteen',
  'Sixteen',
  'Seventeen',
  'Eighteen',
  'Nineteen',
];
const TENS = ['', '', 'Twenty', 'Thirty', 'Forty', 'Fifty', 'Sixty', 'Seventy', 'Eighty', 'Ninety'];

function below100(n: number): string {
  return n < 20 ? ONES[n]! : TENS[Math.floor(n / 10)]! + (n % 10 ? `-${ONES[n % 10]}` : '');
}

function below1000(n: number): string {
  const parts: string[] = [];
  if (n >= 100) parts.push(`${ONES[Math.floor(n / 100)]} Hundred`);
  if (n % 100) parts.push(below100(n % 100));
  return parts.join(' ');
}

/** A whole number in words in the Indian system ("Twelve Lakh Thirty-Four Thousand Five Hundred Sixty-Seven"). */
export function numberInWords(n: bigint): string {
  if (n === 0n) return 'Zero';
  const parts: string[] = [];
  const crore = n / 10_000_000n;
  let rest = Number(n % 10_000_000n);
  if (crore > 0n) parts.push(`${numberInWords(crore)} Crore`);
  const lakh = Math.floor(rest / 100_000);
  rest %= 100_000;
  if (lakh) parts.push(`${below100(lakh)} Lakh`);
  const thousand = Math.floor(rest / 1000);
  rest %= 1000;
  if (thousand) parts.push(`${below100(thousand)} Thousand`);
  if (rest) parts.push(below1000(rest));
  return parts.join(' ');
}

/** "Rupees Eight Hundred Thirty-Two and Fifty Paise Only". */
export function rupeesInWords(paise: bigint): string {
  const whole = paise / 100n;
  const p = Number(paise % 100n);
  return `Rupees ${numberInWords(whole)}${p ? ` and ${below100(p)} Paise` : ''} Only`;
}
