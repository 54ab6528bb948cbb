/**
 * Kasse as x402 facilitator in test mode with networks on the simulator (the default `npm start`): the official
 * packages end to end (Express and Hono APIs with their `paymentMiddleware`, agents with `wrapFetchWithPayment`),
 * verification real (EIP-712 signatures recovered, recipient, asset, amount, window, replay) and settlement simulated
 * (said so in the answer's extra and on the Payment). Every settlement is a `paid` Payment with `source: "x402"`,
 * credited, announced by `payment.paid` and listed with `source=x402`; cents-based figures carry sub-cent amounts over
 * (docs/x402.md) at $0.001, $0.01 and $1. Refusals: the official `invalidReason` codes; keys of the other mode and
 * missing keys get the Error body (403, 401).
 *
 * Under agents' traffic: one payment buys one response (one PAYMENT-SIGNATURE sent ten times at once through
 * `@x402/hono` in front of two Kasse apps on one database — separate pools, caches and limiters, as two processes
 * have — is served once), retries are safe through `payment-identifier` (the extension's own helpers), amounts are
 * bounded and a settlement that cannot be recorded ends failed, 300 paid calls a minute pass the facilitator's own
 * limit, and the discovery catalogue (`withBazaar` of `@x402/extensions`) lists what merchants' servers declared.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { axeViolations, describeViolations } from '../harness/axe.ts';
import { launchBrowser } from '../harness/browser.ts';
import { createUser, csrfOf, post, setUpAccount } from '../harness/dashboard.ts';
import { ApiClient, startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError, eventually, ok } from '../harness/expect.ts';
import { recordedLog } from '../harness/log.ts';
import { agentClient, agentFetch, paymentSignature, startHonoShop, startShop, type Shop } from './agents.ts';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { declareDiscoveryExtension, validateDiscoveryExtension, withBazaar } from '@x402/extensions/bazaar';
import {
  appendPaymentIdentifierToExtensions,
  declarePaymentIdentifierExtension,
  extractPaymentIdentifier,
  generatePaymentId,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier';
import { x402Commands } from '../../src/cli/commands/x402.ts';
import { X402_RATE_LIMIT_DEFAULT } from '../../src/config.ts';
import { IDENTIFIER_PARAM } from '../../src/modules/x402/identifier.ts';
import { RESUME_AFTER_MS, SETTLE_WAIT_MS } from '../../src/modules/x402/service.ts';
import { MINUTE, SECOND } from '../../src/core/clock.ts';
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

const { log, lines: logLines } = recordedLog('warn');

before(async () => {
  t = await startTestKasse({ log });
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
    // Each token's EIP-712 domain from the networks file, as @x402/evm names it: Arbitrum Sepolia's is "USD Coin".
    const arbitrum = s.kinds.find((k: any) => k.network === 'eip155:421614');
    assert.deepEqual([arbitrum.extra.name, arbitrum.extra.version], ['USD Coin', '2']);
    assert.deepEqual(s.extensions, ['bazaar', 'payment-identifier']);
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

  test('settle is simulated and answers success once; a later settle of the authorization is refused as used', async () => {
    const b = await body();
    const first = await ok(m.test.post('/x402/settle', b));
    assert.equal(first.success, true);
    assert.equal(first.network, NETWORK);
    assert.equal(first.payer, agent.address);
    assert.match(first.transaction, /^0xsim[0-9a-f]{61}$/);
    assert.equal(first.extra.simulated, true);
    // As the official facilitator: the nonce is used, so a second settle fails (and credits nothing).
    const again = await ok(m.test.post('/x402/settle', b));
    assert.deepEqual(again, {
      success: false,
      errorReason: 'invalid_exact_evm_nonce_already_used',
      errorMessage: again.errorMessage,
      payer: agent.address,
      transaction: '',
      network: NETWORK,
    });
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
    // Refunded like any payment for the exact amount; by default to the address that paid.
    const refund = await ok(m.test.post(`/payments/${p.id}/refund`, {}), 202);
    assert.equal(refund.amount, '1000');
    assert.equal(refund.destination, agent.address);
  });
});

describe('a settlement with its own sale', () => {
  test("the Payment takes the sale's order id, description and metadata; a second settle makes no second one", async () => {
    const b = await body();
    const sale = { orderId: 'weather-7', description: 'Weather report', metadata: { link_id: 'lnk_test' } };
    const first = await t.kasse.x402.settle({ mode: 'test', merchantId: m.id }, b, sale);
    assert.equal(first.success, true);
    const p = await ok(m.test.get(`/payments/${(first.extra as any).payment_id}`));
    assert.equal(p.status, 'paid');
    assert.equal(p.source, 'x402');
    assert.equal(p.order_id, 'weather-7');
    assert.equal(p.description, 'Weather report');
    assert.deepEqual(p.metadata, { link_id: 'lnk_test' });
    const again = await t.kasse.x402.settle({ mode: 'test', merchantId: m.id }, b, { ...sale, orderId: 'weather-8' });
    assert.equal(again.errorReason, 'invalid_exact_evm_nonce_already_used', 'refused as used');
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

/** Why the official middleware refused a paid request: the settle failure it passes on, else the verify refusal. */
function refusalOf(res: Response): string | undefined {
  const settled = res.headers.get('payment-response');
  if (settled) return decodePaymentResponseHeader(settled).errorReason;
  const required = res.headers.get('payment-required');
  return required ? decodePaymentRequiredHeader(required).error : undefined;
}

