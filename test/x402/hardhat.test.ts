/**
 * Kasse as x402 facilitator on a PRIVATE Hardhat node with the test USDC: real `transferWithAuthorization` relayed
 * by the hot wallet (the agent holds no ETH), balances checked on chain. The official packages end to end, the agent
 * allowing the local token as docs/x402.md shows; an insufficient balance refused before anything is sent; one
 * PAYMENT-SIGNATURE sent five times at once through `@x402/hono` in front of two Kasse processes on one database
 * (one 200, one transaction, one payment); amounts above $1,000,000 refused before anything is sent and $1,000,000
 * itself recorded; an address handed out on the simulator retired once the node is configured, and the one derived in
 * its place settled into and swept by `kasse evm sweep`; and an API process killed with SIGKILL between broadcast and
 * confirmation, after which the workers' pass settles it exactly once. With the escrow at its canonical addresses:
 * the official `AuthCaptureEvmScheme` client's hold settled through Kasse's facilitator, then captured twice, voided
 * and refunded by the merchant through the payments API, balances exact on chain and in the ledger; a duplicate
 * settle and bad payloads refused with the scheme's official codes, nothing sent; `paymentFlow: "authorization"` a
 * charge paid at once; and a hold whose API process is killed before confirmation locked and recorded exactly once.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { type Address, getAddress } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { RESUME_AFTER_MS } from '../../src/modules/x402/service.ts';
import { ApiClient } from '../harness/app.ts';
import { startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import { eventually, ok } from '../harness/expect.ts';
import { startHardhatNode, TestChain, type HardhatNode } from '../harness/hardhat.ts';
import { authorizationBody } from '../harness/x402.ts';
import { freePort } from '../harness/net.ts';
import { agentFetch, paymentSignature, startHonoShop, startShop, type Shop } from './agents.ts';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { evmCommands } from '../../src/chains/evm/commands.ts';
import type { SweepReport } from '../../src/chains/evm/operations.ts';
import { startTestKasse } from '../harness/app.ts';
import { KASSE_HOME } from '../../src/config.ts';
import { SERVER } from '../harness/commands.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentRequirements } from '@x402/core/types';
import { AuthCaptureEvmScheme } from '@x402/evm/auth-capture/client';
import { authCaptureEscrowAbi } from '../../src/chains/evm/contracts.ts';
import { AUTH_CAPTURE_V1_1, placeAuthCaptureContracts } from '../../src/chains/evm/escrow.ts';
import { Kasse } from '../../sdk/src/index.ts';

const NETWORK = 'eip155:31337';
let node: HardhatNode;
let k: EvmKasse;
let payTo: Address;
const agent = privateKeyToAccount(generatePrivateKey());

before(async () => {
  node = await startHardhatNode();
  // The escrow of hold and capture at its canonical addresses, as `kasse evm deploy-escrow` places it.
  const escrow = await placeAuthCaptureContracts({ request: (m, p) => new TestChain(node.url).rpc(m, p) });
  k = await startEvmKasse({
    rpcUrl: node.url,
    tiers: [{ max_usd_cents: null, confirmations: 1 }],
    finality: 2,
    evm: {
      auth_capture: {
        escrow: escrow.escrow,
        erc3009_collector: escrow.erc3009Collector,
        operator_refund_collector: escrow.operatorRefundCollector,
      },
    },
  });
  k.t.clock.set(Date.now());
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, agent.address, 10_000_000n));
  payTo = (await ok(k.m.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
});
after(async () => {
  await k?.close();
  await node?.stop();
});

const hotNonce = () => k.chain.client.getTransactionCount({ address: k.adapter.sender!.address as Address });
const usdcOf = (a: Address) => k.chain.tokenBalance(k.usdc, a);
/** `kasse evm sweep` on the node's network (with `--dry-run`: only the report of what is due). */
const sweep = (flags: Record<string, unknown> = {}) =>
  evmCommands
    .find((c) => c.name === 'evm sweep')!
    .run(k.t.kasse.familyContext, { mode: 'test', chain: 'base', ...flags }, []) as Promise<SweepReport>;

