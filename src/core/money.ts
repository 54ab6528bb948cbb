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
