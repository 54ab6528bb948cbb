/**
 * Kasse as x402 facilitator in test mode with networks on the simulator (the default `npm start`): the official
 * packages end to end (an Express API with `paymentMiddleware`, an agent with `wrapFetchWithPayment`), verification
 * real (EIP-712 signatures recovered, recipient, asset, amount, window, replay) and settlement simulated (said so in
 * the answer's extra and on the Payment). Every settlement is a `paid` Payment with `source: "x402"`, credited,
 * announced by `payment.paid` and listed with `source=x402`; cents-based figures carry sub-cent amounts over
 * (docs/x402.md) at $0.001, $0.01 and $1. Refusals: the official `invalidReason` codes; keys of the other mode and
 * missing keys get the Error body (403, 401).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { launchBrowser } from '../harness/browser.ts';
import { createUser, setUpAccount } from '../harness/dashboard.ts';
import { ApiClient, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError, ok } from '../harness/expect.ts';
import { agentFetch, startShop } from './agents.ts';
import { authorizationBody, type AuthorizationOptions } from '../harness/x402.ts';

const NETWORK = 'eip155:84532';
const TAX_PROFILE = {
  seller_name: 'Weather API',
  legal_name: 'Weather API Private Limited',
  tax_id: '27AAPFU0939F1ZV',
  address: '12 Marine Drive, Mumbai 400002',
  state_code: '27',
  invoice_prefix: 'WX',
};
const USDC = getAddress('0x036CbD53842c5426634e7929541eC2318f3dCF7e');
let t: TestKasse;
let m: TestMerchant;
let payTo: string;

before(async () => {
  t = await startTestKasse();
  // The x402 client signs windows from the real clock.
  t.clock.set(Date.now());
  m = await t.merchant();
  payTo = (await ok(m.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
});
after(() => t?.close());

const agent = privateKeyToAccount(generatePrivateKey());
const nowS = () => Math.floor(t.clock.now().getTime() / 1000);

/** A signed EIP-3009 authorization and the body HTTPFacilitatorClient would post for it (for $0.001 unless told). */
async function body(
  o: Partial<
    Pick<AuthorizationOptions, 'value' | 'to' | 'validAfter' | 'validBefore' | 'amount' | 'asset' | 'payTo'>
  > & {
    signer?: typeof agent;
  } = {},
) {
  const signed = await authorizationBody({
    signer: o.signer ?? agent,
    from: agent.address,
    domain: { name: 'USDC', version: '2', chainId: 84532, verifyingContract: USDC },
    network: NETWORK,
    asset: o.asset ?? USDC,
    payTo: o.payTo ?? payTo,
    to: o.to,
    value: o.value ?? 1000n,
    amount: o.amount ?? '1000',
    validAfter: o.validAfter ?? nowS() - 600,
    validBefore: o.validBefore ?? nowS() + 300,
    maxTimeoutSeconds: 300,
    resource: { url: 'http://shop.test/weather', description: 'Weather in Kochi', mimeType: 'application/json' },
  });
  return signed.body;
}

