/**
 * GST tax invoices through the public API: the tax profile on the account, issuing invoices for intra- and
 * inter-state supplies with the figures of DESIGN.md, the FX provider's rate from a local server speaking its wire
 * format (and 503 when it cannot be reached), numbering across the 31 March / 1 April boundary in IST, under
 * concurrent requests and after a failed transaction, paging, and the PDF read back with poppler-utils.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { withTx } from '../../src/db/index.ts';
import { after, before, describe, test } from 'node:test';
import { gstinCheckChar } from '../../src/modules/invoices/gst.ts';
import { ApiClient, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually, ok, refused } from '../harness/expect.ts';
import { startFxServer, type FxServer } from '../harness/fx-server.ts';
import { readPdf } from '../harness/pdf.ts';

const SELLER_GSTIN = '27AAPFU0939F1ZV'; // Maharashtra
const gstin = (first14: string) => first14 + gstinCheckChar(first14);
const KARNATAKA_BUYER = gstin('29AAGCB7383J1Z');
const MAHARASHTRA_BUYER = gstin('27AAACR5055K1Z');
const PROFILE = {
  seller_name: 'Chai & Co',
  legal_name: 'Chai and Company Private Limited',
  tax_id: SELLER_GSTIN,
  address: '12 Marine Drive, Mumbai 400002',
  state_code: '27',
  invoice_prefix: 'KS',
};

let t: TestKasse;
let fx: FxServer;
let m: TestMerchant;

before(async () => {
  fx = await startFxServer();
  t = await startTestKasse({ env: { KASSE_FX_URL: fx.url, KASSE_FX_TIMEOUT_MS: '2000' } });
  m = await t.merchant({ name: 'Chai & Co', rateLimit: 100_000 });
});
after(async () => {
  await t.close();
  await fx.close();
});

async function paid(shop: TestMerchant, cents: number, description = 'Masala chai subscription'): Promise<string> {
  const p = await ok(
    shop.test.post('/payments', { price_amount: cents, price_currency: 'USD', order_id: 'inv', description }),
    201,
  );
  await ok(shop.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' }));
  return p.id;
}

const count = async () =>
  Number((await sql<{ n: string }>`SELECT count(*) AS n FROM tax_invoices`.execute(t.kasse.db)).rows[0]!.n);

describe('tax profile', () => {
  test('unset, refused when incomplete or wrong, set with defaults, merged, per mode, removable', async () => {
    assert.equal((await ok(m.test.get('/account'))).tax_profile, null);
    await refused(
      m.test.patch('/account', { tax_profile: { seller_name: 'Chai & Co' } }),
      400,
      'invalid_request',
      'tax_profile.tax_id',
    );
    await refused(
      m.test.patch('/account', { tax_profile: { ...PROFILE, tax_id: '27AAPFU0939F1ZA' } }),
      400,
      'invalid_request',
      'tax_profile.tax_id',
    );
    await refused(
      m.test.patch('/account', { tax_profile: { ...PROFILE, state_code: '29' } }),
      400,
      'invalid_request',
      'tax_profile.state_code',
    );
    await refused(
      m.test.patch('/account', { tax_profile: { ...PROFILE, state_code: '1' } }),
      400,
      'invalid_request',
      'tax_profile.state_code',
    );
    await refused(
      m.test.patch('/account', { tax_profile: { ...PROFILE, invoice_prefix: 'KASSE' } }),
      400,
      'invalid_request',
      'tax_profile.invoice_prefix',
    );
    await refused(
      m.test.patch('/account', { tax_profile: { ...PROFILE, color: 'red' } }),
      400,
      'invalid_request',
      'tax_profile.color',
    );
    assert.equal((await ok(m.test.get('/account'))).tax_profile, null, 'a refused change changes nothing');

    const set = await ok(
      m.test.patch('/account', {
        tax_profile: { ...PROFILE, tax_id: SELLER_GSTIN.toLowerCase(), invoice_prefix: 'KSX' },
      }),
    );
    assert.deepEqual(set.tax_profile, {
      ...PROFILE,
      invoice_prefix: 'KSX',
      sac: '997158',
      tax_rate_bps: 1800,
      tax_inclusive: true,
    });
    const merged = await ok(m.test.patch('/account', { tax_profile: { invoice_prefix: 'KS' } }));
    assert.deepEqual(merged.tax_profile, { ...PROFILE, sac: '997158', tax_rate_bps: 1800, tax_inclusive: true });
    assert.deepEqual((await ok(m.test.get('/account'))).tax_profile, merged.tax_profile);
    assert.equal((await ok(m.live.get('/account'))).tax_profile, null, 'the live profile is separate');

    const other = await t.merchant();
    await ok(other.test.patch('/account', { tax_profile: PROFILE }));
    assert.equal((await ok(other.test.patch('/account', { tax_profile: null }))).tax_profile, null);
  });

  test('concurrent changes of different fields all stay, and each answer is the profile its own change left', async () => {
    const shop = await t.merchant({ rateLimit: 100_000 });
    await ok(shop.test.patch('/account', { tax_profile: PROFILE }));
    const changes: Array<Partial<Record<string, unknown>>> = [
      { seller_name: 'Chai & Co Two' },
      { legal_name: 'Chai and Company LLP' },
      { address: '14 Marine Drive, Mumbai 400002' },
      { invoice_prefix: 'CC' },
      { sac: '998314' },
      { tax_rate_bps: 500 },
      { tax_inclusive: false },
    ];
    for (let round = 0; round < 3; round++) {
      const want = Object.assign({}, ...changes);
      const answers = await Promise.all(changes.map((c) => ok(shop.test.patch('/account', { tax_profile: c }))));
      answers.forEach((a, i) => {
        const [field, value] = Object.entries(changes[i]!)[0]!;
        assert.equal(a.tax_profile[field], value, `answer ${i} shows its own ${field}`);
      });
      assert.deepEqual(
        (await ok(shop.test.get('/account'))).tax_profile,
        { ...PROFILE, sac: '997158', tax_rate_bps: 1800, tax_inclusive: true, ...want },
        `round ${round}: every field kept`,
      );
      const audit = await sql<{ details: Record<string, unknown> }>`
        SELECT details FROM audit_log WHERE merchant_id = ${shop.id} AND action = 'settings.tax_profile' ORDER BY seq DESC LIMIT ${changes.length}`.execute(
        t.kasse.db,
      );
      assert.deepEqual(
        audit.rows.flatMap((r) => Object.keys(r.details)).sort(),
        changes.map((c) => Object.keys(c)[0]!).sort(),
        'each audit row names the one field its change changed',
      );
      // Back to the start for the next round, so every change changes something again.
      await ok(shop.test.patch('/account', { tax_profile: null }));
      await ok(shop.test.patch('/account', { tax_profile: PROFILE }));
    }
  });

  test('dashboard settings: a change waits for a concurrent one on the same merchant and reports what that one wrote', async () => {
    const shop = await t.merchant({ name: 'Original' });
    const { merchants } = t.kasse;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const first = new Promise<void>((r) => (locked = r));
    const a = withTx(t.kasse.db, async (tx) => {
      await merchants.updateSettings(tx, shop.id, { name: 'First' }, []);
      locked();
      await held;
    });
    await first;
    const b = withTx(t.kasse.db, (tx) => merchants.updateSettings(tx, shop.id, { approvalsRequired: 1 }, []));
    // b is blocked on a's row lock, then a commits.
    await eventually(
      'the second change to wait for the first',
      async () => {
        const waiting = await sql<{
          n: string;
        }>`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`.execute(
          t.kasse.db,
        );
        return Number(waiting.rows[0]!.n) > 0;
      },
      { intervalMs: 10 },
    );
    release();
    await a;
    const { before, after } = await b;
    assert.equal(before.name, 'First', 'the second change saw the first one’s name');
    assert.equal(after.name, 'First');
    assert.equal(after.approvalsRequired, 1);
    assert.equal((await merchants.get(shop.id)).name, 'First');
  });

  test('dashboard settings: a request answered while the change is uncommitted does not keep the old merchant cached', async () => {
    const shop = await t.merchant({ name: 'Before' });
    await withTx(t.kasse.db, async (tx) => {
      await t.kasse.merchants.updateSettings(tx, shop.id, { name: 'After' }, []);
      // Authenticated while the change is not yet committed: the key's merchant is cached as it was.
      assert.equal((await ok(shop.test.get('/account'))).name, 'Before');
    });
    assert.equal((await ok(shop.test.get('/account'))).name, 'After', 'the commit drops the cached merchant');
  });

  test('lengths are counted in characters (code points): 200 emoji are 200 characters', async () => {
    const shop = await t.merchant({ rateLimit: 100_000 });
    const emoji = (n: number) => '😀'.repeat(n);
    const set = await ok(
      shop.test.patch('/account', {
        tax_profile: { ...PROFILE, seller_name: emoji(200), legal_name: emoji(200), address: emoji(500) },
      }),
    );
    assert.equal(set.tax_profile.seller_name, emoji(200));
    assert.equal(set.tax_profile.address, emoji(500));
    for (const [field, n] of [
      ['seller_name', 201],
      ['legal_name', 201],
      ['address', 501],
    ] as const) {
      const r = await shop.test.patch('/account', { tax_profile: { [field]: emoji(n) } });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.param, `tax_profile.${field}`);
      assert.match(r.body.error.message, new RegExp(`${n - 1} characters`));
    }
    const payment = await paid(shop, 1000);
    const invoice = await ok(
      shop.test.post(`/payments/${payment}/tax_invoice`, {
        place_of_supply: 'intra',
        fx_rate: '83.00',
        customer_name: emoji(200),
      }),
      201,
    );
    assert.equal(invoice.customer.name, emoji(200));
    const payment2 = await paid(shop, 1000);
    await refused(
      shop.test.post(`/payments/${payment2}/tax_invoice`, {
        place_of_supply: 'intra',
        fx_rate: '83.00',
        customer_name: emoji(201),
      }),
      400,
      'invalid_request',
      'customer_name',
    );
  });
});

describe('tax invoices', () => {
  test('intra-state: the figures of the example, every field present; a second one is 409', async () => {
    const id = await paid(m, 1000);
    const inv = await ok(
      m.test.post(`/payments/${id}/tax_invoice`, {
        place_of_supply: 'intra',
        fx_rate: '83.25',
        customer_name: 'Ravi Traders',
        customer_tax_id: MAHARASHTRA_BUYER,
      }),
      201,
    );
    assert.match(inv.id, /^txi_[0-9A-Z]{26}$/);
    assert.deepEqual(inv, {
      id: inv.id,
      payment_id: id,
      number: 'KS/25-26/000001',
      issued_at: t.clock.now().toISOString(),
      customer: { name: 'Ravi Traders', tax_id: MAHARASHTRA_BUYER, state_code: '27' },
      place_of_supply: 'intra',
      currency: 'INR',
      fx: { rate: '83.25', source: 'manual', date: '2026-03-01' },
      usd_cents: 1000,
      total: '832.50',
      taxable: '705.51',
      cgst: '63.49',
      sgst: '63.50',
      igst: '0.00',
      tax_rate_bps: 1800,
      tax_inclusive: true,
      sac: '997158',
      description: 'Masala chai subscription',
      seller: {
        name: 'Chai & Co',
        legal_name: 'Chai and Company Private Limited',
        tax_id: SELLER_GSTIN,
        address: '12 Marine Drive, Mumbai 400002',
        state_code: '27',
      },
      created_at: t.clock.now().toISOString(),
    });
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83.25' }),
      409,
      'already_invoiced',
    );
    assert.deepEqual(await ok(m.test.get(`/tax_invoices/${inv.id}`)), inv);
    assert.equal((await m.live.get(`/tax_invoices/${inv.id}`)).status, 404, 'test invoices are not on the live API');
  });

  test('inter-state: IGST; place-of-supply rules and bad input are 400 and create nothing', async () => {
    const id = await paid(m, 12345);
    const before = await count();
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, {
        place_of_supply: 'intra',
        fx_rate: '83.25',
        customer_state_code: '29',
      }),
      400,
      'invalid_request',
      'customer_state_code',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'inter', fx_rate: '83.25' }),
      400,
      'invalid_request',
      'customer_state_code',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, {
        place_of_supply: 'inter',
        fx_rate: '83.25',
        customer_tax_id: `${KARNATAKA_BUYER.slice(0, 14)}A`,
      }),
      400,
      'invalid_request',
      'customer_tax_id',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, {
        place_of_supply: 'inter',
        fx_rate: '83.25',
        customer_tax_id: KARNATAKA_BUYER,
        customer_state_code: '07',
      }),
      400,
      'invalid_request',
      'customer_state_code',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'inter', fx_rate: '0', customer_state_code: '29' }),
      400,
      'invalid_request',
      'fx_rate',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, {
        place_of_supply: 'inter',
        fx_rate: '83.1234567',
        customer_state_code: '29',
      }),
      400,
      'invalid_request',
      'fx_rate',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'abroad' }),
      400,
      'invalid_request',
      'place_of_supply',
    );
    await refused(
      m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'inter', note: 'x' }),
      400,
      'invalid_request',
      'note',
    );
    assert.equal(await count(), before);
    // 12345 cents × 84.5 = 10431.525 → 10431.53; ÷ 1.18 = 8840.2796… → 8840.28; IGST = 1591.25.
    const inv = await ok(
      m.test.post(`/payments/${id}/tax_invoice`, {
        place_of_supply: 'inter',
        fx_rate: '84.5',
        customer_tax_id: KARNATAKA_BUYER,
      }),
      201,
    );
    assert.deepEqual(
      [inv.total, inv.taxable, inv.cgst, inv.sgst, inv.igst],
      ['10431.53', '8840.28', '0.00', '0.00', '1591.25'],
    );
    assert.deepEqual(inv.customer, { name: null, tax_id: KARNATAKA_BUYER, state_code: '29' });
    assert.equal(inv.number, 'KS/25-26/000002');
  });

  test('not paid, or no tax profile: 422 invalid_state; another merchant’s payment: 404', async () => {
    const p = await ok(m.test.post('/payments', { price_amount: 500, price_currency: 'USD', order_id: 'w' }), 201);
    await refused(
      m.test.post(`/payments/${p.id}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83' }),
      422,
      'invalid_state',
    );
    const shop = await t.merchant({ rateLimit: 100_000 });
    const theirs = await paid(shop, 500);
    await refused(
      shop.test.post(`/payments/${theirs}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83' }),
      422,
      'invalid_state',
    );
    await refused(
      m.test.post(`/payments/${theirs}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83' }),
      404,
      'not_found',
    );
  });

  test('without fx_rate: the FX provider’s reference rate for the paid day (IST); unreachable → 503 fx_unavailable', async () => {
    t.clock.set('2026-03-14T20:00:00Z'); // Sunday 15 March 01:30 in India: the last fixing is Friday 13 March
    fx.setRate('2026-03-12', '86.1');
    fx.setRate('2026-03-13', '86.912345678');
    const id = await paid(m, 2000);
    const before = await count();
    fx.failNext(1, 500);
    await refused(m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'intra' }), 503, 'fx_unavailable');
    fx.failNext(1, 'malformed');
    await refused(m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'intra' }), 503, 'fx_unavailable');
    assert.equal(await count(), before, 'nothing issued, no number taken');
    const inv = await ok(m.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'intra' }), 201);
    assert.deepEqual(inv.fx, { rate: '86.912346', source: 'frankfurter', date: '2026-03-13' });
    assert.equal(fx.requestLog.at(-1), '/v1/2026-03-15?base=USD&symbols=INR', 'asked for the paid day in IST');
    assert.equal(inv.total, '1738.25'); // 2000 × 86.912346 = 173824.692 paise
    assert.equal(inv.number, 'KS/25-26/000003', 'the failed attempts took no number');

    const down = await startTestKasse({ env: { KASSE_FX_URL: 'http://127.0.0.1:9/v1', KASSE_FX_TIMEOUT_MS: '500' } });
    try {
      const shop = await down.merchant({ rateLimit: 100_000 });
      await ok(shop.test.patch('/account', { tax_profile: PROFILE }));
      const p = await ok(shop.test.post('/payments', { price_amount: 700, price_currency: 'USD', order_id: 'x' }), 201);
      await ok(shop.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' }));
      await refused(
        shop.test.post(`/payments/${p.id}/tax_invoice`, { place_of_supply: 'intra' }),
        503,
        'fx_unavailable',
      );
    } finally {
      await down.close();
    }
  });

  test('numbers restart on 1 April in India (IST), not at UTC midnight', async () => {
    const shop = await t.merchant({ rateLimit: 100_000 });
    await ok(shop.test.patch('/account', { tax_profile: { ...PROFILE, invoice_prefix: 'A' } }));
    t.clock.set('2027-03-31T18:29:59Z'); // 31 March 23:59:59 IST
    const last = await ok(
      shop.test.post(`/payments/${await paid(shop, 100)}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '90' }),
      201,
    );
    t.clock.set('2027-03-31T18:30:00Z'); // 1 April 00:00 IST, still 31 March in UTC
    const first = await ok(
      shop.test.post(`/payments/${await paid(shop, 100)}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '90' }),
      201,
    );
    const second = await ok(
      shop.test.post(`/payments/${await paid(shop, 100)}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '90' }),
      201,
    );
    assert.deepEqual(
      [last.number, first.number, second.number],
      ['A/26-27/000001', 'A/27-28/000001', 'A/27-28/000002'],
    );
    // The live mode counts on its own.
    await ok(shop.live.patch('/account', { tax_profile: { ...PROFILE, invoice_prefix: 'A' } }));
    const live = await ok(
      shop.live.post('/payments', { price_amount: 100, price_currency: 'USD', order_id: 'l' }),
      201,
    );
    await t.kasse.db
      .updateTable('payments')
      .set({ status: 'paid', paid_at: t.clock.now() })
      .where('id', '=', live.id)
      .execute();
    assert.equal(
      (await ok(shop.live.post(`/payments/${live.id}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '90' }), 201))
        .number,
      'A/27-28/000001',
    );
  });

  test('concurrent requests get consecutive numbers without gaps; a failed transaction gives its number back', async () => {
    const shop = await t.merchant({ rateLimit: 100_000 });
    await ok(shop.test.patch('/account', { tax_profile: { ...PROFILE, invoice_prefix: 'C' } }));
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await paid(shop, 100 + i));
    // The same payment twice at once: one invoice, one 409.
    const twice = await Promise.all(
      [0, 1].map(() => shop.test.post(`/payments/${ids[0]}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83' })),
    );
    assert.deepEqual(twice.map((r) => r.status).sort(), [201, 409]);
    const answers = await Promise.all(
      ids
        .slice(1, 10)
        .map((id) => shop.test.post(`/payments/${id}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83' })),
    );
    assert.deepEqual(
      answers.map((r) => r.status),
      Array(9).fill(201),
    );
    const serials = [twice.find((r) => r.status === 201)!.body, ...answers.map((r) => r.body)]
      .map((b) => Number(b.number.split('/')[2]))
      .sort((a, b) => a - b);
    assert.deepEqual(serials, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    // A transaction that fails after taking its number (the insert is refused) leaves no gap.
    await sql`CREATE FUNCTION refuse_invoice() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$`.execute(
      t.kasse.db,
    );
    await sql`CREATE TRIGGER refuse_invoice BEFORE INSERT ON tax_invoices FOR EACH ROW WHEN (NEW.customer_name = 'explode') EXECUTE FUNCTION refuse_invoice()`.execute(
      t.kasse.db,
    );
    try {
      const failed = await shop.test.post(`/payments/${ids[10]}/tax_invoice`, {
        place_of_supply: 'intra',
        fx_rate: '83',
        customer_name: 'explode',
      });
      assert.equal(failed.status, 500);
      assert.equal(failed.body.error.code, 'internal_error');
    } finally {
      await sql`DROP TRIGGER refuse_invoice ON tax_invoices`.execute(t.kasse.db);
    }
    const next = await ok(
      shop.test.post(`/payments/${ids[10]}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83' }),
      201,
    );
    assert.equal(next.number, 'C/27-28/000011');
  });

  test('list: newest first with cursor paging, filtered by payment', async () => {
    const all: any[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await ok(m.test.get(`/tax_invoices?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      assert.ok(page.data.length <= 2);
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    assert.equal(all.length, 3);
    assert.deepEqual(
      all.map((i) => i.number),
      ['KS/25-26/000003', 'KS/25-26/000002', 'KS/25-26/000001'],
    );
    const one = await ok(m.test.get(`/tax_invoices?payment_id=${all[1].payment_id}`));
    assert.deepEqual(one, { data: [all[1]], next_cursor: null });
    await refused(m.test.get('/tax_invoices?cursor=nonsense'), 400, 'invalid_request', 'cursor');
    assert.deepEqual((await ok(m.live.get('/tax_invoices'))).data, []);
  });

  test('the PDF: one A4 page with what Rule 46 asks for, read back with pdftotext', async () => {
    const list = await ok(m.test.get('/tax_invoices?limit=100'));
    const intra = list.data.find((i: any) => i.number === 'KS/25-26/000001');
    const res = await fetch(`${t.urls.test}/tax_invoices/${intra.id}/pdf`, {
      headers: { authorization: `Bearer ${m.testKey}` },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/pdf');
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
    const pdf = readPdf(bytes, 'tax-invoice-intra');
    assert.equal(pdf.pages, 1);
    assert.match(pdf.pageSize, /A4/);
    const text = pdf.text.replace(/[ \t]+/g, ' ');
    for (const want of [
      'TAX INVOICE',
      'Chai & Co',
      'Chai and Company Private Limited',
      '12 Marine Drive, Mumbai 400002',
      `GSTIN: ${SELLER_GSTIN}`,
      'Invoice number KS/25-26/000001',
      'Date of issue 01-03-2026',
      'Place of supply Maharashtra (27)',
      'Ravi Traders',
      `GSTIN: ${MAHARASHTRA_BUYER}`,
      '997158',
      '₹705.51',
      'CGST 9% ₹63.49',
      'SGST 9% ₹63.50',
      'Total ₹832.50',
      'Rupees Eight Hundred Thirty-Two and Fifty Paise Only',
      '₹83.25 per US dollar',
      'Authorised signatory',
    ]) {
      assert.ok(text.includes(want), `PDF shows "${want}"\n${text}`);
    }
    const inter = list.data.find((i: any) => i.number === 'KS/25-26/000002');
    const interPdf = readPdf(
      Buffer.from(
        await (
          await fetch(`${t.urls.test}/tax_invoices/${inter.id}/pdf`, {
            headers: { authorization: `Bearer ${m.testKey}` },
          })
        ).arrayBuffer(),
      ),
      'tax-invoice-inter',
    );
    const interText = interPdf.text.replace(/[ \t]+/g, ' ');
    for (const want of [
      'Place of supply Karnataka (29)',
      'Inter-state',
      'IGST 18% ₹1,591.25',
      'Total ₹10,431.53',
      'Rupees Ten Thousand Four Hundred Thirty-One and Fifty-Three Paise Only',
    ]) {
      assert.ok(interText.includes(want), `PDF shows "${want}"\n${interText}`);
    }
    assert.equal((await new ApiClient(t.urls.test, null).get(`/tax_invoices/${intra.id}/pdf`)).status, 401);
  });
});