/** A merchant of its own and its x402 address on Base Sepolia. */
async function freshMerchant() {
  const merchant = await t.merchant();
  return { merchant, to: (await ok(merchant.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to as string };
}

/**
 * What an earlier version left behind for the merchant: a settlement of an amount no Payment can carry, claimed and
 * pending since before the workers' resumption looks at it. Answers its id.
 */
async function leftPending(merchant: TestMerchant, to: string): Promise<string> {
  const units = 2n ** 63n;
  const b = await body({ value: units, amount: units.toString(), to, payTo: to });
  const id = `x4s_${merchant.id.slice(4, 24)}STUCK1`;
  await t.kasse.db
    .insertInto('x402_settlements')
    .values({
      id,
      merchant_id: merchant.id,
      mode: 'test',
      chain: 'base',
      network: NETWORK,
      auth_key: `stuck:${b.paymentPayload.payload.authorization.nonce}`,
      payer: agent.address,
      pay_to: to,
      token: 'base:usdc',
      amount: units.toString(),
      resource: 'http://shop.test/weather',
      description: null,
      request: JSON.stringify({ requirements: b.paymentRequirements, payload: b.paymentPayload.payload }),
      status: 'pending',
      simulated: true,
      created_at: new Date(t.clock.now().getTime() - RESUME_AFTER_MS - 1000),
    })
    .execute();
  return id;
}

/** A Hono API of the merchant's on Base Sepolia at $0.001 a call (other options as given), Kasse its facilitator. */
const honoShop = (merchant: TestMerchant, to: string, o: Partial<Parameters<typeof startHonoShop>[0]> = {}) =>
  startHonoShop({ apiBase: t.urls.test, key: merchant.testKey, network: NETWORK, payTo: to, price: '$0.001', ...o });

const x402Payments = async (merchant: TestMerchant) =>
  (await ok(merchant.test.get('/payments?source=x402&limit=100'))).data as any[];

describe('one payment buys one response', () => {
  test('one PAYMENT-SIGNATURE sent ten times at once through @x402/hono to two Kasse apps: one 200, one payment', async () => {
    // A second Kasse on the same database: its own pool, key cache, limiter leases and address book, as a second
    // process has; nothing is shared but PostgreSQL.
    const second = await startTestKasse({ databaseUrl: t.databaseUrl });
    const shops: Shop[] = [];
    try {
      second.clock.set(t.clock.now());
      const { merchant, to } = await freshMerchant();
      for (const apiBase of [t.urls.test, second.urls.test]) shops.push(await honoShop(merchant, to, { apiBase }));
      const header = await paymentSignature(agent, `${shops[0]!.url}/weather`);
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          fetch(`${shops[i % 2]!.url}/weather`, { headers: { 'payment-signature': header } }),
        ),
      );
      const served = answers.filter((r) => r.status === 200);
      assert.equal(served.length, 1, `statuses ${answers.map((r) => r.status).join(' ')}`);
      assert.deepEqual(await served[0]!.json(), { city: 'Kochi', sky: 'rain' });
      for (const r of answers.filter((a) => a.status !== 200)) {
        assert.equal(r.status, 402);
        assert.equal(refusalOf(r), 'invalid_exact_evm_nonce_already_used');
      }
      // And later, through either process, it buys nothing more.
      for (const shop of shops) {
        const late = await fetch(`${shop.url}/weather`, { headers: { 'payment-signature': header } });
        assert.equal(late.status, 402);
        assert.equal(refusalOf(late), 'invalid_exact_evm_nonce_already_used');
      }
      const paid = await x402Payments(merchant);
      assert.equal(paid.length, 1, 'one payment');
      const usdc = (await ok(merchant.test.get('/balance'))).custody.find((c: any) => c.token === 'base:usdc');
      assert.equal(usdc.amount, '1000', 'credited once');
    } finally {
      for (const shop of shops) await shop.close();
      await second.close();
    }
  });
});

