/**
 * Kasse as x402 facilitator on a PRIVATE Hardhat node with the test USDC: real `transferWithAuthorization` relayed
 * by the hot wallet (the agent holds no ETH), balances checked on chain. The official packages end to end; an
 * insufficient balance refused before anything is sent; one authorization settled concurrently through two Kasse
 * processes on one database (exactly one transaction, one payment); and an API process killed with SIGKILL between
 * broadcast and confirmation, after which the workers' pass settles it exactly once.
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
import { agentFetch, startShop } from './agents.ts';
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

async function body(units: bigint, signer = agent) {
  const now = Math.floor(Date.now() / 1000);
  const signed = await authorizationBody({
    signer,
    domain: { name: 'Test USDC', version: '2', chainId: 31337, verifyingContract: k.usdc },
    network: NETWORK,
    asset: k.usdc,
    payTo,
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
    const res = await agentFetch(agent, { anyAsset: true })(`${shop.url}/weather`);
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

test('one authorization settled concurrently by two processes: one transaction, one payment', async () => {
  const second = await startEvmKasse({
    rpcUrl: node.url,
    tiers: [{ max_usd_cents: null, confirmations: 1 }],
    finality: 2,
    databaseUrl: k.t.databaseUrl,
    secrets: k.secrets,
    contracts: { usdc: k.usdc, factory: k.factory, treasury: k.treasury, hotWalletKey: k.hotWalletKey },
  });
  try {
    second.t.clock.set(Date.now());
    const other = new ApiClient(second.t.urls.test, k.m.testKey);
    const nonce = await hotNonce();
    const before = await usdcOf(payTo);
    const b = await body(2_500n);
    const answers = await Promise.all([0, 1, 2, 3].map((i) => ok((i % 2 ? other : k.m.test).post('/x402/settle', b))));
    for (const a of answers) assert.equal(a.success, true, JSON.stringify(a));
    assert.equal(new Set(answers.map((a) => a.transaction)).size, 1, 'the same transaction');
    assert.equal(new Set(answers.map((a) => a.extra.payment_id)).size, 1, 'the same payment');
    assert.equal(await hotNonce(), nonce + 1, 'one transaction sent');
    assert.equal(await usdcOf(payTo), before + 2_500n, 'moved once');
  } finally {
    await second.close();
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
    const again = await ok(k.m.test.post('/x402/settle', b));
    assert.equal(again.success, true);
    assert.equal(again.transaction, paid[0].x402.transaction, 'a retry answers the same transaction');
  } finally {
    child?.kill('SIGKILL');
    await k.chain.setAutomine(true);
  }
});
