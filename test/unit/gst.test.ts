/**
 * The GST rules as pure functions: GSTIN check characters, the financial year in IST, invoice numbers within 16
 * characters, the invoice figures and their rounding at the edges, amounts in words, and the FX client's decimal
 * handling against a local server speaking Frankfurter's format.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeClock } from '../../src/core/clock.ts';
import { FrankfurterClient, FxUnavailableError, roundDecimal } from '../../src/modules/fx/frankfurter.ts';
import {
  financialYear,
  gstinCheckChar,
  gstinProblem,
  invoiceFigures,
  invoiceNumber,
  istDate,
  numberInWords,
  rupees,
  rupeesGrouped,
  rupeesInWords,
} from '../../src/modules/invoices/gst.ts';
import { startFxServer, type FxServer } from '../harness/fx-server.ts';

const figures = (cents: number, rate: string, bps: number, inclusive: boolean, supply: 'intra' | 'inter') => {
  const f = invoiceFigures(cents, rate, bps, inclusive, supply);
  return {
    total: rupees(f.total),
    taxable: rupees(f.taxable),
    cgst: rupees(f.cgst),
    sgst: rupees(f.sgst),
    igst: rupees(f.igst),
  };
};

describe('GSTIN', () => {
  test('the check character of published GSTINs, and what is refused', () => {
    assert.equal(gstinCheckChar('27AAPFU0939F1Z'), 'V');
    assert.equal(gstinProblem('27AAPFU0939F1ZV'), null);
    assert.match(gstinProblem('27AAPFU0939F1ZA')!, /check character/);
    assert.match(gstinProblem('27AAPFU0939F1Z')!, /not a GSTIN/);
    assert.match(gstinProblem('27aapfu0939f1zv')!, /not a GSTIN/, 'callers upper-case first');
    assert.match(gstinProblem(`99AAPFU0939F1Z${gstinCheckChar('99AAPFU0939F1Z')}`)!, /not a GST state code/);
  });
});

describe('financial year and numbers', () => {
  test('the year turns at midnight of 1 April in India, 18:30 UTC on 31 March', () => {
    assert.equal(financialYear(new Date('2027-03-31T18:29:59.999Z')), '26-27');
    assert.equal(financialYear(new Date('2027-03-31T18:30:00Z')), '27-28');
    assert.equal(financialYear(new Date('2100-01-15T00:00:00Z')), '99-00');
    assert.equal(istDate(new Date('2026-03-14T18:29:59Z')), '2026-03-14');
    assert.equal(istDate(new Date('2026-03-14T18:30:00Z')), '2026-03-15');
  });

  test('numbers are at most 16 characters: six-digit serials, longer ones while the prefix leaves room', () => {
    assert.equal(invoiceNumber('KS', '26-27', 123), 'KS/26-27/000123');
    assert.equal(invoiceNumber('INV', '26-27', 999_999), 'INV/26-27/999999');
    assert.equal(invoiceNumber('INV', '26-27', 1_000_000), null);
    assert.equal(invoiceNumber('KS', '26-27', 1_000_000), 'KS/26-27/1000000');
    assert.equal(invoiceNumber('K', '26-27', 99_999_999)!.length, 16);
  });
});

describe('figures', () => {
  test('the example: 1000 cents at 83.25, intra, 18 % inclusive', () => {
    assert.deepEqual(figures(1000, '83.25', 1800, true, 'intra'), {
      total: '832.50',
      taxable: '705.51',
      cgst: '63.49',
      sgst: '63.50',
      igst: '0.00',
    });
    assert.deepEqual(figures(1000, '83.25', 1800, true, 'inter'), {
      total: '832.50',
      taxable: '705.51',
      cgst: '0.00',
      sgst: '0.00',
      igst: '126.99',
    });
  });

  test('rounding half up at exactly half a paisa, both ways', () => {
    // 1 cent × 83.25 = 83.25 paise → 83; 2 cents → 166.5 → 167.
    assert.equal(figures(1, '83.25', 1800, true, 'intra').total, '0.83');
    assert.equal(figures(2, '83.25', 1800, true, 'intra').total, '1.67');
    // taxable: 118 paise ÷ 1.18 = 100 exactly; 59 ÷ 1.18 = 50 exactly; 177 ÷ 1.18 = 150.
    assert.deepEqual(figures(100, '1.18', 1800, true, 'intra'), {
      total: '1.18',
      taxable: '1.00',
      cgst: '0.09',
      sgst: '0.09',
      igst: '0.00',
    });
    // 5 paise ÷ 1.18 = 4.237 → 4; tax 1 paisa: CGST 0 (half rounded down), SGST the odd paisa.
    assert.deepEqual(figures(5, '1', 1800, true, 'intra'), {
      total: '0.05',
      taxable: '0.04',
      cgst: '0.00',
      sgst: '0.01',
      igst: '0.00',
    });
    // 2.5 paise of taxable after division rounds up: 59 paise at 5 %: 59 / 1.05 = 56.19 → 56; 3 paise tax → 1 + 2.
    assert.deepEqual(figures(59, '1', 500, true, 'intra'), {
      total: '0.59',
      taxable: '0.56',
      cgst: '0.01',
      sgst: '0.02',
      igst: '0.00',
    });
    // Half exactly on the taxable: total 1, 0 % → taxable 1; 236 paise at 18 % → 200 exactly.
    assert.deepEqual(figures(236, '1', 1800, true, 'inter'), {
      total: '2.36',
      taxable: '2.00',
      cgst: '0.00',
      sgst: '0.00',
      igst: '0.36',
    });
    assert.deepEqual(figures(100, '1', 0, true, 'intra'), {
      total: '1.00',
      taxable: '1.00',
      cgst: '0.00',
      sgst: '0.00',
      igst: '0.00',
    });
  });

  test('six-decimal rates and the largest prices stay exact', () => {
    // 100000000 cents × 99999.999999 = 9999999999900 paise.
    const f = invoiceFigures(100_000_000, '99999.999999', 1800, true, 'intra');
    assert.equal(f.total, 9_999_999_999_900n);
    assert.equal(f.taxable + f.cgst + f.sgst + f.igst, f.total);
    assert.equal(figures(333, '0.000001', 1800, true, 'intra').total, '0.00');
  });

  test('tax-exclusive prices: taxable = price × rate, tax on top', () => {
    assert.deepEqual(figures(1000, '83.25', 1800, false, 'intra'), {
      total: '982.35',
      taxable: '832.50',
      cgst: '74.92',
      sgst: '74.93',
      igst: '0.00',
    });
  });

  test('taxable + taxes = total for every price up to 5000 cents at an awkward rate', () => {
    for (let c = 1; c <= 5000; c++) {
      for (const supply of ['intra', 'inter'] as const) {
        const f = invoiceFigures(c, '83.123457', 1800, true, supply);
        assert.equal(f.taxable + f.cgst + f.sgst + f.igst, f.total);
        assert.ok(f.sgst - f.cgst === 0n || f.sgst - f.cgst === 1n);
      }
    }
  });
});

describe('words and grouping', () => {
  test('Indian numbering', () => {
    assert.equal(rupeesInWords(83250n), 'Rupees Eight Hundred Thirty-Two and Fifty Paise Only');
    assert.equal(rupeesInWords(100n), 'Rupees One Only');
    assert.equal(rupeesInWords(5n), 'Rupees Zero and Five Paise Only');
    assert.equal(numberInWords(100_000n), 'One Lakh');
    assert.equal(numberInWords(10_000_000n), 'One Crore');
    assert.equal(
      numberInWords(1_234_567_890n),
      'One Hundred Twenty-Three Crore Forty-Five Lakh Sixty-Seven Thousand Eight Hundred Ninety',
    );
    assert.equal(rupeesGrouped(1_234_567_890n), '1,23,45,678.90');
    assert.equal(rupeesGrouped(99_999n), '999.99');
    assert.equal(rupeesGrouped(100_000n), '1,000.00');
  });
});

describe('FX client (Frankfurter v1 wire format, local server)', () => {
  let fx: FxServer;
  const clock = new FakeClock('2026-03-20T10:00:00Z');
  before(async () => {
    fx = await startFxServer();
  });
  after(() => fx.close());

  test('rates as decimal strings, rounded half up to 6 places; past days cached, today asked again', async () => {
    assert.equal(roundDecimal('86.9123455', 6), '86.912346');
    assert.equal(roundDecimal('86.9999995', 6), '87');
    assert.equal(roundDecimal('83.25', 6), '83.25');
    const client = new FrankfurterClient({ baseUrl: fx.url, timeoutMs: 1000, clock });
    fx.setRate('2026-03-19', '1e2');
    fx.setRate('2026-03-20', '86.1234567');
    assert.deepEqual(await client.usdInr('2026-03-19'), { rate: '100', date: '2026-03-19', source: 'frankfurter' });
    const asked = fx.requestLog.length;
    await client.usdInr('2026-03-19');
    assert.equal(fx.requestLog.length, asked, 'a past day is cached');
    assert.equal((await client.usdInr('2026-03-20')).rate, '86.123457');
    await client.usdInr('2026-03-20');
    assert.equal(fx.requestLog.length, asked + 2, 'today is asked each time');
  });

  test('every failure is FxUnavailableError', async () => {
    const client = new FrankfurterClient({ baseUrl: fx.url, timeoutMs: 1000, clock });
    await assert.rejects(client.usdInr('1999-01-01'), FxUnavailableError, 'before the first fixing: 404');
    fx.failNext(1, 503);
    await assert.rejects(client.usdInr('2026-03-20'), /HTTP 503/);
    fx.failNext(1, 'malformed');
    await assert.rejects(client.usdInr('2026-03-20'), /not JSON/);
    fx.setRate('2026-03-21', '-5');
    await assert.rejects(client.usdInr('2026-03-21'), /without a USD→INR rate/);
    await assert.rejects(
      new FrankfurterClient({ baseUrl: 'http://127.0.0.1:9/v1', timeoutMs: 500, clock }).usdInr('2026-03-20'),
      /did not answer/,
    );
  });
});
