/**
 * Coin amounts as people read them (`readableAmount`): 6 significant digits, at least 2 decimals, never more than the
 * exact amount, "≈" when rounding changed it, and never a non-zero amount read as 0.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readableAmount } from '../../src/core/money.ts';

test('amounts are rounded to 6 significant digits, marked when rounded, never to 0', () => {
  for (const [exact, read] of [
    ['0.006666666666666667', '≈0.00666667'],
    ['0.008333333333333334', '≈0.00833333'],
    ['25.123456', '≈25.1235'],
    ['24.994999', '≈24.995'],
    ['123456.789', '≈123456.79'],
    ['1234567.891234', '≈1234567.89'],
    ['1.23456789', '≈1.23457'],
    ['0.999999999', '≈1'],
    ['9.9999999', '≈10'],
    ['-0.006666666666666667', '≈-0.00666667'],
    // Short enough already: as it is.
    ['300', '300'],
    ['0', '0'],
    ['25.1', '25.1'],
    ['0.0004', '0.0004'],
    ['0.00041667', '0.00041667'],
    ['100.05', '100.05'],
    // The smallest unit of a coin with 18 decimals keeps its one digit.
    ['0.000000000000000001', '0.000000000000000001'],
    ['0.0000000000000000015', '0.0000000000000000015'],
  ])
    assert.equal(readableAmount(exact), read, exact);
  assert.throws(() => readableAmount('1e-18'), /not a decimal amount/);
});
