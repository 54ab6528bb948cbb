/** The EVM sender's fee and gas arithmetic: the EIP-1559 fee pair, the replacement bump, the gas-limit margin. */
import type { Hex } from 'viem';

/** Fee bump of a replacement: +12.5 % on both fields (nodes require at least +10 %). */
const BUMP_NUM = 1125n;
const BUMP_DEN = 1000n;
/** Gas limit = estimate + 20 % (unused gas is not paid for). */
export const GAS_MARGIN_NUM = 12n;
export const GAS_MARGIN_DEN = 10n;

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

export const hex = (n: bigint): Hex => `0x${n.toString(16)}`;
export const ceilBump = (n: bigint): bigint => (n * BUMP_NUM + BUMP_DEN - 1n) / BUMP_DEN;

export function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

export function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