describe('retries through payment-identifier', () => {
  test('the same identifier and payment after a lost answer: the same answer, one payment; another payment under it: refused', async () => {
    const { merchant, to } = await freshMerchant();
    const shop = await honoShop(merchant, to, {
      extensions: { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension() },
    });
    try {
      const id = generatePaymentId();
      const url = `${shop.url}/weather`;
      const header = await paymentSignature(agent, url, { paymentId: () => id });
      assert.equal(extractPaymentIdentifier(decodePaymentSignatureHeader(header)), id, 'the client named its payment');
      const first = await fetch(url, { headers: { 'payment-signature': header } });
      assert.equal(first.status, 200);
      const receipt = decodePaymentResponseHeader(first.headers.get('payment-response')!);
      // The answer was lost on the way: the client sends the same payment again.
      const retry = await fetch(url, { headers: { 'payment-signature': header } });
      assert.equal(retry.status, 200, refusalOf(retry));
      assert.deepEqual(decodePaymentResponseHeader(retry.headers.get('payment-response')!), receipt, 'the same answer');
      assert.equal((await x402Payments(merchant)).length, 1, 'one payment');

      // Another payment (a new authorization) under the same identifier is refused, and pays nothing.
      const other = await paymentSignature(agent, url, { paymentId: () => id });
      const refused = await fetch(url, { headers: { 'payment-signature': other } });
      assert.equal(refused.status, 402);
      const payload = decodePaymentSignatureHeader(other);
      const conflict = { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted };
      for (const path of ['/x402/verify', '/x402/settle'])
        assertError(await merchant.test.post(path, conflict), 409, 'idempotency_conflict', IDENTIFIER_PARAM);
      assert.equal((await x402Payments(merchant)).length, 1, 'still one payment');

      // A malformed identifier is the client's error, in the Error body.
      const bad = structuredClone(conflict) as any;
      bad.paymentPayload.extensions[PAYMENT_IDENTIFIER].info.id = 'short';
      assertError(await merchant.test.post('/x402/settle', bad), 400, 'invalid_request', IDENTIFIER_PARAM);
    } finally {
      await shop.close();
    }
  });
});

describe('a settle that waits for another', () => {
  test('a retry while the first settle is still pending waits on the clock and for the settlement to end, in any process', async () => {
    const { merchant, to } = await freshMerchant();
    const evm = t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const { settle, settlement } = evm;
    // A chain that has not confirmed the transfer yet: the first settle can only answer settlement_pending.
    const unconfirmed = async () => ({ status: 'pending' as const, transaction: '0xnotyet' });
    evm.settle = unconfirmed;
    evm.settlement = unconfirmed;
    // Another process on the same database and clock: it ends the settlement while a request here waits for it.
    const second = await startTestKasse({ databaseUrl: t.databaseUrl, clock: t.clock });
    try {
      const pendingSettle = async () => {
        const signed = await body({ to, payTo: to });
        const extensions = appendPaymentIdentifierToExtensions(
          { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension() },
          generatePaymentId(),
        );
        const b = { ...signed, paymentPayload: { ...signed.paymentPayload, extensions } };
        const first = await ok(merchant.test.post('/x402/settle', b));
        assert.deepEqual([first.success, first.errorReason], [false, 'settlement_pending']);
        // The transaction it waits for is named: the official middleware asks again only for a pending one that has it.
        assert.equal(first.transaction, '0xnotyet');
        const row = await t.kasse.db
          .selectFrom('x402_settlements')
          .select(['id', 'status'])
          .where('payment_identifier', '=', extractPaymentIdentifier(b.paymentPayload as any))
          .executeTakeFirstOrThrow();
        assert.equal(row.status, 'pending');
        return { b, id: row.id };
      };
      /** The same payment sent again under its identifier, once that request waits on the clock. */
      const retried = async (b: object) => {
        const waits = t.clock.waits();
        const answer = merchant.test.post('/x402/settle', b);
        await eventually('the retry to wait on the clock', () => t.clock.waits() > waits, { intervalMs: 5 });
        return { answer };
      };
      /** The retry's answer, which must come of `what` (bounded far below a 60 seconds' wait in real time). */
      const answered = async (answer: Promise<{ status: number; body: any }>, what: string) => {
        let got: { status: number; body: any } | null = null;
        void answer.then((r) => (got = r));
        const r = await eventually(what, () => got, { timeoutMs: 20_000, intervalMs: 10 });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body;
      };

      // Ended in the other process (its workers record the transfer once it landed): the retry here is told at once.
      const one = await pendingSettle();
      const waiting = await retried(one.b);
      await t.kasse.db
        .updateTable('x402_settlements')
        .set({ created_at: new Date(t.clock.millis() - RESUME_AFTER_MS - SECOND) })
        .where('id', '=', one.id)
        .execute();
      assert.equal(await second.kasse.x402.resume(), 1);
      const answer = await answered(waiting.answer, 'the retry to answer once the other process recorded the payment');
      assert.equal(answer.success, true, JSON.stringify(answer));
      const paid = await ok(merchant.test.get(`/payments/${answer.extra.payment_id}`));
      assert.equal(paid.status, 'paid');

      // Nothing ends it: the retry answers settlement_pending when the clock reaches its deadline.
      const two = await pendingSettle();
      const late = await retried(two.b);
      t.clock.advance(SETTLE_WAIT_MS);
      const pending = await answered(late.answer, 'the retry to answer once the clock reached its deadline');
      assert.deepEqual([pending.success, pending.errorReason], [false, 'settlement_pending']);
      assert.equal((await x402Payments(merchant)).length, 1);
    } finally {
      evm.settle = settle;
      evm.settlement = settlement;
      await second.close();
    }
  });
});

