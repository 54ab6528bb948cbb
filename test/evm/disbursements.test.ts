/**
 * Disbursements on a PRIVATE Hardhat node (this file turns automine off): real USDC payouts through the hot-wallet
 * sender and the Disperse contract. 500 destinations are paid and their balances checked on chain; a payout to a
 * destination the token refuses fails alone and gives its amount back; the sender is stopped between signing,
 * broadcast and confirmation — by dropping one Kasse and opening another on the same database, and by SIGKILL of a
 * real workers process — and no payout is sent twice or lost. Every event reaches a receiver that verifies it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { encodeFunctionData, getAddress, type Address } from 'viem';
import { erc20Abi } from '../../src/chains/evm/contracts.ts';
import type { EvmSender } from '../../src/chains/evm/sender.ts';
import type { Actor } from '../../src/modules/audit/service.ts';
import { createUser } from '../harness/dashboard.ts';
import { eventually } from '../harness/expect.ts';
import { startEvmKasse, workersProcesses, type EvmKasse, type WorkersProcess } from '../harness/evm-kasse.ts';
import { countQueries } from '../harness/query-count.ts';
import { hardhatChain, startHardhatNode, TestChain, type HardhatNode } from '../harness/hardhat.ts';

let node: HardhatNode;
let k: EvmKasse;
let sender: EvmSender;
let disperse: Address;
let owner: { id: string; actor: Actor };

before(async () => {
  node = await startHardhatNode();
  const chain = new TestChain(node.url);
  disperse = await chain.deployDisperse(await chain.newWallet());
  k = await startEvmKasse({
    rpcUrl: node.url,
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
    finality: 4,
    evm: { disperse, disperse_max_items: 200 },
  });
  await k.tick();
  sender = k.adapter.sender!;
  assert.deepEqual(sender.disperse, { contract: getAddress(disperse), maxItems: 200 });
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, sender.address, 10n ** 12n));
  const u = await createUser(k.t.kasse, k.m.id, 'owner@example.com', 'owner');
  owner = { id: u.id, actor: { type: 'user', id: u.id, label: 'owner@example.com', ip: null } };
  // The merchant's balance: a real USDC payment of $10,000 seen by the watcher.
  const res = await k.m.test.post('/payments', {
    price_amount: 1_000_000,
    price_currency: 'USD',
    order_id: 'funds',
    chain: 'base',
    token: 'base:usdc',
  });
  const attempt = res.body.attempts[0];
  await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, attempt.address, BigInt(attempt.pay_amount)));
  await k.tick();
  await k.chain.mine(1);
  await k.tick();
  assert.equal((await k.m.test.get(`/payments/${res.body.id}`)).body.status, 'paid');
});
after(async () => {
  await k?.close();
  await node?.stop();
});

const fresh = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);

/** Creates, approves and releases a batch through the API and the owners' service; returns it released. */
async function released(
  items: Array<{ destination: Address; usd_cents: number }>,
  kasse = k.t.kasse,
  client = k.m.test,
) {
  const res = await client.post('/disbursements', { title: `Batch of ${items.length}`, items });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const d = kasse.disbursements;
  await d.approve(
    { mode: 'test', merchantId: k.m.id },
    res.body.id,
    owner.id,
    await d.digest({ mode: 'test', merchantId: k.m.id }, res.body.id),
    owner.actor,
  );
  return d.release({ mode: 'test', merchantId: k.m.id }, res.body.id, owner.id, owner.actor);
}

async function get(id: string) {
  return (await k.m.test.get(`/disbursements/${id}`)).body;
}

/** Worker passes a minute apart with a block mined in between until nothing is open (bounded). */
async function sendAll(s: EvmSender = sender, id?: string) {
  for (let i = 0; i < 40; i++) {
    k.t.clock.advance(60_000);
    await s.runDue();
    if (id && (await get(id)).progress.open === 0) return;
    if (
      !id &&
      (await k.t.kasse.db
        .selectFrom('evm_transfers')
        .select('id')
        .where('status', 'in', ['pending', 'signed', 'broadcast'])
        .executeTakeFirst()) === undefined
    )
      return;
    await k.chain.mine(1);
  }
  const open = await k.t.kasse.db
    .selectFrom('evm_transfers')
    .select(['id', 'purpose', 'status', 'error'])
    .where('status', 'in', ['pending', 'signed', 'broadcast'])
    .where('batch_id', 'is', null)
    .execute();
  throw new Error(`payouts still open after 40 passes: ${JSON.stringify(open)}`);
}

async function hotNonce(): Promise<number> {
  return k.chain.client.getTransactionCount({ address: sender.address });
}

async function deliver() {
  while ((await k.t.kasse.webhooks.delivery.runOnce()) > 0);
}

