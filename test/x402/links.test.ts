/**
 * Agent-payable payment links (docs/x402.md): a fixed-amount link answers an x402 client with 402 and
 * `PAYMENT-REQUIRED`, and an agent with `wrapFetchWithPayment` (`@x402/fetch` 2.27) or `wrapAxiosWithPayment`
 * (`@x402/axios` 2.11), unchanged, pays it without the merchant running any server: a `paid` x402 Payment with the
 * link's order id and `metadata.link_id`, one use counted, a JSON receipt and `PAYMENT-RESPONSE`. Browsers keep
 * getting the page; links that ask the payer something are not agent-payable. One payment buys one receipt: the same
 * signature again is refused as used and counts nothing, a retry under its `payment-identifier` answers the same
 * receipt, and a payment made for one link is refused by another of the same price.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { launchBrowser } from '../harness/browser.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError, ok } from '../harness/expect.ts';
import { agentFetch, paymentSignature } from './agents.ts';
import { IDENTIFIER_PARAM } from '../../src/modules/x402/identifier.ts';
import { RESUME_AFTER_MS } from '../../src/modules/x402/service.ts';
import { wrapAxiosWithPayment, x402Client as AxiosX402Client } from '@x402/axios';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { declareDiscoveryExtension, withBazaar } from '@x402/extensions/bazaar';
import { generatePaymentId } from '@x402/extensions/payment-identifier';
import { LINK_DECLARATION } from '../../src/modules/x402/discovery.ts';
import axios from 'axios';

const NETWORK = 'eip155:84532';
let t: TestKasse;
let m: TestMerchant;

before(async () => {
  t = await startTestKasse();
  // The x402 client signs windows from the real clock.
  t.clock.set(Date.now());
  m = await t.merchant();
});
after(() => t?.close());

const newLink = async (fields: Record<string, unknown>) => ok(m.test.post('/links', fields), 201);
/** A fetch Response as the status and JSON body the assertions read. */
const answer = async (res: Response | Promise<Response>) => {
  const r = await res;
  return { status: r.status, body: await r.json() };
};
const uses = async (id: string): Promise<number> => (await ok(m.test.get(`/links/${id}`))).uses;

/** `signature` sent again to `url`: 402, refused as used (the official duplicate code). */
async function refusedAsUsed(url: string, signature: string): Promise<void> {
  const again = await fetch(url, { headers: { 'payment-signature': signature } });
  assert.equal(again.status, 402);
  assert.equal(
    decodePaymentResponseHeader(again.headers.get('payment-response')!).errorReason,
    'invalid_exact_evm_nonce_already_used',
  );
}

/** An agent's fetch that also remembers every `PAYMENT-SIGNATURE` it sent (naming its payments by `paymentId`). */
function recordingAgent(paymentId?: () => string) {
  const sent: string[] = [];
  const base: typeof fetch = (input, init) => {
    const signature = new Request(input, init).headers.get('payment-signature');
    if (signature) sent.push(signature);
    return fetch(input, init);
  };
  return { pay: agentFetch(privateKeyToAccount(generatePrivateKey()), { maxUsd: '$5', base, paymentId }), sent };
}