describe('a settlement still pending when the first settle answers', () => {
  test('@x402/hono asks again for the transaction it names and serves the request once the transfer landed', async () => {
    const { merchant, to } = await freshMerchant();
    const evm = t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const { settle, settlement } = evm;
    // The transfer is submitted, its confirmations come only after the first settle answered.
    let landed: Awaited<ReturnType<typeof settle>> | null = null;
    evm.settle = async (...args) => {
      landed = await settle.apply(evm, args);
      return { status: 'pending' as const, transaction: landed.transaction! };
    };
    evm.settlement = async (...args) => landed ?? settlement.apply(evm, args);
    const shop = await honoShop(merchant, to);
    try {
      const url = `${shop.url}/weather`;
      const waits = t.clock.waits();
      let done = false;
      const answer = fetch(url, { headers: { 'payment-signature': await paymentSignature(agent, url) } }).finally(
        () => (done = true),
      );
      // The middleware's second settle follows the transfer on Kasse's clock until it lands.
      await eventually('the second settle to wait for the transfer', () => done || t.clock.waits() > waits, {
        intervalMs: 5,
      });
      t.clock.advance(SETTLE_WAIT_MS);
      const res = await answer;
      assert.equal(res.status, 200, refusalOf(res));
      const receipt = decodePaymentResponseHeader(res.headers.get('payment-response')!);
      assert.equal(receipt.success, true);
      assert.match(receipt.transaction, /^0xsim/);
      const paid = await x402Payments(merchant);
      assert.deepEqual(
        paid.map((p) => [p.status, p.x402.transaction]),
        [['paid', receipt.transaction]],
      );
    } finally {
      evm.settle = settle;
      evm.settlement = settlement;
      await shop.close();
    }
  });
});