async function body(units: bigint, signer = agent, to: Address = payTo) {
  const now = Math.floor(Date.now() / 1000);
  const signed = await authorizationBody({
    signer,
    domain: { name: 'Test USDC', version: '2', chainId: 31337, verifyingContract: k.usdc },
    network: NETWORK,
    asset: k.usdc,
    payTo: to,
    value: units,
    validAfter: now - 600,
    validBefore: now + 600,
    maxTimeoutSeconds: 600,
    resource: { url: 'http://shop.test/weather', description: 'Weather', mimeType: 'application/json' },
  });
  return signed.body;
}

test('supported names the test USDC domain read from the chain', async () => {
  const s = await ok(k.m.test.get('/x402/supported'));
  assert.deepEqual(
    s.kinds.filter((x: any) => x.scheme === 'exact'),
    [
      {
        x402Version: 2,
        scheme: 'exact',
        network: NETWORK,
        extra: { name: 'Test USDC', version: '2', asset: getAddress(k.usdc), decimals: 6, payTo },
      },
    ],
  );
});

test('an agent with no ETH pays an Express API through Kasse: real transfer, paid payment', async () => {
  const shop = await startShop({
    apiBase: k.t.urls.test,
    key: k.m.testKey,
    network: NETWORK,
    payTo,
    price: { amount: '1000', asset: k.usdc, extra: { name: 'Test USDC', version: '2' } },
  });
  try {
    const [agentBefore, merchantBefore] = [await usdcOf(agent.address), await usdcOf(payTo)];
    // The docs' configuration: the client's spend controls allow the local token by name.
    const res = await agentFetch(agent, { allowedAssets: [{ network: NETWORK, asset: k.usdc }] })(
      `${shop.url}/weather`,
    );
    assert.equal(res.status, 200, await res.clone().text());
    const receipt = JSON.parse(Buffer.from(res.headers.get('payment-response')!, 'base64').toString());
    assert.equal(receipt.success, true);
    assert.match(receipt.transaction, /^0x[0-9a-f]{64}$/);
    assert.equal(await usdcOf(agent.address), agentBefore - 1000n);
    assert.equal(await usdcOf(payTo), merchantBefore + 1000n);
    const list = await ok(k.m.test.get('/payments?source=x402'));
    const p = list.data.find((x: any) => x.x402.transaction === receipt.transaction);
    assert.equal(p.status, 'paid');
    assert.equal(p.x402.simulated, false);
    assert.equal(p.attempts[0].deposits[0].tx_hash, receipt.transaction);
    assert.ok(p.attempts[0].deposits[0].block_number);
  } finally {
    await shop.close();
  }
});

test('a payer without the USDC is refused at verify and settle, and nothing is sent', async () => {
  const poor = privateKeyToAccount(generatePrivateKey());
  const nonce = await hotNonce();
  const b = await body(1000n, poor);
  assert.equal((await ok(k.m.test.post('/x402/verify', b))).invalidReason, 'invalid_exact_evm_insufficient_balance');
  const s = await ok(k.m.test.post('/x402/settle', b));
  assert.equal(s.success, false);
  assert.equal(s.errorReason, 'invalid_exact_evm_insufficient_balance');
  assert.equal(await hotNonce(), nonce);
});

