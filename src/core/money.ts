/**
 * Money as integers: US cents as `number` (always a safe integer, at most 10^8 for one payment) or bigint,
 * token amounts as bigint smallest units. Decimal strings exist only at the edges (rates, `*_display`).
 */

/** Exact decimal string of `units` smallest units with `decimals` places, trailing zeros trimmed ("1.5", "0.000001"). */
export function formatUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const base = 10n ** BigInt(decimals);
  const whole = abs / base;
  const frac = (abs % base).toString().padStart(decimals, '0').replace(/0+$/, '');
  const text = frac.length > 0 ? `${whole}.${frac}` : `${whole}`;
  return negative ? `-${text}` : text;
}

/** Parses a non-negative decimal string ("123.45") into smallest units; throws on more precision than allowed. */
export function parseUnits(text: string, decimals: number): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text.trim());
  if (!m) throw new Error(`not a decimal amount: ${text}`);
  const frac = m[2] ?? '';
  if (frac.length > decimals) {
    if (/[^0]/.test(frac.slice(decimals))) throw new Error(`too many decimals in ${text}`);
  }
  return BigInt(m[1]!) * 10n ** BigInt(decimals) + BigInt((frac.slice(0, decimals) || '0').padEnd(decimals, '0'));
}

/** A decimal rate string as an exact fraction num/den (den a power of ten). */
export function rateFraction(rate: string): { num: bigint; den: bigint } {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(rate);
  if (!m) throw new Error(`not a decimal rate: ${rate}`);
  const frac = m[2] ?? '';
  return { num: BigInt(m[1]! + frac), den: 10n ** BigInt(frac.length) };
}

export function ceilDiv(a: bigint, b: bigint): bigint {
  if (b <= 0n) throw new Error('division by non-positive');
  return a >= 0n ? (a + b - 1n) / b : a / b;
}

/**
 * Token amount for `cents` US cents at `rate` USD per whole coin, rounded up to the smallest unit:
 * cents / 100 / rate * 10^decimals.
 */
export function centsToUnits(cents: bigint | number, rate: string, decimals: number): bigint {
  const { num, den } = rateFraction(rate);
  if (num === 0n) throw new Error('zero rate');
  return ceilDiv(BigInt(cents) * den * 10n ** BigInt(decimals), 100n * num);
}

/** US cents worth of `units` at `rate`, rounded down (what the payer's coins are worth). */
export function unitsToCents(units: bigint, rate: string, decimals: number): bigint {
  const { num, den } = rateFraction(rate);
  return (units * num * 100n) / (den * 10n ** BigInt(decimals));
}

/** "12.34" for 1234 cents. */
export function formatCents(cents: bigint | number): string {
  return formatUnits(BigInt(cents), 2)
    .replace(/^(-?\d+)$/, '$1.00')
    .replace(/^(-?\d+\.\d)$/, '$10');
}

/** Fee in cents for a basis-point rate, rounded half up. */
export function bpsOf(cents: bigint, bps: number): bigint {
  return (cents * BigInt(bps) + 5000n) / 10000n;
}

/** NOTE: coin amounts are read to 6 significant digits, and never to fewer than 2 decimals (a stablecoin's cents). */
const READ_DIGITS = 6;
const READ_MIN_DECIMALS = 2;

/**
 * A coin amount rounded for reading (half up), marked "≈" when rounding changed it: to 6 significant digits, but never
 * fewer than 2 decimals nor more than the exact amount has, trailing zeros dropped. A non-zero amount never reads as
 * 0: below 1 the digits count from the first that is not zero. "0.006666666666666667" → "≈0.00666667", "25.123456" →
 * "≈25.1235", "123456.789" → "≈123456.79", "300" → "300". CSV files, the API and the amount's details give it exactly.
 */
export function readableAmount(exact: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(exact);
  if (!m) throw new Error(`not a decimal amount: ${exact}`);
  const sign = m[1]!;
  const whole = m[2]!;
  const frac = m[3] ?? '';
  const significant =
    whole !== '0' ? READ_DIGITS - whole.replace(/^0+/, '').length : frac.search(/[1-9]|$/) + READ_DIGITS;
  const decimals = Math.max(READ_MIN_DECIMALS, significant);
  if (frac.length <= decimals) return exact;
  const scaled = BigInt(whole + frac.slice(0, decimals)) + (frac.charCodeAt(decimals) >= 53 /* '5' */ ? 1n : 0n);
  return `≈${sign}${formatUnits(scaled, decimals)}`;
}