describe('amounts', () => {
  test('beyond $1,000,000 verify and settle refuse with invalid_payment_requirements; $1,000,000 is recorded', async () => {
    const { merchant, to } = await freshMerchant();
    const signed = (units: bigint) => body({ value: units, amount: units.toString(), to, payTo: to });
    for (const units of [2n ** 63n, 100_000_000_000_001n, 1_000_000_000_001n]) {
      const b = await signed(units);
      const v = await ok(merchant.test.post('/x402/verify', b));
      assert.equal(v.invalidReason, 'invalid_payment_requirements', units.toString());
      const s = await merchant.test.post('/x402/settle', b);
      assert.equal(s.status, 200, 'a SettleResponse, not an error');
      assert.equal(s.body.success, false);
      assert.equal(s.body.errorReason, 'invalid_payment_requirements');
    }
    // What nobody foresaw (here: the family's check throwing) is still a SettleResponse.
    const evm = t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const verify = evm.verify;
    evm.verify = async () => {
      throw new Error('unforeseen');
    };
    try {
      const s = await merchant.test.post('/x402/settle', await signed(1000n));
      assert.equal(s.status, 200);
      assert.deepEqual([s.body.success, s.body.errorReason], [false, 'unexpected_settle_error']);
    } finally {
      evm.verify = verify;
    }
    const largest = await ok(merchant.test.post('/x402/settle', await signed(1_000_000_000_000n)));
    assert.equal(largest.success, true, JSON.stringify(largest));
    const p = await ok(merchant.test.get(`/payments/${largest.extra.payment_id}`));
    assert.equal(p.price_amount, 100_000_000);
    assert.equal(p.x402.amount_usd, '1000000');
    assert.equal((await x402Payments(merchant)).length, 1);
  });

  test('a settlement left pending that cannot be recorded ends failed with its reason and is not retried', async () => {
    const { merchant, to } = await freshMerchant();
    const id = await leftPending(merchant, to);
    assert.ok((await t.kasse.x402.resume()) >= 1);
    const row = await t.kasse.db
      .selectFrom('x402_settlements')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.match(row.error!, /^unexpected_settle_error: the transfer 0xsim\w+ could not be recorded as a payment/);
    // Never looked at again.
    await t.kasse.x402.resume();
    const after = await t.kasse.db
      .selectFrom('x402_settlements')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(after, row);
    assert.equal((await x402Payments(merchant)).length, 0);
    // The operator sees it in `kasse x402 settlements`.
    const listed = (await x402Commands[0]!.run(
      t.kasse,
      { merchant: merchant.id, mode: 'test', status: 'failed', json: true },
      [],
    )) as any[];
    assert.deepEqual(
      listed.map((l) => [l.id, l.status, l.error_reason]),
      [[id, 'failed', 'unexpected_settle_error']],
    );
    assert.match(listed[0].error_message, /could not be recorded as a payment/);
  });

  test("a settlement whose network stops being offered before it is recorded ends failed: the coin's decimals and the address's index are not guessed", async () => {
    const { merchant, to } = await freshMerchant();
    const evm = t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const { settle, kinds } = evm;
    // The transfer lands; then the network leaves the configuration (and the cached list of kinds runs out).
    evm.settle = async (...args) => {
      const landed = await settle.apply(evm, args);
      evm.kinds = async () => [];
      t.clock.advance(MINUTE);
      return landed;
    };
    try {
      const s = await ok(merchant.test.post('/x402/settle', await body({ to, payTo: to })));
      assert.deepEqual([s.success, s.errorReason], [false, 'unexpected_settle_error'], JSON.stringify(s));
    } finally {
      evm.settle = settle;
      evm.kinds = kinds;
      t.clock.advance(MINUTE);
    }
    const row = await t.kasse.db
      .selectFrom('x402_settlements')
      .selectAll()
      .where('merchant_id', '=', merchant.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.match(row.error!, /could not be recorded as a payment \(eip155:84532 is no longer offered\)$/);
    assert.equal((await x402Payments(merchant)).length, 0, 'no payment recorded with a guessed coin or address');
    assert.ok(
      logLines.some((l) => l.msg === 'x402 settlement cannot be recorded' && l.settlementId === row.id),
      'logged with the settlement id',
    );
  });
});

describe("the facilitator's own limit", () => {
  test('300 paid calls in one minute through @x402/hono are all served; the API keeps its 60 a minute', async () => {
    const { merchant, to } = await freshMerchant();
    const shop = await honoShop(merchant, to);
    try {
      // The fake clock stands still: every call falls in one rate-limit minute. The official client signs 300
      // payments for the route's 402 answer; each goes through the middleware's verify and settle.
      const window = t.clock.now();
      const url = `${shop.url}/weather`;
      const required = decodePaymentRequiredHeader((await fetch(url)).headers.get('payment-required')!);
      const client = agentClient(agent);
      const signatures = await Promise.all(
        Array.from({ length: 300 }, async () =>
          encodePaymentSignatureHeader(await client.createPaymentPayload(required)),
        ),
      );
      const statuses: number[] = [];
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let s = signatures.pop(); s; s = signatures.pop())
            statuses.push((await fetch(url, { headers: { 'payment-signature': s } })).status);
        }),
      );
      assert.equal(t.clock.now().getTime(), window.getTime());
      assert.deepEqual(
        statuses.filter((s) => s !== 200),
        [],
        'every paid call served',
      );
      assert.equal(statuses.length, 300);
      const supported = await m.test.get('/x402/supported');
      assert.equal(supported.headers.get('ratelimit-limit'), String(X402_RATE_LIMIT_DEFAULT));
      // None of it counted against the API's limit, which stays the spec's.
      const list = await merchant.test.get('/payments?source=x402&limit=1');
      assert.equal(list.headers.get('ratelimit-limit'), '60');
      assert.equal(list.headers.get('ratelimit-remaining'), '59');
    } finally {
      await shop.close();
    }
  });
});