test('one PAYMENT-SIGNATURE five times at once through @x402/hono and two processes: one 200, one transfer', async () => {
  const second = await startEvmKasse({
    rpcUrl: node.url,
    tiers: [{ max_usd_cents: null, confirmations: 1 }],
    finality: 2,
    databaseUrl: k.t.databaseUrl,
    secrets: k.secrets,
    contracts: { usdc: k.usdc, factory: k.factory, treasury: k.treasury, hotWalletKey: k.hotWalletKey },
  });
  const shops: Shop[] = [];
  try {
    second.t.clock.set(Date.now());
    // Configured without the network's escrow: auth-capture is not offered there.
    const kinds = (await ok(second.m.test.get('/x402/supported'))).kinds;
    assert.deepEqual(
      kinds.map((x: any) => x.scheme),
      ['exact'],
    );
    const price = { amount: '2500', asset: k.usdc, extra: { name: 'Test USDC', version: '2' } };
    for (const apiBase of [k.t.urls.test, second.t.urls.test])
      shops.push(await startHonoShop({ apiBase, key: k.m.testKey, network: NETWORK, payTo, price }));
    const nonce = await hotNonce();
    const before = await usdcOf(payTo);
    const paidBefore = (await ok(k.m.test.get('/payments?source=x402&limit=100'))).data.length;
    const header = await paymentSignature(agent, `${shops[0]!.url}/weather`, { anyAsset: true });
    const answers = await Promise.all(
      [0, 1, 2, 3, 4].map((i) => fetch(`${shops[i % 2]!.url}/weather`, { headers: { 'payment-signature': header } })),
    );
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 402, 402, 402, 402]);
    for (const r of answers.filter((a) => a.status === 402)) {
      const settled = r.headers.get('payment-response');
      const reason = settled
        ? decodePaymentResponseHeader(settled).errorReason
        : decodePaymentRequiredHeader(r.headers.get('payment-required')!).error;
      assert.equal(reason, 'invalid_exact_evm_nonce_already_used');
    }
    assert.equal(await hotNonce(), nonce + 1, 'one transaction sent');
    assert.equal(await usdcOf(payTo), before + 2_500n, 'moved once');
    const paid = (await ok(k.m.test.get('/payments?source=x402&limit=100'))).data.length;
    assert.equal(paid, paidBefore + 1, 'one payment');
  } finally {
    for (const shop of shops) await shop.close();
    await second.close();
  }
});

test('above $1,000,000 verify and settle refuse and nothing is sent; $1,000,000 settles and is recorded', async () => {
  const rich = privateKeyToAccount(generatePrivateKey());
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, rich.address, 2_000_000_000_000n));
  const nonce = await hotNonce();
  const beyond = await body(1_000_000_000_001n, rich);
  assert.equal((await ok(k.m.test.post('/x402/verify', beyond))).invalidReason, 'invalid_payment_requirements');
  const refused = await ok(k.m.test.post('/x402/settle', beyond));
  assert.deepEqual([refused.success, refused.errorReason], [false, 'invalid_payment_requirements']);
  assert.equal(await hotNonce(), nonce, 'nothing sent');
  const before = await usdcOf(payTo);
  const largest = await ok(k.m.test.post('/x402/settle', await body(1_000_000_000_000n, rich)));
  assert.equal(largest.success, true, JSON.stringify(largest));
  assert.equal(await usdcOf(payTo), before + 1_000_000_000_000n);
  const p = await ok(k.m.test.get(`/payments/${largest.extra.payment_id}`));
  assert.equal(p.price_amount, 100_000_000);
  assert.equal(p.attempts[0].deposits[0].amount, '1000000000000');
});

// ---- auth-capture: a hold through the official client, captured, voided and refunded by the merchant ----

const HOLD_RESOURCE = { url: 'http://shop.test/room', description: 'A night, held', mimeType: 'application/json' };
const facilitator = () =>
  new HTTPFacilitatorClient(new Kasse(k.m.testKey, { baseUrl: k.t.urls.test }).x402.facilitator());
const tokenStore = () =>
  k.chain.client.readContract({
    address: AUTH_CAPTURE_V1_1.escrow,
    abi: authCaptureEscrowAbi,
    functionName: 'getTokenStore',
    args: [k.adapter.sender!.address as Address],
  });
const available = async () => (await ok(k.m.test.get('/balance'))).available_usd_cents as number;

/** Requirements a resource server states for a hold, from what `supported` names, and what the official client signs. */
async function hold(units: bigint, extra: Record<string, unknown> = {}, signer = agent) {
  const kind = (await ok(k.m.test.get('/x402/supported'))).kinds.find((x: any) => x.scheme === 'auth-capture');
  const now = Math.floor(Date.now() / 1000);
  const { payTo: to, asset, decimals: _, ...terms } = kind.extra;
  const requirements: PaymentRequirements = {
    scheme: 'auth-capture',
    network: NETWORK,
    amount: units.toString(),
    asset,
    payTo: to,
    maxTimeoutSeconds: 300,
    extra: { ...terms, captureDeadline: now + 86_400, refundDeadline: now + 30 * 86_400, ...extra },
  };
  const client = new x402Client().register('eip155:*', new AuthCaptureEvmScheme(signer));
  client.setSpendControls({ allowedAssets: [{ network: NETWORK, asset: k.usdc }] });
  const payload = await client.createPaymentPayload({
    x402Version: 2,
    resource: HOLD_RESOURCE,
    accepts: [requirements],
  });
  return { payload, requirements };
}