describe('a fixed-amount link', () => {
  test('asks an x402 client for the price in USDC on every network of the mode, counting no use', async () => {
    const link = await newLink({ kind: 'fixed', title: 'Field guide PDF', amount_usd_cents: 250 });
    const res = await fetch(link.url);
    assert.equal(res.status, 402);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    assert.deepEqual(await res.json(), JSON.parse(JSON.stringify(required)));
    assert.equal(required.x402Version, 2);
    assert.deepEqual(required.resource, {
      url: link.url,
      description: 'Field guide PDF',
      mimeType: 'application/json',
    });
    assert.deepEqual(Object.keys(required.extensions ?? {}), ['payment-identifier'], 'retries are safe through it');
    const base = required.accepts.find((a) => a.network === NETWORK)!;
    const payTo = (await ok(m.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
    assert.equal(base.scheme, 'exact');
    assert.equal(base.amount, '2500000', '$2.50 in USDC smallest units');
    assert.equal(base.payTo, payTo);
    const supported = (await ok(m.test.get('/x402/supported'))).kinds.map((k: { network: string }) => k.network);
    assert.deepEqual(required.accepts.map((a) => a.network).sort(), [...supported].sort());
    assert.equal(await uses(link.id), 0);
    assert.equal((await ok(m.test.get('/payments?source=x402'))).data.length, 0);
  });

  test('an agent pays it: a paid x402 Payment with the link order id, one use, a receipt', async () => {
    const link = await newLink({ kind: 'fixed', title: 'Field guide PDF', amount_usd_cents: 250, max_uses: 2 });
    const agent = recordingAgent();
    const res = await agent.pay(link.url);
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(agent.sent.length, 1);
    const receipt = await res.json();
    const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    assert.equal(settled.success, true);
    assert.match(settled.transaction, /^0xsim/);
    assert.deepEqual(receipt, {
      payment_id: receipt.payment_id,
      status: 'paid',
      order_id: `${link.slug}-1`,
      price_amount: 250,
      price_currency: 'USD',
      description: 'Field guide PDF',
      network: settled.network,
      transaction: settled.transaction,
      payer: settled.payer,
    });
    const p = await ok(m.test.get(`/payments/${receipt.payment_id}`));
    assert.equal(p.status, 'paid');
    assert.equal(p.source, 'x402');
    assert.equal(p.order_id, `${link.slug}-1`);
    assert.equal(p.metadata.link_id, link.id);
    assert.equal(p.x402.resource, link.url);
    assert.equal(p.x402.payer, settled.payer);
    assert.equal(await uses(link.id), 1);

    // The same signature again buys nothing: refused as used, nothing paid or counted twice.
    await refusedAsUsed(link.url, agent.sent[0]!);
    assert.equal(await uses(link.id), 1);
    assert.equal((await ok(m.test.get(`/payments?order_id=${link.slug}-2`))).data.length, 0);

    // A second agent, on @x402/axios 2.11, takes the last use; a third finds the link used up and signs nothing.
    const axiosClient = new AxiosX402Client().register(
      'eip155:*',
      new ExactEvmScheme(privateKeyToAccount(generatePrivateKey())) as never,
    );
    const viaAxios = await wrapAxiosWithPayment(axios.create(), axiosClient).get(link.url);
    assert.equal(viaAxios.status, 200);
    assert.equal(viaAxios.data.order_id, `${link.slug}-3`);
    const late = recordingAgent();
    assertError(await answer(late.pay(link.url)), 422, 'invalid_state');
    assert.equal(late.sent.length, 0);
    assert.equal(await uses(link.id), 2);
    assert.equal((await ok(m.test.get('/payments?source=x402'))).data.length, 2);
  });

  test('a retry under the payment-identifier the 402 declares answers the same receipt, counting one use', async () => {
    // Its last sale: the link is used up once it is paid, and still answers the retry of that sale.
    const link = await newLink({ kind: 'fixed', title: 'Tide table', amount_usd_cents: 150, max_uses: 1 });
    const id = generatePaymentId();
    const agent = recordingAgent(() => id);
    // Another agent's payment, signed while the link was open.
    const fresh = await paymentSignature(privateKeyToAccount(generatePrivateKey()), link.url, { maxUsd: '$5' });
    const first = await agent.pay(link.url);
    assert.equal(first.status, 200, await first.clone().text());
    const receipt = await first.json();
    // The answer was lost: the same payment again, under the same identifier.
    const again = await fetch(link.url, { headers: { 'payment-signature': agent.sent[0]! } });
    assert.equal(again.status, 200, await again.clone().text());
    assert.deepEqual(await again.json(), receipt);
    assert.equal(await uses(link.id), 1);
    assert.equal((await ok(m.test.get(`/payments?order_id=${link.slug}-2`))).data.length, 0);
    // A new payment finds the link used up, in the Error body, and pays nothing.
    assertError(await answer(fetch(link.url, { headers: { 'payment-signature': fresh } })), 422, 'invalid_state');
    assertError(await answer(fetch(link.url, { headers: { 'payment-signature': 'garbage' } })), 422, 'invalid_state');
    assert.equal(await uses(link.id), 1);
    assert.equal((await ok(m.test.get(`/payments?order_id=${link.slug}-2`))).data.length, 0);
  });

  test('the same signature without an identifier at a used-up link is refused as used, as on an open one', async () => {
    const link = await newLink({ kind: 'fixed', title: 'Tide chart', amount_usd_cents: 150, max_uses: 1 });
    const agent = recordingAgent();
    assert.equal((await agent.pay(link.url)).status, 200);
    await refusedAsUsed(link.url, agent.sent[0]!);
    assert.equal(await uses(link.id), 1);
  });

  test('a use held by a pending settlement is given back when the settlement later fails', async () => {
    const link = await newLink({ kind: 'fixed', title: 'Tide almanac', amount_usd_cents: 150, max_uses: 1 });
    const evm = t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const { settle } = evm;
    // Submitted, not yet confirmed when the request's time is up.
    evm.settle = async () => ({ status: 'pending' as const, transaction: '0xnotyet' });
    try {
      const res = await recordingAgent().pay(link.url);
      assert.equal(res.status, 402);
      assert.equal(decodePaymentResponseHeader(res.headers.get('payment-response')!).errorReason, 'settlement_pending');
      assert.equal(await uses(link.id), 1, 'the pending sale holds the last use');
      // The transfer fails on chain; the workers find it so.
      evm.settle = async () => ({
        status: 'failed' as const,
        reason: 'invalid_exact_evm_transaction_failed',
        message: 'The transfer failed: reverted',
        transaction: '0xnotyet',
      });
      await t.kasse.db
        .updateTable('x402_settlements')
        .set({ created_at: new Date(t.clock.millis() - RESUME_AFTER_MS - 1000) })
        .where('status', '=', 'pending')
        .where('resource', '=', link.url)
        .execute();
      assert.equal(await t.kasse.x402.resume(), 1);
    } finally {
      evm.settle = settle;
    }
    assert.equal(await uses(link.id), 0, 'the use is given back');
    assert.equal((await recordingAgent().pay(link.url)).status, 200, 'and sold again');
    assert.equal(await uses(link.id), 1);
  });

  test('a payment made for one link is refused by another of the same price, which counts nothing', async () => {
    const first = await newLink({ kind: 'fixed', title: 'Map of Kochi', amount_usd_cents: 400 });
    const second = await newLink({ kind: 'fixed', title: 'Map of Munnar', amount_usd_cents: 400 });
    const agent = recordingAgent();
    // Paid at the first link, then shown to the second.
    assert.equal((await agent.pay(first.url)).status, 200);
    const elsewhere = await fetch(second.url, { headers: { 'payment-signature': agent.sent[0]! } });
    assert.equal(elsewhere.status, 402);
    assert.match(
      decodePaymentRequiredHeader(elsewhere.headers.get('payment-required')!).error!,
      /made for .*, not for/,
    );
    // Made for the first link, shown to the second before anything was settled.
    const fresh = await paymentSignature(privateKeyToAccount(generatePrivateKey()), first.url, { maxUsd: '$5' });
    const early = await fetch(second.url, { headers: { 'payment-signature': fresh } });
    assert.equal(early.status, 402);
    assert.equal(early.headers.get('payment-response'), null, 'nothing settled');
    assert.equal(await uses(second.id), 0);
    // It still pays the link it was made for.
    assert.equal((await fetch(first.url, { headers: { 'payment-signature': fresh } })).status, 200);
    assert.equal(await uses(first.id), 2);
    assert.equal(
      (await ok(m.test.get(`/payments?source=x402&limit=100`))).data.filter(
        (p: any) => p.metadata.link_id === second.id,
      ).length,
      0,
    );
  });

  test('a payment under an identifier shown to another link of the same price, its resource edited: 409, nothing sold', async () => {
    const first = await newLink({ kind: 'fixed', title: 'Map of Alleppey', amount_usd_cents: 450 });
    const second = await newLink({ kind: 'fixed', title: 'Map of Thrissur', amount_usd_cents: 450 });
    const agent = recordingAgent(() => generatePaymentId());
    const paid = await agent.pay(first.url);
    assert.equal(paid.status, 200);
    const edited = decodePaymentSignatureHeader(agent.sent[0]!);
    edited.resource = { ...edited.resource!, url: second.url };
    const replay = fetch(second.url, { headers: { 'payment-signature': encodePaymentSignatureHeader(edited) } });
    assertError(await answer(replay), 409, 'idempotency_conflict', IDENTIFIER_PARAM);
    assert.equal(await uses(second.id), 0);
    assert.equal(await uses(first.id), 1);
  });

  test("a payer's bazaar declaration on a link payment lists nothing: the link is listed as the link", async () => {
    const link = await newLink({ kind: 'fixed', title: 'Birding checklist', amount_usd_cents: 175 });
    const payload = decodePaymentSignatureHeader(
      await paymentSignature(privateKeyToAccount(generatePrivateKey()), link.url, { maxUsd: '$5' }),
    );
    const bazaar = declareDiscoveryExtension({ output: { example: { free: 'money' } } }).bazaar!;
    (bazaar.info.input as { method?: string }).method = 'GET';
    (payload as any).extensions = { ...payload.extensions, bazaar };
    const paid = await fetch(link.url, { headers: { 'payment-signature': encodePaymentSignatureHeader(payload) } });
    assert.equal(paid.status, 200);
    await t.kasse.x402.catalogued();
    const payTo = (await ok(m.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
    const items = (
      await withBazaar(new HTTPFacilitatorClient({ url: `${t.urls.test}/x402` })).extensions.bazaar.listResources({
        payTo,
        limit: 100,
      })
    ).items.filter((i) => i.resource === link.url);
    assert.equal(items.length, 1);
    assert.deepEqual(items[0]!.extensions!.bazaar, LINK_DECLARATION);
  });

  test('a payload that is not for this link, or not a payload, is asked again and counts nothing', async () => {
    const cheap = await newLink({ kind: 'fixed', title: 'Sticker', amount_usd_cents: 100 });
    const dear = await newLink({ kind: 'fixed', title: 'Poster', amount_usd_cents: 900 });
    const agent = recordingAgent();
    assert.equal((await agent.pay(cheap.url)).status, 200);
    const before = (await ok(m.test.get('/payments?source=x402'))).data.length;
    // A $1 signature shown to a $9 link does not match its requirements.
    const wrong = await fetch(dear.url, { headers: { 'payment-signature': agent.sent[0]! } });
    assert.equal(wrong.status, 402);
    assert.equal(
      decodePaymentRequiredHeader(wrong.headers.get('payment-required')!).error,
      'No matching payment requirements',
    );
    const garbage = await fetch(dear.url, { headers: { 'payment-signature': 'not base64 json' } });
    assert.equal(garbage.status, 402);
    assert.match((await garbage.json()).error, /not .*x402 .*payment payload/);
    assert.equal(await uses(dear.id), 0);
    assert.equal((await ok(m.test.get('/payments?source=x402'))).data.length, before);
  });

  test('turned off, it refuses agents in the Error body; an unknown slug is 404 not_found', async () => {
    const link = await newLink({ kind: 'fixed', title: 'Gone soon', amount_usd_cents: 300 });
    await ok(m.test.patch(`/links/${link.id}`, { active: false }));
    const agent = recordingAgent();
    assertError(await answer(agent.pay(link.url)), 422, 'invalid_state');
    assert.equal(agent.sent.length, 0);
    assertError(await answer(fetch(`${t.urls.checkout}/l/zzzzzzzzzzzz`)), 404, 'not_found');
  });
});

describe('what stays a page', () => {
  test('a browser gets the link page; open, tip and email-collecting links are not agent-payable', async () => {
    const fixed = await newLink({ kind: 'fixed', title: 'Field guide PDF', amount_usd_cents: 250 });
    const browser = await launchBrowser();
    try {
      const { page } = await browser.open();
      const res = await page.goto(fixed.url);
      assert.equal(res!.status(), 200);
      assert.equal(res!.headers()['payment-required'], undefined);
      await page.getByRole('button', { name: 'Pay $2.50' }).waitFor();
    } finally {
      await browser.close();
    }
    for (const fields of [
      { kind: 'open', title: 'Donation' },
      { kind: 'tip', title: 'Tips', presets_usd_cents: [100, 200] },
      { kind: 'fixed', title: 'Signed copy', amount_usd_cents: 500, collect_email: true },
    ]) {
      const link = await newLink(fields);
      const res = await fetch(link.url);
      assert.equal(res.status, 200, fields.kind);
      assert.equal(res.headers.get('payment-required'), null);
      assert.match(res.headers.get('content-type')!, /text\/html/);
    }
  });
});