describe('discovery', () => {
  const catalogue = (base: string) => withBazaar(new HTTPFacilitatorClient({ url: `${base}/x402` })).extensions.bazaar;

  test('lists paid resources declared through the bazaar extension and agent-payable links, per mode, in pages', async () => {
    const { merchant, to } = await freshMerchant();
    const declaration = declareDiscoveryExtension({
      input: { city: 'Kochi' },
      inputSchema: { properties: { city: { type: 'string' } }, required: ['city'] },
      output: { example: { city: 'Kochi', sky: 'rain' } },
    });
    const shop = await honoShop(merchant, to, { price: '$0.002', extensions: declaration, bazaar: true });
    try {
      const resource = `${shop.url}/weather`;
      const mine = async (q: Parameters<ReturnType<typeof catalogue>['listResources']>[0] = {}) =>
        (await catalogue(t.urls.test).listResources({ payTo: to, limit: 100, ...q })).items;
      // Verified but not paid: not listed (a payload costs nothing to make).
      const header = await paymentSignature(agent, `${resource}?city=Kochi`);
      const payload = decodePaymentSignatureHeader(header);
      const verified = await ok(
        merchant.test.post('/x402/verify', {
          x402Version: 2,
          paymentPayload: payload,
          paymentRequirements: payload.accepted,
        }),
      );
      assert.equal(verified.isValid, true);
      assert.deepEqual(await mine(), []);

      const paid = await fetch(`${resource}?city=Kochi`, { headers: { 'payment-signature': header } });
      assert.equal(paid.status, 200, refusalOf(paid));
      await t.kasse.x402.catalogued();
      const link = await ok(
        merchant.test.post('/links', { kind: 'fixed', title: 'Field guide PDF', amount_usd_cents: 250 }),
        201,
      );
      const items = await mine({ type: 'http' });
      assert.deepEqual(items.map((i) => i.resource).sort(), [resource, link.url].sort());
      const declared = items.find((i) => i.resource === resource)!;
      assert.equal(declared.type, 'http');
      assert.equal(declared.x402Version, 2);
      assert.equal(declared.description, 'Weather in Kochi');
      assert.equal(declared.mimeType, 'application/json');
      assert.deepEqual(
        declared.accepts.map((a) => [a.network, a.amount, a.payTo, a.asset]),
        [[NETWORK, '2000', to, USDC]],
      );
      const bazaar = declared.extensions!.bazaar as any;
      assert.deepEqual(bazaar.info.input, { type: 'http', method: 'GET', queryParams: { city: 'Kochi' } });
      assert.deepEqual(bazaar.info.output.example, { city: 'Kochi', sky: 'rain' });
      const listedLink = items.find((i) => i.resource === link.url)!;
      assert.equal(listedLink.description, 'Field guide PDF');
      assert.ok(listedLink.accepts.some((a) => a.network === NETWORK && a.amount === '2500000' && a.payTo === to));
      // Every item's declaration holds against its own schema, by the extension's validator.
      for (const i of items) assert.deepEqual(validateDiscoveryExtension(i.extensions!.bazaar as any), { valid: true });

      // Pages: limit and offset, with the total.
      const all = await catalogue(t.urls.test).listResources({ payTo: to, limit: 1 });
      assert.deepEqual(all.pagination, { limit: 1, offset: 0, total: 2 });
      const second = await catalogue(t.urls.test).listResources({ payTo: to, limit: 1, offset: 1 });
      assert.deepEqual(
        [...all.items, ...second.items].map((i) => i.resource).sort(),
        items.map((i) => i.resource).sort(),
      );
      assert.deepEqual(await mine({ type: 'mcp' }), []);
      assert.deepEqual(await mine({ network: 'eip155:1' }), []);
      assert.equal((await mine({ network: NETWORK })).length, 2);
      // Test mode's catalogue only: the live API lists none of it.
      const live = await catalogue(t.urls.live).listResources({ limit: 100 });
      assert.ok(!live.items.some((i) => i.resource === resource || i.resource === link.url));

      // Not paid for 30 days (KASSE_X402_DISCOVERY_DAYS): dropped; paid again: back.
      const now = t.clock.now();
      t.clock.set(new Date(now.getTime() + 31 * 24 * 3600_000));
      try {
        assert.deepEqual(await mine(), []);
      } finally {
        t.clock.set(now);
      }
      assert.equal((await mine()).length, 2);
    } finally {
      await shop.close();
    }
  });
});