describe('the facilitator API', () => {
  test('supported lists every EVM network of the mode with the merchant payTo; pay_to answers it alone', async () => {
    const s = await ok(m.test.get('/x402/supported'));
    const base = s.kinds.find((k: any) => k.network === NETWORK);
    assert.deepEqual(base, {
      x402Version: 2,
      scheme: 'exact',
      network: NETWORK,
      extra: { name: 'USDC', version: '2', asset: USDC, decimals: 6, payTo, simulated: true },
    });
    assert.ok(s.kinds.some((k: any) => k.network === 'eip155:11155111'));
    assert.ok(s.kinds.every((k: any) => k.x402Version === 2 && k.scheme === 'exact'));
    assert.match(payTo, /^0x[0-9a-fA-F]{40}$/);
    const other = await t.merchant();
    assert.notEqual((await ok(other.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to, payTo);
    assertError(await m.test.get('/x402/pay_to?network=eip155:1'), 404, 'not_found');
  });

  test('a key of the other mode is refused with 403, no key with 401, as everywhere', async () => {
    const wrong = await new ApiClient(t.urls.test, m.liveKey).post('/x402/verify', await body());
    assertError(wrong, 403, 'wrong_mode');
    const anonymous = await fetch(`${t.urls.test}/x402/supported`);
    assert.equal(anonymous.status, 401);
    assert.equal((await anonymous.json()).error.code, 'unauthorized');
  });

  test('verify checks the signature, recipient, asset, amount and window with the official codes', async () => {
    assert.deepEqual(await ok(m.test.post('/x402/verify', await body())), { isValid: true, payer: agent.address });
    const reason = async (b: unknown) => (await ok(m.test.post('/x402/verify', b))).invalidReason;
    const stranger = privateKeyToAccount(generatePrivateKey());
    assert.equal(await reason(await body({ signer: stranger })), 'invalid_exact_evm_signature');
    assert.equal(await reason(await body({ value: 999n })), 'invalid_exact_evm_authorization_value', 'underpaid');
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address;
    assert.equal(await reason(await body({ to: elsewhere })), 'invalid_exact_evm_recipient_mismatch');
    assert.equal(
      await reason(await body({ to: elsewhere, payTo: elsewhere })),
      'invalid_exact_evm_recipient_mismatch',
      'requirements paying someone else',
    );
    assert.equal(await reason(await body({ asset: elsewhere })), 'invalid_payment_requirements', 'wrong asset');
    assert.equal(
      await reason(await body({ validBefore: nowS() - 1 })),
      'invalid_exact_evm_payload_authorization_valid_before',
    );
    assert.equal(
      await reason(await body({ validAfter: nowS() + 60 })),
      'invalid_exact_evm_payload_authorization_valid_after',
    );
    const b = await body();
    assert.equal(
      await reason({ ...b, paymentRequirements: { ...b.paymentRequirements, network: 'eip155:1' } }),
      'invalid_network',
    );
    assert.equal(
      await reason({ ...b, paymentRequirements: { ...b.paymentRequirements, scheme: 'upto' } }),
      'unsupported_scheme',
    );
    const malformed = await m.test.post('/x402/verify', { x402Version: 2, paymentPayload: {} });
    assertError(malformed, 400, 'invalid_request', 'paymentRequirements');
  });

  test('settle is simulated, idempotent on the authorization, and refuses a replay to verify', async () => {
    const b = await body();
    const first = await ok(m.test.post('/x402/settle', b));
    assert.equal(first.success, true);
    assert.equal(first.network, NETWORK);
    assert.equal(first.payer, agent.address);
    assert.match(first.transaction, /^0xsim[0-9a-f]{61}$/);
    assert.equal(first.extra.simulated, true);
    const again = await ok(m.test.post('/x402/settle', b));
    assert.deepEqual(again, first, 'the same transaction and payment');
    const replay = await ok(m.test.post('/x402/verify', b));
    assert.equal(replay.invalidReason, 'invalid_exact_evm_nonce_already_used');
    const other = await t.merchant();
    const theirs = await ok(other.test.post('/x402/settle', b));
    assert.equal(theirs.success, false, 'another merchant cannot take it');
    const list = await ok(m.test.get('/payments?source=x402&limit=100'));
    assert.equal(list.data.filter((p: any) => p.x402.transaction === first.transaction).length, 1, 'one payment');
    const p = await ok(m.test.get(`/payments/${first.extra.payment_id}`));
    assert.equal(p.status, 'paid');
    assert.equal(p.source, 'x402');
    assert.deepEqual(p.x402, {
      resource: 'http://shop.test/weather',
      description: 'Weather in Kochi',
      payer: agent.address,
      network: NETWORK,
      transaction: first.transaction,
      simulated: true,
      amount_usd: '0.001',
    });
    assert.equal(p.attempts[0].pay_amount, '1000');
    assert.equal(p.attempts[0].address, payTo);
    // Refunded like any payment, to the payer's address, for the exact amount.
    const refund = await ok(m.test.post(`/payments/${p.id}/refund`, { destination: agent.address }), 202);
    assert.equal(refund.amount, '1000');
    assert.equal(refund.destination, agent.address);
  });
});

describe('a settlement with its own sale', () => {
  test("the Payment takes the sale's order id, description and metadata; a replay makes no second one", async () => {
    const b = await body();
    const sale = { orderId: 'weather-7', description: 'Weather report', metadata: { link_id: 'lnk_test' } };
    const first = await t.kasse.x402.settle('test', m.id, b, sale);
    assert.equal(first.success, true);
    const p = await ok(m.test.get(`/payments/${(first.extra as any).payment_id}`));
    assert.equal(p.status, 'paid');
    assert.equal(p.source, 'x402');
    assert.equal(p.order_id, 'weather-7');
    assert.equal(p.description, 'Weather report');
    assert.deepEqual(p.metadata, { link_id: 'lnk_test' });
    const again = await t.kasse.x402.settle('test', m.id, b, { ...sale, orderId: 'weather-8' });
    assert.deepEqual(again, first, 'the same transaction and payment');
    const list = await ok(m.test.get('/payments?source=x402&limit=100'));
    assert.equal(list.data.filter((x: any) => x.order_id?.startsWith('weather-')).length, 1, 'one payment');
  });
});

describe('with the official packages', () => {
  test('an agent pays an Express API through Kasse; the payment is paid, credited and announced', async () => {
    const merchant = await t.merchant();
    const to = (await ok(merchant.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
    const shop = await startShop({
      apiBase: t.urls.test,
      key: merchant.testKey,
      network: NETWORK,
      payTo: to,
      price: '$0.01',
    });
    try {
      const unpaid = await fetch(`${shop.url}/weather`);
      assert.equal(unpaid.status, 402);
      assert.ok(unpaid.headers.get('payment-required'));
      const res = await agentFetch(agent)(`${shop.url}/weather`);
      assert.equal(res.status, 200, await res.clone().text());
      assert.deepEqual(await res.json(), { city: 'Kochi', sky: 'rain' });
      const receipt = JSON.parse(Buffer.from(res.headers.get('payment-response')!, 'base64').toString());
      assert.equal(receipt.success, true);
      assert.match(receipt.transaction, /^0xsim/);
      const list = await ok(merchant.test.get('/payments?source=x402'));
      assert.equal(list.data.length, 1);
      const p = list.data[0];
      assert.equal(p.status, 'paid');
      assert.equal(p.price_amount, 1);
      assert.equal(p.x402.resource, `${shop.url}/weather`);
      assert.equal(p.x402.description, 'Weather in Kochi');
      const events = await ok(merchant.test.get('/events?limit=100'));
      assert.ok(events.data.some((e: any) => e.type === 'payment.paid' && e.data.id === p.id));
    } finally {
      await shop.close();
    }
  });
});

describe('amounts below a cent', () => {
  test('$0.001, $0.01 and $1: exact USDC units kept, whole cents carried over in price_amount and the balance', async () => {
    const merchant = await t.merchant();
    const to = (await ok(merchant.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
    const settle = async (units: bigint) => {
      const b = await body({ value: units, amount: units.toString(), to, payTo: to });
      const r = await ok(merchant.test.post('/x402/settle', b));
      assert.equal(r.success, true, JSON.stringify(r));
      return ok(merchant.test.get(`/payments/${r.extra.payment_id}`));
    };
    const tenth = await settle(1_000n);
    assert.equal(tenth.price_amount, 0, '$0.001 crosses no cent');
    assert.equal(tenth.x402.amount_usd, '0.001');
    assert.equal(tenth.attempts[0].deposits[0].amount, '1000');
    const cent = await settle(10_000n);
    assert.equal(cent.price_amount, 1, '$0.011 in total: one cent');
    const dollar = await settle(1_000_000n);
    assert.equal(dollar.price_amount, 100, '$1.011 in total: 101 cents');
    for (let i = 0; i < 9; i++) await settle(1_000n);
    const list = await ok(merchant.test.get('/payments?source=x402&limit=100'));
    const cents = list.data.reduce((s: number, p: any) => s + p.price_amount, 0);
    assert.equal(cents, 102, '$1.020 in total: the ten tenths of a cent made one cent');
    const balance = await ok(merchant.test.get('/balance'));
    const usdc = balance.custody.find((c: any) => c.token === 'base:usdc');
    assert.equal(usdc.amount, '1020000', 'the exact USDC units');
    assert.ok(balance.available_usd_cents <= 102 && balance.available_usd_cents >= 100, 'cents less the fee');

    // The month's statement counts them like any payment, in the whole cents they carried.
    const statement = await ok(merchant.test.get(`/statements/${t.clock.now().toISOString().slice(0, 7)}`));
    assert.deepEqual(statement.payments, { count: 12, gross_usd_cents: 102 });
    assert.equal(statement.credits.value_usd_cents, 102);
    assert.equal(statement.closing_balance_usd_cents, balance.available_usd_cents);
    assert.equal(statement.reconciliation_gap_usd_cents, 0);
    // And the $1 one takes a GST tax invoice like any paid payment.
    await ok(merchant.test.patch('/account', { tax_profile: TAX_PROFILE }));
    const invoice = await ok(
      merchant.test.post(`/payments/${dollar.id}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83.25' }),
      201,
    );
    assert.equal(invoice.usd_cents, 100);
    assert.equal(invoice.total, '83.25');
    assert.equal(invoice.payment_id, dollar.id);
  });
});

describe('the dashboard', () => {
  test('the payments page filters x402 payments and shows who paid, escaped', async () => {
    const merchant = await t.merchant();
    const to = (await ok(merchant.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
    const b0 = await body({ to, payTo: to });
    b0.paymentPayload.resource.description = '<img src=x onerror="alert(1)">';
    const settled = await ok(merchant.test.post('/x402/settle', b0));
    await ok(
      merchant.test.post('/payments', { price_amount: 500, price_currency: 'USD', order_id: 'checkout-1' }),
      201,
    );
    const browser = await launchBrowser();
    try {
      const u = await createUser(t.kasse, merchant.id, 'x402-owner@example.com', 'owner');
      const { page, context } = await browser.open('desktop');
      await setUpAccount(page, u.setupUrl, t.clock, { email: 'x402-owner@example.com', id: u.id });
      const base = t.urls.checkout;
      await page.goto(`${base}/dashboard/test/payments`);
      assert.equal(await page.locator('tbody tr').count(), 2);
      await page.getByLabel('Paid by').selectOption('x402');
      await page.getByRole('button', { name: 'Filter' }).click();
      assert.deepEqual(await page.locator('tbody td[data-label=Order]').allTextContents(), [
        `x402:${(await t.kasse.db.selectFrom('x402_settlements').select('id').where('payment_id', '=', settled.extra.payment_id).executeTakeFirstOrThrow()).id}`,
      ]);
      await page.goto(`${base}/dashboard/test/payments/${settled.extra.payment_id}`);
      const facts = await page.locator('.d-facts').textContent();
      assert.match(
        facts!,
        new RegExp(`x402 client ${agent.address} for http://shop.test/weather \\(0.001 USD, simulated\\)`),
      );
      assert.equal(await page.locator('.d-facts img').count(), 0, 'the description is text');
      const bad = await page.goto(`${base}/dashboard/test/payments?source=card`);
      assert.equal(bad!.status(), 400);
      await context.close();
    } finally {
      await browser.close();
    }
  });
});