describe('disbursements on chain', () => {
  test('500 USDC payouts reach their 500 destinations, in batches, each exactly once', async () => {
    const items = Array.from({ length: 500 }, (_, i) => ({ destination: fresh(), usd_cents: 100 + i }));
    const nonceBefore = await hotNonce();
    const balanceBefore = (await k.m.test.get('/balance')).body.available_usd_cents;
    const d = await released(items);
    const total = items.reduce((s, i) => s + i.usd_cents, 0);
    assert.equal((await k.m.test.get('/balance')).body.available_usd_cents, balanceBefore - total);
    const { count } = await countQueries(() => sendAll(sender, d.id));
    const done = await get(d.id);
    assert.deepEqual(done.progress, { sent: 500, failed: 0, open: 0 });
    // A batch's payouts settle in its one database transaction (and are reported signed and broadcast together).
    assert.ok(count.commits <= 60, `${count.commits} database transactions for 500 payouts in 3 batches`);
    for (const [n, item] of items.entries()) {
      const onChain = await k.chain.tokenBalance(k.usdc, item.destination);
      assert.equal(onChain, BigInt(item.usd_cents) * 10_000n, `destination ${n + 1}`);
      assert.equal(done.items[n].payout.status, 'sent');
      assert.match(done.items[n].payout.tx_hash, /^0x[0-9a-f]{64}$/);
    }
    // One approval of the contract and three batches (200, 200, 100): four transactions for 500 payouts.
    assert.equal((await hotNonce()) - nonceBefore, 4);
    assert.equal(new Set(done.items.map((i: any) => i.payout.tx_hash)).size, 3);
    assert.equal((await k.m.test.get('/balance')).body.available_usd_cents, balanceBefore - total);
    const events = await k.t.kasse.db.selectFrom('events').select('type').where('ordering_key', '=', d.id).execute();
    assert.equal(events.filter((e) => e.type === 'payout.sent').length, 500);
    assert.equal(events.filter((e) => e.type === 'disbursement.completed').length, 1);
  });

  test('a destination the token refuses fails alone, gives its amount back, and the others are sent', async () => {
    const blocked = fresh();
    const deployer = await k.chain.newWallet();
    await k.chain.receipt(
      await deployer.sendTransaction({
        to: k.usdc,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'setBlocked', args: [blocked, true] }),
        account: deployer.account,
        chain: hardhatChain,
      }),
    );
    const others = [fresh(), fresh()];
    const before = (await k.m.test.get('/balance')).body.available_usd_cents;
    const d = await released([
      { destination: others[0]!, usd_cents: 1000 },
      { destination: blocked, usd_cents: 2000 },
      { destination: others[1]!, usd_cents: 3000 },
    ]);
    await sendAll(sender, d.id);
    const done = await get(d.id);
    assert.deepEqual(done.progress, { sent: 2, failed: 1, open: 0 });
    assert.equal(done.items[1].payout.status, 'failed');
    assert.match(done.items[1].payout.error, /refused/);
    assert.equal(done.items[0].payout.tx_hash, done.items[2].payout.tx_hash, 'one batch carried them');
    assert.equal(await k.chain.tokenBalance(k.usdc, blocked), 0n);
    assert.equal(await k.chain.tokenBalance(k.usdc, others[0]!), 10_000_000n);
    assert.equal(await k.chain.tokenBalance(k.usdc, others[1]!), 30_000_000n);
    assert.equal(
      (await k.m.test.get('/balance')).body.available_usd_cents,
      before - 4000,
      'the refused payout gave its $20 back',
    );
    await deliver();
    const types = k.receiver!.events.filter((e) => e.data.id === d.id).map((e) => e.type);
    assert.deepEqual(
      types.filter((t) => t.startsWith('disbursement.')),
      ['disbursement.created', 'disbursement.approved', 'disbursement.released', 'disbursement.completed'],
    );
    assert.deepEqual(types.filter((t) => t.startsWith('payout.')).sort(), [
      'payout.failed',
      'payout.sent',
      'payout.sent',
    ]);
    assert.equal(k.receiver!.rejected.length, 0);
  });

  test('stopped between signing, broadcast and confirmation, a new Kasse sends the same batch once', async () => {
    // Two more Kasses on the same database stand for the processes started after each crash.
    const again = () =>
      startEvmKasse({
        rpcUrl: node.url,
        databaseUrl: k.t.databaseUrl,
        secrets: k.secrets,
        contracts: { usdc: k.usdc, factory: k.factory, treasury: k.treasury, hotWalletKey: k.hotWalletKey },
        tiers: [{ max_usd_cents: null, confirmations: 2 }],
        finality: 4,
        evm: { disperse },
        receiver: false,
      });
    const k2 = await again();
    const k3 = await again();
    await k.chain.setAutomine(false);
    try {
      const destinations = [fresh(), fresh(), fresh()];
      const d = await released(destinations.map((destination) => ({ destination, usd_cents: 500 })));
      const nonceBefore = await hotNonce();
      await sender.formBatches();
      const member = await sender.get(d.items[0]!.payout!.id);
      const batchId = member!.batch_id!;
      assert.match(batchId, /^dsp_/);
      // Step 1: signed, not broadcast. The items show it.
      await sender.step(batchId);
      const signed = (await sender.get(batchId))!;
      assert.equal(signed.status, 'signed');
      assert.deepEqual(
        (await get(d.id)).items.map((i: any) => [i.payout.status, i.payout.tx_hash]),
        destinations.map(() => ['signed', signed.tx_hash]),
      );

      // The process dies here. A fresh Kasse on the same database picks the batch up and broadcasts the same bytes.
      {
        const s2 = k2.adapter.sender!;
        await s2.step(batchId);
        assert.equal((await s2.get(batchId))!.status, 'broadcast');
        const pool = await k.chain
          .rpc<{ pending: Record<string, Record<string, { hash: string }>> }>('txpool_content')
          .catch(() => null);
        if (pool)
          assert.ok(
            JSON.stringify(pool).includes(signed.tx_hash!.toLowerCase()),
            'the stored transaction is what was broadcast',
          );
        assert.deepEqual(
          (await get(d.id)).items.map((i: any) => i.payout.status),
          ['broadcast', 'broadcast', 'broadcast'],
        );

        // Dies again after the broadcast; the next one re-broadcasts the same bytes (harmless) and waits.
        {
          const s3 = k3.adapter.sender!;
          await s3.runDue();
          await k.chain.mine(1);
          await s3.runDue();
          assert.equal((await s3.get(batchId))!.status, 'broadcast', 'one confirmation is not enough');
          await k.chain.mine(1);
          await s3.runDue();
          assert.equal((await s3.get(batchId))!.status, 'sent');
        }
      }
      const done = await get(d.id);
      assert.deepEqual(done.progress, { sent: 3, failed: 0, open: 0 });
      for (const dest of destinations)
        assert.equal(await k.chain.tokenBalance(k.usdc, dest), 5_000_000n, 'paid exactly once');
      assert.equal((await hotNonce()) - nonceBefore, 1, 'one transaction');
      assert.equal(done.items[0].payout.tx_hash, signed.tx_hash);
    } finally {
      await k.chain.setAutomine(true);
      await k2.close();
      await k3.close();
    }
  });

  test('a workers process killed mid-batch (SIGKILL) and started again sends every payout once', async () => {
    await k.chain.setAutomine(false);
    let child: WorkersProcess | null = null;
    try {
      const destinations = Array.from({ length: 30 }, () => fresh());
      const d = await released(destinations.map((destination, i) => ({ destination, usd_cents: 100 + i })));
      const nonceBefore = await hotNonce();
      // The workers process's networks hold a sender's lease 3 s (`sender_lease_ms`): the restarted process takes the
      // killed one's leased transfers over once it runs out, as after the default minute, without waiting a minute.
      const start = workersProcesses(k, 'dsb');
      const status = async () => {
        const member = await k.t.kasse.db
          .selectFrom('evm_transfers')
          .select('batch_id')
          .where('id', '=', d.items[0]!.payout!.id)
          .executeTakeFirst();
        if (!member?.batch_id) return null;
        return (
          await k.t.kasse.db
            .selectFrom('evm_transfers')
            .select('status')
            .where('id', '=', member.batch_id)
            .executeTakeFirstOrThrow()
        ).status;
      };
      child = start();
      // Killed once the batch is out (broadcast, not mined: automine is off).
      await eventually('the workers process to broadcast the batch', async () => (await status()) === 'broadcast', {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      await child.kill();
      child = null;
      assert.notEqual((await get(d.id)).progress.sent, 30, 'nothing settled before the kill');
      await k.chain.mine(3);
      child = start();
      // Polls the service, not the API (the API key's rate limit is not what is tested here).
      // Well within the default minute's lease (start-up included): the 3 s one is what the restarted process waited out.
      await eventually(
        'the restarted workers process to settle the batch (45 s)',
        async () => (await k.t.kasse.disbursements.get({ mode: 'test', merchantId: k.m.id }, d.id)).progress.open === 0,
        { timeoutMs: 45_000, intervalMs: 100 },
      );
      await child.kill();
      child = null;
      const done = await get(d.id);
      assert.deepEqual(done.progress, { sent: 30, failed: 0, open: 0 });
      for (const [i, dest] of destinations.entries())
        assert.equal(await k.chain.tokenBalance(k.usdc, dest), BigInt(100 + i) * 10_000n);
      assert.equal((await hotNonce()) - nonceBefore, 1, 'one batch transaction, sent once');
    } finally {
      await child?.kill();
      await k.chain.setAutomine(true);
    }
  });
});