describe('discovery lists what merchants declare', () => {
  const mine = async (to: string) =>
    (
      await withBazaar(new HTTPFacilitatorClient({ url: `${t.urls.test}/x402` })).extensions.bazaar.listResources({
        payTo: to,
      })
    ).items.map((i) => i.resource);
  /** A paid call through `shop` whose payload the payer changed with `edit` (extensions are not signed). */
  const paidWith = async (url: string, edit: (p: any) => void) => {
    const payload = decodePaymentSignatureHeader(await paymentSignature(agent, url));
    edit(payload);
    const res = await fetch(url, { headers: { 'payment-signature': encodePaymentSignatureHeader(payload) } });
    assert.equal(res.status, 200, refusalOf(res));
    await t.kasse.x402.catalogued();
  };
  const declaration = () => {
    const bazaar = declareDiscoveryExtension({ output: { example: { free: 'money' } } }).bazaar!;
    (bazaar.info.input as { method?: string }).method = 'GET';
    return bazaar;
  };

  test("a payer's own declaration on a route that declares none, or for another URL, lists nothing", async () => {
    const { merchant, to } = await freshMerchant();
    const plain = await honoShop(merchant, to);
    const declaring = await honoShop(merchant, to, {
      extensions: declareDiscoveryExtension({ output: { example: { city: 'Kochi' } } }),
      bazaar: true,
    });
    try {
      // The route declares nothing; the payer adds a declaration (and the middleware lets extensions it did not
      // advertise through).
      await paidWith(`${plain.url}/weather`, (p) => {
        p.extensions = { ...p.extensions, bazaar: declaration() };
      });
      // The route declares; the payer names another URL as the resource paid for.
      await paidWith(`${declaring.url}/weather`, (p) => {
        p.resource = { ...p.resource, url: 'http://127.0.0.1:9/free-money' };
      });
      assert.equal((await x402Payments(merchant)).length, 2, 'both paid');
      assert.deepEqual(await mine(to), [], 'neither listed');
      // What the declaring server advertises is listed once paid as it is.
      await paidWith(`${declaring.url}/weather`, () => {});
      assert.deepEqual(await mine(to), [`${declaring.url}/weather`]);
    } finally {
      await plain.close();
      await declaring.close();
    }
  });
});

describe('discovery of a settlement recorded later', () => {
  test('a declared resource whose settle answered pending is listed once the workers record its payment', async () => {
    const { merchant, to } = await freshMerchant();
    const evm = t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const { settle } = evm;
    // The request's settle answers pending; the workers' settle finds the transfer landed.
    let calls = 0;
    evm.settle = async (...args) => {
      const landed = await settle.apply(evm, args);
      return ++calls === 1 ? { status: 'pending' as const, transaction: landed.transaction } : landed;
    };
    const declaration = declareDiscoveryExtension({ output: { example: { city: 'Kochi', sky: 'rain' } } });
    const shop = await honoShop(merchant, to, { extensions: declaration, bazaar: true });
    try {
      const resource = `${shop.url}/weather`;
      const payload = decodePaymentSignatureHeader(await paymentSignature(agent, resource));
      const b = { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted };
      const first = await ok(merchant.test.post('/x402/settle', b));
      assert.equal(first.errorReason, 'settlement_pending');
      const listed = async () =>
        (
          await withBazaar(new HTTPFacilitatorClient({ url: `${t.urls.test}/x402` })).extensions.bazaar.listResources({
            payTo: to,
          })
        ).items.map((i) => i.resource);
      assert.deepEqual(await listed(), [], 'not paid yet');
      await t.kasse.db
        .updateTable('x402_settlements')
        .set({ created_at: new Date(t.clock.millis() - RESUME_AFTER_MS - SECOND) })
        .where('merchant_id', '=', merchant.id)
        .execute();
      assert.ok((await t.kasse.x402.resume()) >= 1);
      await t.kasse.x402.catalogued();
      assert.equal((await x402Payments(merchant)).length, 1);
      assert.deepEqual(await listed(), [resource]);
    } finally {
      evm.settle = settle;
      await shop.close();
    }
  });
});

