/**
 * Kasse as x402 facilitator on a PRIVATE Hardhat node with the test USDC: real `transferWithAuthorization` relayed
 * by the hot wallet (the agent holds no ETH), balances checked on chain. The official packages end to end, the agent
 * allowing the local token as docs/x402.md shows; an insufficient balance refused before anything is sent; one
 * PAYMENT-SIGNATURE sent five times at once through `@x402/hono` in front of two Kasse processes on one database
 * (one 200, one transaction, one payment); amounts above $1,000,000 refused before anything is sent and $1,000,000
 * itself recorded; an address handed out on the simulator retired once the node is configured, and the one derived in
 * its place settled into and swept by `kasse evm sweep`; and an API process killed with SIGKILL between broadcast and
 * confirmation, after which the workers' pass settles it exactly once.
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
import { startHardhatNode, type HardhatNode } from '../harness/hardhat.ts';
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

const NETWORK = 'eip155:31337';
let node: HardhatNode;
let k: EvmKasse;
let payTo: Address;
const agent = privateKeyToAccount(generatePrivateKey());

before(async () => {
  node = await startHardhatNode();
  k = await startEvmKasse({ rpcUrl: node.url, tiers: [{ max_usd_cents: null, confirmations: 1 }], finality: 2 });
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
  assert.deepEqual(s.kinds, [
    {
      x402Version: 2,
      scheme: 'exact',
      network: NETWORK,
      extra: { name: 'Test USDC', version: '2', asset: getAddress(k.usdc), decimals: 6, payTo },
    },
  ]);
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
  const sweep = evmCommands.find((c) => c.name === 'evm sweep')!;
  const report = (await sweep.run(k.t.kasse.familyContext, { mode: 'test', chain: 'base' }, [])) as SweepReport;
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

test('an API process killed (SIGKILL) between broadcast and confirmation settles exactly once', async () => {
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
    const nonce = await hotNonce();
    const b = await body(7_000n);
    const pending = api.post('/x402/settle', b).catch(() => null);
    const settlement = async () =>
      k.t.kasse.db
        .selectFrom('x402_settlements')
        .select(['id', 'status'])
        .where('amount', '=', '7000')
        .executeTakeFirst();
    const transfer = async (id: string) =>
      k.t.kasse.db.selectFrom('evm_transfers').select('status').where('id', '=', id).executeTakeFirst();
    await eventually(
      'the API process to broadcast the settlement',
      async () => {
        const s = await settlement();
        return s && (await transfer(s.id))?.status === 'broadcast';
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = null;
    await pending;
    const s = (await settlement())!;
    assert.equal(s.status, 'pending', 'nothing recorded before the kill');
    await k.chain.mine(1);
    k.t.clock.set(Date.now());
    // The workers role: the sender loop follows the transfer, the x402 loop records it once the request is over.
    await k.adapter.sender!.runDue();
    k.t.clock.advance(RESUME_AFTER_MS + 1000);
    await k.t.kasse.x402.resume();
    await k.t.kasse.x402.resume();
    assert.equal((await settlement())!.status, 'settled');
    assert.equal(await usdcOf(payTo), before + 7_000n, 'moved once');
    assert.equal(await hotNonce(), nonce + 1, 'one transaction');
    const list = await ok(k.m.test.get('/payments?source=x402&limit=100'));
    const paid = list.data.filter((p: any) => p.attempts[0].pay_amount === '7000');
    assert.equal(paid.length, 1, 'one payment');
    assert.equal(paid[0].status, 'paid');
    // The request that was answered died with its process; without a payment identifier a retry is a duplicate.
    const again = await ok(k.m.test.post('/x402/settle', b));
    assert.equal(again.errorReason, 'invalid_exact_evm_nonce_already_used');
    assert.equal(await hotNonce(), nonce + 1, 'still one transaction');
  } finally {
    child?.kill('SIGKILL');
    await k.chain.setAutomine(true);
  }
});