/** The workers' sender passes until the merchant's Payment shows `done`. */
async function untilSettled(id: string, done: (p: any) => boolean) {
  return eventually(
    `payment ${id} to settle its hold operation`,
    async () => {
      await k.adapter.sender!.runDue();
      const p = await ok(k.m.test.get(`/payments/${id}`));
      return done(p) && p;
    },
    { timeoutMs: 20_000 },
  );
}

test('supported lists auth-capture with Kasse as the escrow operator where the network has the escrow', async () => {
  const kind = (await ok(k.m.test.get('/x402/supported'))).kinds.find((x: any) => x.scheme === 'auth-capture');
  const hot = k.adapter.sender!.address;
  assert.deepEqual(kind, {
    x402Version: 2,
    scheme: 'auth-capture',
    network: NETWORK,
    extra: {
      name: 'Test USDC',
      version: '2',
      asset: getAddress(k.usdc),
      decimals: 6,
      payTo,
      authCaptureEscrow: AUTH_CAPTURE_V1_1.escrow,
      captureAuthorizer: hot,
      feeRecipient: hot,
      minFeeBps: 0,
      maxFeeBps: 0,
    },
  });
});

test('the official auth-capture client authorizes; the merchant captures twice, voids the rest and refunds', async () => {
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, k.adapter.sender!.address as Address, 10_000_000n));
  // What the merchant's x402 address received before is swept first: only the captures can make it due again.
  await sweep();
  assert.ok(!(await sweep({ 'dry-run': true })).addresses!.includes(payTo.toLowerCase()));
  const store = await tokenStore();
  const [agent0, store0, payTo0, hot0, balance0] = [
    await usdcOf(agent.address),
    await usdcOf(store),
    await usdcOf(payTo),
    await usdcOf(k.adapter.sender!.address as Address),
    await available(),
  ];
  const { payload, requirements } = await hold(5_000_000n);
  assert.deepEqual(await facilitator().verify(payload, requirements), { isValid: true, payer: agent.address });
  // Three settles of the one authorization at once: one success, the others answered as already collected.
  const answers = await Promise.all([1, 2, 3].map(() => facilitator().settle(payload, requirements)));
  const settled = answers.find((a) => a.success)!;
  assert.ok(settled, JSON.stringify(answers));
  assert.deepEqual(
    answers.filter((a) => !a.success).map((a) => a.errorReason),
    ['invalid_auth_capture_evm_payment_already_collected', 'invalid_auth_capture_evm_payment_already_collected'],
  );
  assert.equal(await usdcOf(agent.address), agent0 - 5_000_000n);
  assert.equal(await usdcOf(store), store0 + 5_000_000n, 'locked in the escrow');
  const id = (settled.extra as { payment_id: string }).payment_id;
  const p = await ok(k.m.test.get(`/payments/${id}`));
  assert.equal(p.status, 'authorized');
  assert.equal(p.source, 'x402');
  assert.equal(p.capture_method, 'manual');
  assert.equal(p.price_amount, 500);
  assert.equal(p.x402.payer, agent.address);
  assert.equal(p.authorization.amount_usd_cents, 500);
  assert.equal(
    p.authorization.capture_before,
    new Date((requirements.extra.captureDeadline as number) * 1000).toISOString(),
  );
  assert.equal(await available(), balance0, 'nothing credited while held');

  // The same authorization again: answered as the duplicate it is, nothing sent.
  const nonce = await hotNonce();
  const again = await facilitator().settle(payload, requirements);
  assert.equal(again.success, false);
  assert.equal(again.errorReason, 'invalid_auth_capture_evm_payment_already_collected');
  assert.equal(await hotNonce(), nonce);

  // Two captures through the payments API: each on chain to the merchant's x402 address, each credited with its fee.
  await ok(k.m.test.post(`/payments/${id}/capture`, { amount_usd_cents: 300 }, { 'idempotency-key': `hc-${id}-1` }));
  await untilSettled(id, (x) => x.authorization.captured_usd_cents === 300 && x.authorization.pending_usd_cents === 0);
  assert.equal(await usdcOf(payTo), payTo0 + 3_000_000n);
  assert.equal(await usdcOf(store), store0 + 2_000_000n);
  assert.equal(await available(), balance0 + 297);
  await ok(k.m.test.post(`/payments/${id}/capture`, { amount_usd_cents: 100 }));
  const twice = await untilSettled(id, (x) => x.authorization.captured_usd_cents === 400);
  assert.equal(twice.status, 'paid');
  assert.equal(await usdcOf(payTo), payTo0 + 4_000_000n);
  assert.equal(await available(), balance0 + 297 + 99);
  assert.ok(
    (await sweep({ 'dry-run': true })).addresses!.includes(payTo.toLowerCase()),
    "the captures' money at the merchant's x402 address is due for the sweep",
  );

  // The rest goes back to the payer.
  await ok(k.m.test.post(`/payments/${id}/void`));
  const voided = await untilSettled(id, (x) => x.authorization.voided);
  assert.equal(voided.status, 'paid');
  assert.equal(await usdcOf(store), store0);
  assert.equal(await usdcOf(agent.address), agent0 - 4_000_000n);

  // A refund of what was captured goes back through the escrow to the payer, from the hot wallet's float.
  const refund = await ok(k.m.test.post(`/payments/${id}/refund`, {}), 202);
  assert.equal(refund.amount, '4000000');
  assert.equal(getAddress(refund.destination), agent.address);
  await eventually(
    'the refund to be sent',
    async () => {
      await k.adapter.sender!.runDue();
      return (await ok(k.m.test.get(`/payments/${id}`))).status === 'refunded';
    },
    { timeoutMs: 20_000 },
  );
  assert.equal(await usdcOf(agent.address), agent0);
  assert.equal(await usdcOf(payTo), payTo0 + 4_000_000n, "the merchant's address is swept, not debited");
  assert.equal(await usdcOf(k.adapter.sender!.address as Address), hot0 - 4_000_000n);
  assert.equal(await usdcOf(store), store0);
  assert.equal(await available(), balance0);
  assert.ok((await assertEveryMerchantReconciles(k.t.kasse)) >= 1);
  // The captures' money leaves the merchant's x402 address for the treasury like any deposit's.
  const treasury = await usdcOf(k.treasury);
  const swept = await sweep();
  assert.ok(
    swept.transactions.every((t) => t.status === 'confirmed'),
    JSON.stringify(swept),
  );
  assert.equal(await usdcOf(payTo), 0n, 'swept');
  assert.equal(await usdcOf(k.treasury), treasury + payTo0 + 4_000_000n);
});

