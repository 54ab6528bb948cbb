/**
 * The fee arithmetic: `bpsOf(cents, bps)` is `cents × bps / 10,000` rounded half up, the fee and the conversion
 * spread of every credit. Expected values are worked out by hand; the sweep checks the rounding rule's definition
 * (the exact product lies within half a cent below or under half a cent above the result) instead of its formula.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bpsOf } from '../../src/core/money.ts';

/** [cents, bps, fee in cents, how]. */
const CASES: Array<[bigint, number, bigint, string]> = [
  [0n, 100, 0n, 'nothing paid, no fee'],
  [1_000n, 0, 0n, 'a zero rate'],
  [1_000n, 100, 10n, '1 % of $10.00'],
  [1_000n, 50, 5n, '0.5 % of $10.00'],
  [1_500n, 100, 15n, '1 % of $15.00'],
  [1_500n, 50, 8n, '0.5 % of $15.00 is 7.5: half rounds up'],
  [49n, 100, 0n, '0.49 rounds down'],
  [50n, 100, 1n, '0.5 rounds up'],
  [51n, 100, 1n, '0.51 rounds up'],
  [149n, 100, 1n, '1.49 rounds down'],
  [150n, 100, 2n, '1.5 rounds up'],
  [99n, 50, 0n, '0.495 rounds down'],
  [100n, 50, 1n, '0.5 rounds up'],
  [299n, 50, 1n, '1.495 rounds down'],
  [300n, 50, 2n, '1.5 rounds up'],
  [1n, 4_999, 0n, '0.4999 of a cent'],
  [1n, 5_000, 1n, 'half a cent'],
  [3n, 5_000, 2n, '1.5 cents'],
  [1n, 1, 0n, 'the smallest rate of the smallest amount'],
  [12_345n, 1, 1n, '1.2345'],
  [14_999n, 1, 1n, '1.4999'],
  [15_000n, 1, 2n, '1.5'],
  [333n, 333, 11n, '11.0889'],
  [9_999n, 9_999, 9_998n, '9,998.0001'],
  [1n, 10_000, 1n, 'the whole of one cent'],
  [12_345n, 10_000, 12_345n, 'the whole amount'],
  [100_000_000n, 1, 10_000n, 'the largest payment ($1,000,000.00), 0.01 %'],
  [100_000_000n, 100, 1_000_000n, 'the largest payment, 1 %'],
  [100_000_000n, 9_999, 99_990_000n, 'the largest payment, 99.99 %'],
  [100_000_000n, 10_000, 100_000_000n, 'the largest payment, the largest rate'],
  [99_999_999n, 50, 500_000n, '499,999.995 rounds up'],
  [9_007_199_254_740_993n, 5_000, 4_503_599_627_370_497n, '2^53 + 1 halved is …496.5: beyond a double, still exact'],
  [10n ** 30n + 1n, 1, 10n ** 26n, 'far beyond any payment: 10^26 + 0.0001'],
];

test('bpsOf gives the fee worked out by hand, rounding half up', () => {
  for (const [cents, bps, fee, how] of CASES) assert.equal(bpsOf(cents, bps), fee, `${cents} × ${bps} bps: ${how}`);
});

test('bpsOf keeps the exact product within half a cent of the result, a half going up', () => {
  const amounts = [
    0n,
    1n,
    2n,
    3n,
    7n,
    49n,
    50n,
    99n,
    100n,
    101n,
    999n,
    1_000n,
    1_500n,
    12_345n,
    99_999_999n,
    100_000_000n,
  ];
  for (const cents of amounts) {
    for (let bps = 0; bps <= 10_000; bps++) {
      const fee = bpsOf(cents, bps);
      // In ten-thousandths of a cent: fee − ½ ≤ cents × bps / 10,000 < fee + ½.
      const exact = cents * BigInt(bps);
      assert.ok(fee * 10_000n - 5_000n <= exact && exact < fee * 10_000n + 5_000n, `${cents} × ${bps} bps gave ${fee}`);
    }
  }
});
