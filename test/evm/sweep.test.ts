/**
 * The operator's EVM commands on the run's shared Hardhat node (own wallets and contracts; blocks mined by the other
 * file only add confirmations, which nothing here depends on): `kasse evm deploy-factory` deploys the factory from
 * the hot wallet, and `kasse evm sweep` moves confirmed deposits (USDC and ETH) to the treasury in batches through
 * it, records the sweeps, skips what is already swept or only pending, and sweeps a deployed forwarder again when
 * more money arrives (the watcher then checks the receipt of native transfers to it).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { getAddress, parseEther, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { forwarderFactoryAbi } from '../../src/chains/evm/contracts.ts';
import { AUTH_CAPTURE_V1_1 } from '../../src/chains/evm/escrow.ts';
import type { SweepReport } from '../../src/chains/evm/operations.ts';
import { evmCommands } from '../../src/chains/evm/commands.ts';
import type { Kasse } from '../../src/kasse.ts';
import { startTestKasse, testSecrets } from '../harness/app.ts';
import { networksDocument, startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import { sharedEvmRpc, TestChain } from '../harness/hardhat.ts';

const command = (name: string) => evmCommands.find((c) => c.name === name)!;
const run = (kasse: Kasse, name: string, flags: Record<string, string | boolean>) =>
  command(name).run(kasse.familyContext, { mode: 'test', chain: 'base', ...flags }, []);

let chain: TestChain;
let k: EvmKasse;
let usdc: Address;
let treasury: Address;
let hotWalletKey: Hex;
let deployed: { factory: Address; owner: Address; treasury: Address };

before(async () => {
  chain = new TestChain(sharedEvmRpc());
  const deployer = await chain.newWallet();
  usdc = await chain.deployTestUsdc(deployer);
  treasury = (await chain.newWallet('0')).address;
  hotWalletKey = generatePrivateKey();
  await chain.setBalance(privateKeyToAccount(hotWalletKey).address, parseEther('100'));

  // An operator's first start: the network is configured, the factory not yet deployed.
  const dir = mkdtempSync(join(tmpdir(), 'kasse-sweep-'));
  const file = join(dir, 'networks.json');
  const doc = networksDocument({
    rpcUrls: [sharedEvmRpc()],
    usdc,
    factory: treasury,
    treasury,
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
    finality: 20,
    pollIntervalMs: 10_000,
  });
  delete (doc.networks[0] as { evm?: unknown }).evm;
  writeFileSync(file, JSON.stringify(doc));
  const nowhere = 'http://127.0.0.1:9'; // no price provider is needed to deploy
  const first = await startTestKasse({
    env: { KASSE_NETWORKS_FILE: file, KASSE_COINGECKO_URL: nowhere, KASSE_BINANCE_URL: nowhere },
    secrets: { ...testSecrets(), hotWalletKey },
  });
  try {
    assert.equal(first.kasse.chains.hasAdapter('test', 'base'), false, 'no factory, no EVM adapter');
    await assert.rejects(run(first.kasse, 'evm sweep', {}), /deploy-factory/);
    deployed = (await run(first.kasse, 'evm deploy-factory', { treasury })) as typeof deployed;
  } finally {
    await first.close();
  }
  k = await startEvmKasse({
    rpcUrl: sharedEvmRpc(),
    contracts: { usdc, factory: deployed.factory, treasury, hotWalletKey },
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
    finality: 20,
  });
  await k.tick();
});
after(async () => {
  await k?.close();
});

let orderSeq = 0;
async function paid(
  token: 'base:usdc' | 'base:eth',
  cents: number,
  confirm = true,
): Promise<{ id: string; address: Address; amount: bigint }> {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `sweep-${++orderSeq}`,
    chain: 'base',
    token,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const p = {
    id: res.body.id as string,
    address: res.body.attempts[0].address as Address,
    amount: BigInt(res.body.attempts[0].pay_amount),
  };
  const hash =
    token === 'base:usdc'
      ? await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount)
      : await k.chain.sendEth(k.payer, p.address, p.amount);
  await k.chain.receipt(hash);
  if (confirm) await k.chain.mine(2);
  await k.tick();
  if (confirm) assert.equal((await k.m.test.get(`/payments/${p.id}`)).body.status, 'paid');
  return p;
}

test('deploy-factory: the hot wallet owns the factory, which sweeps to the treasury', async () => {
  const hot = privateKeyToAccount(hotWalletKey).address;
  assert.equal(deployed.owner, hot);
  assert.equal(getAddress(deployed.treasury), getAddress(treasury));
  assert.equal(
    await chain.client.readContract({ address: deployed.factory, abi: forwarderFactoryAbi, functionName: 'owner' }),
    hot,
  );
  assert.deepEqual((deployed as unknown as { networks_file: unknown }).networks_file, {
    evm: { forwarder_factory: deployed.factory, treasury: getAddress(treasury) },
  });
});

test('sweep: confirmed deposits reach the treasury in batches; swept and pending addresses are left alone', async () => {
  const usdcPayments = [await paid('base:usdc', 1000), await paid('base:usdc', 250), await paid('base:usdc', 150)];
  const ethPayment = await paid('base:eth', 1500);
  const pending = await paid('base:usdc', 500, false);

  const dry = (await run(k.t.kasse, 'evm sweep', { 'dry-run': true })) as SweepReport;
  assert.equal(dry.due, 4);
  assert.equal(dry.transactions.length, 0);
  assert.ok(!dry.addresses!.includes(pending.address.toLowerCase()));

  const report = (await run(k.t.kasse, 'evm sweep', { batch: '2' })) as SweepReport;
  assert.equal(report.due, 4);
  assert.equal(report.transactions.length, 2);
  for (const tx of report.transactions) {
    assert.equal(tx.status, 'confirmed');
    assert.deepEqual(tx.failed_addresses, []);
  }
  const usdcTotal = usdcPayments.reduce((s, p) => s + p.amount, 0n);
  assert.equal(await chain.tokenBalance(usdc, treasury), usdcTotal);
  assert.equal(await chain.balance(treasury), ethPayment.amount);
  assert.equal(await chain.tokenBalance(usdc, pending.address), pending.amount, 'pending deposit not swept');
  const swept = report.transactions.reduce((s, t) => s + BigInt(t.tokens['base:usdc'] ?? '0'), 0n);
  assert.equal(swept, usdcTotal);

  const rows = await k.t.kasse.db
    .selectFrom('evm_sweeps')
    .selectAll()
    .where('mode', '=', 'test')
    .where('chain', '=', 'base')
    .execute();
  assert.equal(rows.length, 2);
  assert.ok(rows.every((r) => r.status === 'confirmed' && r.block_number !== null));
  const items = await k.t.kasse.db.selectFrom('evm_sweep_items').selectAll().execute();
  assert.equal(items.length, 4);
  assert.ok(items.every((i) => i.ok === true));

  const again = (await run(k.t.kasse, 'evm sweep', {})) as SweepReport;
  assert.equal(again.due, 0);
  assert.equal(again.transactions.length, 0);
});

test('money arriving at a swept (deployed) forwarder is seen and swept again', async () => {
  const item = await k.t.kasse.db
    .selectFrom('evm_sweep_items')
    .select(['address'])
    .where('ok', '=', true)
    .executeTakeFirstOrThrow();
  const address = getAddress(item.address);
  assert.ok(((await chain.client.getCode({ address })) ?? '0x').length > 2, 'forwarder deployed');
  const before = await chain.balance(treasury);
  const hash = await k.chain.sendEth(k.payer, address, parseEther('0.002'));
  await k.chain.receipt(hash);
  await k.chain.mine(2);
  await k.tick();
  const dep = await k.t.kasse.db
    .selectFrom('deposits')
    .selectAll()
    .where('tx_hash', '=', hash)
    .executeTakeFirstOrThrow();
  assert.equal(dep.status, 'confirmed');
  const report = (await run(k.t.kasse, 'evm sweep', {})) as SweepReport;
  assert.ok(report.due >= 1); // and the earlier pending payment, confirmed by now
  assert.equal(report.transactions[0]!.status, 'confirmed');
  assert.deepEqual(report.transactions[0]!.failed_addresses, []);
  assert.equal(await chain.balance(treasury), before + parseEther('0.002'));
});

test('evm status reports the cursor against the head and the hot wallet', async () => {
  const s = (await run(k.t.kasse, 'evm status', {})) as Record<string, string | null>;
  assert.equal(s.forwarder_factory, deployed.factory);
  assert.equal(s.hot_wallet, privateKeyToAccount(hotWalletKey).address);
  assert.ok(BigInt(s.head!) >= BigInt(s.cursor!));
  assert.equal(s.watch_path, 'poll', 'no ws_urls: polling only');
  assert.equal(s.push_error, 'no ws_urls configured');
});

test('deploy-escrow places the hold-and-capture escrow at its canonical addresses on the local node; live mode is refused', async () => {
  const placed = (await run(k.t.kasse, 'evm deploy-escrow', {})) as Record<string, any>;
  assert.equal(placed.escrow, AUTH_CAPTURE_V1_1.escrow);
  assert.deepEqual(placed.networks_file.evm.auth_capture, {
    escrow: AUTH_CAPTURE_V1_1.escrow,
    erc3009_collector: AUTH_CAPTURE_V1_1.erc3009Collector,
    operator_refund_collector: AUTH_CAPTURE_V1_1.operatorRefundCollector,
  });
  for (const address of Object.values(AUTH_CAPTURE_V1_1))
    assert.notEqual(await chain.rpc('eth_getCode', [address, 'latest']), '0x', address);
  assert.deepEqual(await run(k.t.kasse, 'evm deploy-escrow', {}), placed, 'placing again changes nothing');
  await assert.rejects(run(k.t.kasse, 'evm deploy-escrow', { mode: 'live' }), /canonical escrow deployment/);
});