test('auth-capture with paymentFlow authorization charges at once: a paid x402 payment', async () => {
  const [agent0, payTo0, balance0] = [await usdcOf(agent.address), await usdcOf(payTo), await available()];
  const { payload, requirements } = await hold(1_000_000n, { paymentFlow: 'authorization' });
  const settled = await facilitator().settle(payload, requirements);
  assert.equal(settled.success, true, JSON.stringify(settled));
  const p = await ok(k.m.test.get(`/payments/${(settled.extra as { payment_id: string }).payment_id}`));
  assert.equal(p.status, 'paid');
  assert.equal(p.capture_method, undefined, 'the spec object of a payment paid outright');
  assert.equal(p.price_amount, 100);
  assert.equal(await usdcOf(agent.address), agent0 - 1_000_000n);
  assert.equal(await usdcOf(payTo), payTo0 + 1_000_000n);
  assert.equal(await available(), balance0 + 99);
});

test('auth-capture refuses with the official codes, and nothing is sent', async () => {
  const nonce = await hotNonce();
  const refuse = async (body: { paymentPayload: unknown; paymentRequirements: unknown }, reason: string) => {
    const wire = { x402Version: 2, ...body };
    assert.equal((await ok(k.m.test.post('/x402/verify', wire))).invalidReason, reason);
    const s = await ok(k.m.test.post('/x402/settle', wire));
    assert.equal(s.success, false);
    assert.equal(s.errorReason, reason);
  };
  // Another collector than the escrow's.
  const a = await hold(1_000_000n);
  const elsewhere = structuredClone(a.payload);
  (elsewhere.payload.authorization as Record<string, string>).to = payTo;
  await refuse(
    { paymentPayload: elsewhere, paymentRequirements: a.requirements },
    'invalid_auth_capture_evm_token_collector_mismatch',
  );
  // Requirements of another amount than the one signed.
  await refuse(
    { paymentPayload: a.payload, paymentRequirements: { ...a.requirements, amount: '2000000' } },
    'invalid_auth_capture_evm_amount_mismatch',
  );
  // An operator that is not Kasse's hot wallet.
  const b = await hold(1_000_000n, { captureAuthorizer: payTo });
  await refuse(
    { paymentPayload: b.payload, paymentRequirements: b.requirements },
    'invalid_auth_capture_evm_operator_not_admitted',
  );
  // Terms Kasse does not take, as the official client signs them.
  const now = Math.floor(Date.now() / 1000);
  for (const [extra, reason] of [
    [{ paymentFlow: 'upfront' }, 'invalid_auth_capture_evm_unsupported_payment_flow'],
    [{ minFeeBps: 100, maxFeeBps: 100 }, 'invalid_auth_capture_evm_fee_bps_out_of_range'],
    [{ captureDeadline: now - 60 }, 'invalid_auth_capture_evm_capture_deadline_expired'],
    [{ refundDeadline: now + 3_600 }, 'invalid_auth_capture_evm_deadline_ordering'],
  ] as const) {
    const c = await hold(1_000_000n, extra);
    await refuse({ paymentPayload: c.payload, paymentRequirements: c.requirements }, reason);
  }
  // Requirements changed after signing (another refund deadline): the nonce signed is another payment's.
  await refuse(
    {
      paymentPayload: a.payload,
      paymentRequirements: {
        ...a.requirements,
        extra: { ...a.requirements.extra, refundDeadline: (a.requirements.extra.refundDeadline as number) + 1 },
      },
    },
    'invalid_auth_capture_evm_nonce_mismatch',
  );
  // Signed by someone else than `from` (the nonce leaves the payer out, so only the signature can tell).
  const other = await hold(1_000_000n, {}, privateKeyToAccount(generatePrivateKey()));
  const forged = structuredClone(other.payload);
  (forged.payload.authorization as Record<string, string>).from = agent.address;
  await refuse(
    { paymentPayload: forged, paymentRequirements: other.requirements },
    'invalid_auth_capture_evm_signature',
  );
  // Expired by Kasse's clock (the client gave 300 s).
  k.t.clock.set(Date.now() + 301_000);
  try {
    await refuse(
      { paymentPayload: a.payload, paymentRequirements: a.requirements },
      'invalid_auth_capture_evm_authorization_expired',
    );
  } finally {
    k.t.clock.set(Date.now());
  }
  assert.equal(await hotNonce(), nonce);
});