describe('the dashboard', () => {
  test('payments filter x402 ones and show who paid, escaped; Agents shows failed settlements and turns resources off', async () => {
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
    let shop: Shop | undefined;
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

      // Agents: the settlement that could not be recorded, with why; the catalogue with a switch per resource.
      const stuck = await leftPending(merchant, to);
      await t.kasse.x402.resume();
      const declaration = declareDiscoveryExtension({ output: { example: { days: 3 } } });
      shop = await honoShop(merchant, to, { extensions: declaration, bazaar: true });
      const forecast = `${shop.url}/weather`;
      assert.equal((await agentFetch(agent)(`${forecast}?days=3`)).status, 200);
      await t.kasse.x402.catalogued();
      const link = await ok(
        merchant.test.post('/links', { kind: 'fixed', title: 'Guide <b>PDF</b>', amount_usd_cents: 300 }),
        201,
      );
      // Neither listed by the catalogue nor said to be by the page: one expired, one not paid for 31 days.
      const expired = await ok(
        merchant.test.post('/links', { kind: 'fixed', title: 'Old map', amount_usd_cents: 300 }),
        201,
      );
      const stale = await ok(
        merchant.test.post('/links', { kind: 'fixed', title: 'Old chart', amount_usd_cents: 300 }),
        201,
      );
      const longAgo = new Date(t.clock.millis() - 31 * 24 * 3600_000);
      await t.kasse.db.updateTable('links').set({ expires_at: t.clock.now() }).where('id', '=', expired.id).execute();
      await t.kasse.db
        .updateTable('links')
        .set({ created_at: longAgo, updated_at: longAgo })
        .where('id', '=', stale.id)
        .execute();
      const listed = async () =>
        (
          await withBazaar(new HTTPFacilitatorClient({ url: `${t.urls.test}/x402` })).extensions.bazaar.listResources({
            payTo: to,
          })
        ).items.map((i) => i.resource);
      assert.deepEqual((await listed()).sort(), [forecast, link.url].sort());
      await page.getByRole('link', { name: 'Agents' }).click();
      const violations = await axeViolations(page);
      assert.deepEqual(violations, [], describeViolations(violations));
      const failed = page.locator('[data-panel=failed] tbody tr');
      assert.equal(await failed.count(), 1);
      assert.match(
        (await failed.textContent())!,
        /unexpected_settle_error: the transfer 0xsim\w+ could not be recorded/,
      );
      assert.match((await failed.textContent())!, /9223372036854775808/);
      const resource = page.locator('[data-catalogue] tr[data-resource]');
      assert.ok((await resource.textContent())!.includes(`GET ${forecast}`));
      assert.match((await resource.textContent())!, /listed/);
      const linkRow = page.locator(`[data-catalogue] tr[data-link="${link.id}"]`);
      assert.match((await linkRow.textContent())!, /Guide <b>PDF<\/b>.*listed/, 'the title is text');
      const stateOf = async (id: string) =>
        page.locator(`[data-catalogue] tr[data-link="${id}"] td[data-label=State]`).textContent();
      assert.equal(await stateOf(expired.id), 'expired');
      assert.equal(await stateOf(stale.id), 'not paid by an agent for 30 days');
      await resource.getByRole('button', { name: 'Turn off' }).click();
      await page.waitForLoadState('domcontentloaded');
      assert.match((await page.locator('[data-catalogue] tr[data-resource]').textContent())!, /turned off/);
      await page
        .locator(`[data-catalogue] tr[data-link="${link.id}"]`)
        .getByRole('button', { name: 'Turn off' })
        .click();
      await page.waitForLoadState('domcontentloaded');
      assert.deepEqual(await listed(), []);
      await page.locator('[data-catalogue] tr[data-resource]').getByRole('button', { name: 'Turn on' }).click();
      await page.waitForLoadState('domcontentloaded');
      assert.deepEqual(await listed(), [forecast]);
      const audit = await t.kasse.audit.list(merchant.id, { action: 'x402.resource.' });
      assert.deepEqual(
        audit.data.map((a) => a.action),
        ['x402.resource.publish', 'x402.resource.unpublish', 'x402.resource.unpublish'],
      );
      assert.ok(stuck);
      await context.close();

      // A viewer reads the page and has no switch; the server refuses one posted all the same.
      const v = await createUser(t.kasse, merchant.id, 'x402-viewer@example.com', 'viewer');
      const viewer = await browser.open('desktop');
      await setUpAccount(viewer.page, v.setupUrl, t.clock, { email: 'x402-viewer@example.com', id: v.id });
      await viewer.page.goto(`${base}/dashboard/test/agents`);
      assert.equal(await viewer.page.locator('[data-catalogue] button').count(), 0);
      const refused = await post(viewer.page, `${base}/dashboard/test/agents/links/${link.id}/publish`, {
        _csrf: await csrfOf(viewer.page),
        published: '1',
      });
      assert.equal(refused.status, 403);
      assert.deepEqual(await listed(), [forecast], 'nothing changed');
      await viewer.context.close();
    } finally {
      await browser.close();
      await shop?.close();
    }
  });
});