test('an address given out on the simulator is retired once the node is configured; its successor is swept', async () => {
  // The merchant's first days: the same database, `base` on the simulator (no forwarder factory configured yet).
  const dir = mkdtempSync(join(tmpdir(), 'kasse-x402-sim-'));
  const file = join(dir, 'networks.json');
  const doc = JSON.parse(readFileSync(k.networksFile, 'utf8'));
  delete doc.networks[0].evm;
  writeFileSync(file, JSON.stringify(doc));
  const nowhere = 'http://127.0.0.1:9';
  const early = await startTestKasse({
    databaseUrl: k.t.databaseUrl,
    secrets: k.secrets,
    env: { KASSE_NETWORKS_FILE: file, KASSE_COINGECKO_URL: nowhere, KASSE_BINANCE_URL: nowhere },
  });
  let merchant: Awaited<ReturnType<typeof early.merchant>>;
  let simulated: string;
  try {
    merchant = await early.merchant();
    simulated = (await ok(merchant.test.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
    const kinds = (await ok(merchant.test.get('/x402/supported'))).kinds;
    assert.equal(kinds[0].extra.simulated, true);
  } finally {
    await early.close();
  }
  // Then the node was configured (k runs with the factory): the address offered is one the factory sweeps.
  const api = new ApiClient(k.t.urls.test, merchant.testKey);
  const derived = (await ok(api.get(`/x402/pay_to?network=${NETWORK}`))).pay_to;
  assert.notEqual(derived.toLowerCase(), simulated.toLowerCase());
  const row = await k.t.kasse.db
    .selectFrom('x402_pay_to')
    .selectAll()
    .where('merchant_id', '=', merchant.id)
    .executeTakeFirstOrThrow();
  assert.equal(k.adapter.addressOf(BigInt(row.address_index)), getAddress(derived), 'the factory clone of its index');
  assert.equal((await ok(api.get('/x402/supported'))).kinds[0].extra.payTo, derived);
  assert.deepEqual(
    (await k.t.kasse.x402.retired({ mode: 'test', merchantId: merchant.id })).map((r) => r.address),
    [simulated],
    'the simulator-era address is retired',
  );
  // A payment to the retired address is refused as paying someone else.
  const stale = await authorizationBody({
    signer: agent,
    domain: { name: 'Test USDC', version: '2', chainId: 31337, verifyingContract: k.usdc },
    network: NETWORK,
    asset: k.usdc,
    payTo: simulated,
    value: 3_000n,
    validAfter: Math.floor(Date.now() / 1000) - 600,
    validBefore: Math.floor(Date.now() / 1000) + 600,
    maxTimeoutSeconds: 600,
    resource: { url: 'http://shop.test/weather', description: 'Weather', mimeType: 'application/json' },
  });
  assert.equal((await ok(api.post('/x402/settle', stale.body))).errorReason, 'invalid_exact_evm_recipient_mismatch');
  // Paid at the derived address, the money is swept to the treasury.
  const settled = await ok(api.post('/x402/settle', await body(3_000n, agent, derived as Address)));
  assert.equal(settled.success, true, JSON.stringify(settled));
  assert.equal(await usdcOf(derived as Address), 3_000n);
  const treasury = await usdcOf(k.treasury);
  const report = await sweep();
  assert.ok(
    report.transactions.every((t) => t.status === 'confirmed'),
    JSON.stringify(report),
  );
  assert.equal(await usdcOf(derived as Address), 0n, 'swept');
  assert.ok((await usdcOf(k.treasury)) >= treasury + 3_000n);
});

test('settle follows its transfer until the clock reaches the deadline, then answers pending; it lands later', async () => {
  await k.chain.setAutomine(false);
  try {
    const evm = k.t.kasse.families.find((f) => f.family.name === 'evm')!.loaded.x402!;
    const kind = (await evm.kinds('test')).find((x) => x.network === NETWORK)!;
    const b = await body(3_000n);
    const request = {
      mode: 'test' as const,
      kind,
      payTo,
      amount: 3_000n,
      requirements: b.paymentRequirements,
      payload: b.paymentPayload.payload,
    };
    const before = await usdcOf(payTo);
    const waits = k.t.clock.waits();
    const settling = evm.settle(request, 'x4s_clock', new Date(k.t.clock.millis() + 30_000));
    await eventually('settle to wait on the clock between looks at its transfer', () => k.t.clock.waits() > waits, {
      timeoutMs: 30_000,
      intervalMs: 5,
    });
    k.t.clock.advance(30_000);
    const s = await settling;
    assert.equal(s.status, 'pending');
    assert.ok(s.transaction, 'broadcast before the answer');
    await k.chain.mine(1);
    await k.adapter.sender!.runDue();
    const landed = await eventually('the transfer to land', async () => {
      const now = await evm.settlement('test', kind.chain, 'x4s_clock');
      return now.status === 'settled' ? now : null;
    });
    assert.equal(landed.transaction, s.transaction);
    assert.equal(await usdcOf(payTo), before + 3_000n);
  } finally {
    await k.chain.setAutomine(true);
  }
});

test('an API process killed (SIGKILL) between broadcast and confirmation settles exactly once, a hold too', async () => {
  await k.chain.setAutomine(false);
  let child: ChildProcess | null = null;
  try {
    const port = await freePort();
    child = spawn(process.execPath, SERVER, {
      cwd: KASSE_HOME,
      env: {
        ...process.env,
        DATABASE_URL: k.t.databaseUrl,
        KASSE_ROLES: 'api',
        KASSE_TEST_PORT: String(port),
        KASSE_LIVE_PORT: '0',
        KASSE_CHECKOUT_PORT: '0',
        KASSE_NETWORKS_FILE: k.networksFile,
        KASSE_SECRET_KEY: k.secrets.secretKey.toString('hex'),
        KASSE_MASTER_SEED: k.secrets.masterSeed,
        KASSE_HOT_WALLET_KEY: k.hotWalletKey,
        KASSE_COINGECKO_URL: k.coingecko.url,
        KASSE_BINANCE_URL: k.binance.url,
        KASSE_DATA_DIR: `/tmp/kasse-x402-${process.pid}`,
        KASSE_LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const api = new ApiClient(`http://127.0.0.1:${port}/v1`, k.m.testKey);
    await eventually(
      'the API process to start',
      async () => (await fetch(`http://127.0.0.1:${port}/v1/x402/supported`).catch(() => null))?.status === 401,
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const before = await usdcOf(payTo);
    const store = await tokenStore();
    const storeBefore = await usdcOf(store);
    const nonce = await hotNonce();
    const b = await body(7_000n);
    const h = await hold(3_000_000n);
    const held = { x402Version: 2, paymentPayload: h.payload, paymentRequirements: h.requirements };
    const pending = [b, held].map((one) => api.post('/x402/settle', one).catch(() => null));
    const settlement = async (amount = '7000') =>
      k.t.kasse.db
        .selectFrom('x402_settlements')
        .select(['id', 'status', 'payment_id'])
        .where('amount', '=', amount)
        .executeTakeFirst();
    const transfer = async (id: string) =>
      k.t.kasse.db.selectFrom('evm_transfers').select('status').where('id', '=', id).executeTakeFirst();
    await eventually(
      'the API process to broadcast both settlements',
      async () => {
        const [s, t] = [await settlement(), await settlement('3000000')];
        return (
          s && t && (await transfer(s.id))?.status === 'broadcast' && (await transfer(t.id))?.status === 'broadcast'
        );
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = null;
    await Promise.all(pending);
    const s = (await settlement())!;
    assert.equal(s.status, 'pending', 'nothing recorded before the kill');
    assert.equal((await settlement('3000000'))!.status, 'pending');
    await k.chain.mine(1);
    k.t.clock.set(Date.now());
    // The workers role: the sender loop follows the transfer, the x402 loop records it once the request is over.
    await k.adapter.sender!.runDue();
    k.t.clock.advance(RESUME_AFTER_MS + 1000);
    await k.t.kasse.x402.resume();
    await k.t.kasse.x402.resume();
    assert.equal((await settlement())!.status, 'settled');
    assert.equal(await usdcOf(payTo), before + 7_000n, 'moved once');
    const holdRow = (await settlement('3000000'))!;
    assert.equal(holdRow.status, 'settled');
    assert.equal(await usdcOf(store), storeBefore + 3_000_000n, 'locked once');
    const heldPayment = await ok(k.m.test.get(`/payments/${holdRow.payment_id}`));
    assert.equal(heldPayment.status, 'authorized');
    assert.equal(heldPayment.authorization.amount_usd_cents, 300);
    assert.equal(await hotNonce(), nonce + 2, 'one transaction each');
    const list = await ok(k.m.test.get('/payments?source=x402&limit=100'));
    const paid = list.data.filter((p: any) => p.attempts[0].pay_amount === '7000');
    assert.equal(paid.length, 1, 'one payment');
    assert.equal(paid[0].status, 'paid');
    // The request that was answered died with its process; without a payment identifier a retry is a duplicate.
    const again = await ok(k.m.test.post('/x402/settle', b));
    assert.equal(again.errorReason, 'invalid_exact_evm_nonce_already_used');
    const heldAgain = await ok(k.m.test.post('/x402/settle', held));
    assert.equal(heldAgain.errorReason, 'invalid_auth_capture_evm_payment_already_collected');
    assert.equal(await hotNonce(), nonce + 2, 'still one transaction each');
  } finally {
    child?.kill('SIGKILL');
    await k.chain.setAutomine(true);
  }
});
