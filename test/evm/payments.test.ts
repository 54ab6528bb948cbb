/**
 * EVM payments end to end through the public API, on a PRIVATE Hardhat node (this file mines, turns automine off
 * and reverts snapshots, so it owns its chain; see test/harness/hardhat.ts): a payment on base:usdc or base:eth gets
 * a CREATE2 forwarder address and an EIP-681 URI, a test wallet pays it, the watcher (ticked by hand) records the
 * deposit, and confirmations move it pending → confirmed → final while the payment goes detected → confirming →
 * paid, with signed webhooks. Then: underpaid and topped up, late, overpaid, wrong asset, several payments in one
 * block and a backlog scanned in batches within the RPC budget, a restart resuming from the cursor, and reorgs
 * (snapshot/revert) that orphan deposits, send payment.reorged and reverse the ledger before the payment is paid again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodeFunctionData, getAddress, parseEther, type Address, type Hash } from 'viem';
import { erc20Abi } from '../../src/chains/evm/contracts.ts';
import { MINUTE } from '../../src/core/clock.ts';
import { startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import { hardhatChain, startHardhatNode, type HardhatNode } from '../harness/hardhat.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';

let node: HardhatNode;
let k: EvmKasse;

before(async () => {
  node = await startHardhatNode();
  k = await startEvmKasse({ rpcUrl: node.url });
  const first = await k.tick(); // no cursor yet: starts at the head block
  assert.equal(first.scanned, 1);
});
after(async () => {
  await k?.close();
  await node?.stop();
});

let orderSeq = 0;
async function createPayment(token: 'base:usdc' | 'base:eth', cents = 1000) {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `evm-${++orderSeq}`,
    chain: 'base',
    token,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const attempt = res.body.attempts[0];
  return {
    id: res.body.id as string,
    address: attempt.address as Address,
    amount: BigInt(attempt.pay_amount),
    attempt,
  };
}

async function get(id: string) {
  const res = await k.m.test.get(`/payments/${id}`);
  assert.equal(res.status, 200);
  return res.body;
}

/** The merchant's credited balance in test mode (GET /balance). */
async function balanceCents(): Promise<number> {
  const res = await k.m.test.get('/balance');
  assert.equal(res.status, 200);
  return res.body.available_usd_cents;
}

describe('payment flow', () => {
  test('base:usdc: address, URI, deposit pending → confirmed → final, payment detected → confirming → paid', async () => {
    const p = await createPayment('base:usdc', 1000);
    assert.equal(p.amount, 10_000_000n);
    assert.match(p.address, /^0x[0-9a-fA-F]{40}$/);
    assert.equal(p.attempt.uri, `ethereum:${getAddress(k.usdc)}@31337/transfer?address=${p.address}&uint256=10000000`);
    assert.equal(
      await k.chain.client.getCode({ address: p.address }),
      undefined,
      'a deposit address is an empty account',
    );

    const hash = await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount);
    const receipt = await k.chain.receipt(hash);
    const r = await k.tick();
    assert.equal(r.deposits, 1);

    let pay = await get(p.id);
    let dep = pay.attempts[0].deposits[0];
    assert.equal(dep.tx_hash, hash);
    assert.equal(dep.token, 'base:usdc');
    assert.equal(dep.amount, '10000000');
    assert.equal(dep.from?.toLowerCase(), k.payer.address.toLowerCase());
    assert.equal(dep.block_number, receipt.blockNumber.toString());
    assert.equal(dep.status, 'pending');
    assert.equal(dep.confirmations, 1);
    assert.equal(dep.explorer_url, `https://sepolia.basescan.org/tx/${hash}`);
    assert.equal(pay.attempts[0].confirmation_tier, 1);
    assert.equal(Number(pay.attempts[0].confirmations_required), 3);
    assert.equal(pay.status, 'confirming');
    assert.deepEqual(k.eventTypes(p.id), ['payment.detected', 'payment.confirming']);

    await k.chain.mine(1);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits[0].confirmations, 2);
    assert.equal(pay.status, 'confirming');

    await k.chain.mine(1);
    await k.tick();
    pay = await get(p.id);
    dep = pay.attempts[0].deposits[0];
    assert.equal(dep.status, 'confirmed');
    assert.equal(dep.confirmations, 3);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.paid_attempt_id, pay.attempts[0].id);
    assert.deepEqual(k.eventTypes(p.id), ['payment.detected', 'payment.confirming', 'payment.paid']);
    const paidEvent = k.receiver!.events.find((e) => e.data.id === p.id && e.type === 'payment.paid')!;
    assert.equal(paidEvent.data.status, 'paid');

    await k.chain.mine(5);
    await k.tick();
    dep = (await get(p.id)).attempts[0].deposits[0];
    assert.equal(dep.status, 'final');
    assert.equal(dep.confirmations, 8);
  });

  test('base:eth: native transfer to the forwarder address, EIP-681 value URI, paid', async () => {
    const p = await createPayment('base:eth', 1500);
    assert.equal(p.amount, 5_000_000_000_000_000n, '15 USD at 3000 USD/ETH');
    assert.equal(p.attempt.uri, `ethereum:${p.address}@31337?value=5000000000000000`);
    const hash = await k.chain.sendEth(k.payer, p.address, p.amount);
    await k.chain.receipt(hash);
    await k.tick();
    let pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits[0].token, 'base:eth');
    assert.equal(pay.attempts[0].deposits[0].amount, p.amount.toString());
    assert.equal(pay.status, 'confirming');
    await k.chain.mine(2);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.deepEqual(k.eventTypes(p.id), ['payment.detected', 'payment.confirming', 'payment.paid']);
  });

  test('underpaid, then topped up within the coin hold: paid', async () => {
    const p = await createPayment('base:usdc', 2000);
    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, 15_000_000n));
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    let pay = await get(p.id);
    assert.equal(pay.status, 'underpaid');
    assert.equal(pay.attempts[0].received_amount, '15000000');
    assert.ok(k.eventTypes(p.id).includes('payment.underpaid'));

    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, 5_000_000n));
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].deposits.length, 2);
    assert.equal(k.eventTypes(p.id).at(-1), 'payment.paid');
  });

  test('underpayment tolerance: short by exactly the allowed amount is paid, one unit more is underpaid', async () => {
    assert.equal((await k.m.test.patch('/account', { underpayment_tolerance_bps: 50 })).status, 200);
    try {
      const atBound = await createPayment('base:usdc', 2000);
      const over = await createPayment('base:usdc', 2000);
      const allowed = (atBound.amount * 50n) / 10_000n; // 20 000 000 × 0.5 % = 100 000
      assert.equal(allowed, 100_000n);
      const before = await balanceCents();
      await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, atBound.address, atBound.amount - allowed));
      await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, over.address, over.amount - allowed - 1n));
      await k.tick();
      await k.chain.mine(3);
      await k.tick();
      const paid = await get(atBound.id);
      assert.equal(paid.status, 'paid');
      assert.equal(paid.underpaid_within_tolerance, true);
      assert.equal(paid.tolerance_shortfall, allowed.toString());
      assert.equal(k.eventTypes(atBound.id).at(-1), 'payment.paid');
      // Credited at floor(2000 × 0.995) = 1990 cents, less the 1 % fee on that (20).
      assert.equal((await balanceCents()) - before, 1970, 'the value received is credited, less the fee on it');
      const short = await get(over.id);
      assert.equal(short.status, 'underpaid');
      assert.equal(short.underpaid_within_tolerance, undefined);
      assert.equal(k.eventTypes(over.id).at(-1), 'payment.underpaid');
    } finally {
      await k.m.test.patch('/account', { underpayment_tolerance_bps: 0 });
    }
  });

  test('money after the coin hold ran out is found and reported late', async () => {
    const p = await createPayment('base:usdc', 1200);
    k.t.clock.advance(11 * MINUTE);
    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount));
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'late');
    assert.ok(k.eventTypes(p.id).includes('payment.late'));
  });

  test('overpaid: paid and overpaid', async () => {
    const p = await createPayment('base:usdc', 1000);
    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, 12_500_000n));
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].overpaid, true);
    const types = k.eventTypes(p.id);
    assert.deepEqual(types.slice(-2), ['payment.paid', 'payment.overpaid']);
  });

  test('wrong asset: ETH sent to a USDC address is found and flagged', async () => {
    const p = await createPayment('base:usdc', 1000);
    await k.chain.receipt(await k.chain.sendEth(k.payer, p.address, parseEther('0.001')));
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.attempts[0].wrong_asset, true);
    assert.equal(pay.attempts[0].deposits[0].token, 'base:eth');
    assert.ok(k.eventTypes(p.id).includes('payment.wrong_asset'));
    assert.notEqual(pay.status, 'paid');
  });
});

describe('scanning', () => {
  test('several payments in one block, and a backlog scanned in batches within 3 RPC calls per block', async () => {
    const payments = await Promise.all([1, 2, 3, 4].map(() => createPayment('base:usdc', 500)));
    await k.chain.setAutomine(false);
    try {
      for (const p of payments.slice(0, 3)) await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount);
      await k.chain.mine(1);
      await k.chain.mine(45);
      await k.chain.sendToken(k.payer, k.usdc, payments[3]!.address, payments[3]!.amount);
      await k.chain.mine(1);
    } finally {
      await k.chain.setAutomine(true);
    }
    const rpc = k.adapter.rpc();
    const before = rpc.totalCalls;
    const r = await k.tick();
    const calls = rpc.totalCalls - before;
    assert.equal(r.scanned, 47);
    assert.equal(r.deposits, 4);
    assert.ok(calls <= 3 * r.scanned, `${calls} RPC calls for ${r.scanned} blocks`);
    // 47 blocks in batches of 20: 47 blocks + 3 getLogs + 1 head = 51
    assert.equal(calls, 51);
    const statuses = await Promise.all(payments.map(async (p) => (await get(p.id)).status));
    assert.deepEqual(statuses, ['paid', 'paid', 'paid', 'confirming']);
    const blocks = new Set(
      await Promise.all(payments.slice(0, 3).map(async (p) => (await get(p.id)).attempts[0].deposits[0].block_number)),
    );
    assert.equal(blocks.size, 1, 'the first three were in one block');
  });

  test('a restarted watcher resumes from the stored cursor and misses nothing mined while it was down', async () => {
    const cursor = (await k.watcher.cursor())!;
    const p = await createPayment('base:usdc', 700);
    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount));
    await k.chain.mine(4);
    const fresh = k.adapter.watcher(k.t.kasse.payments.deposits);
    const r = await fresh.tick();
    await k.t.kasse.webhooks.drain();
    assert.equal(r.scanned, Number((await k.chain.blockNumber()) - cursor.number));
    assert.equal((await get(p.id)).status, 'paid');
    assert.equal((await k.watcher.cursor())!.number, await k.chain.blockNumber());
  });
});

describe('reorgs', () => {
  test('a paid payment whose block leaves the chain: deposit orphaned, payment.reorged, ledger reversed; re-mined: paid again', async () => {
    const p = await createPayment('base:usdc', 3000);
    const balance0 = await balanceCents();
    const snap = await k.chain.snapshot();
    // Sign once, so the very same transaction can be included again on the new chain.
    const request = await k.payer.prepareTransactionRequest({
      account: k.payer.account,
      chain: hardhatChain,
      to: k.usdc,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [p.address, p.amount] }),
    });
    const raw = await k.payer.signTransaction(request as Parameters<typeof k.payer.signTransaction>[0]);
    const hash = await k.chain.rpc<Hash>('eth_sendRawTransaction', [raw]);
    const oldBlock = (await k.chain.receipt(hash)).blockNumber;
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    let pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    const balancePaid = await balanceCents();
    assert.ok(balancePaid > balance0, 'credited');
    const headBefore = await k.chain.blockNumber();

    await k.chain.revert(snap); // the payment's block and the 3 after it are gone
    await k.chain.mine(Number(headBefore - (await k.chain.blockNumber())) + 1); // a longer chain without the transaction
    const r = await k.tick();
    assert.equal(r.reorgFrom, oldBlock);
    pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits[0].status, 'orphaned');
    assert.notEqual(pay.status, 'paid');
    assert.ok(k.eventTypes(p.id).includes('payment.reorged'));
    const balanceReorged = await balanceCents();
    assert.equal(balanceReorged, balance0, 'credit reversed');
    const reversal = await k.t.kasse.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('payment_id', '=', p.id)
      .where('reverses', 'is not', null)
      .execute();
    assert.equal(reversal.length, 1, 'one reversing ledger transaction');

    // The same transaction is included again, in another block.
    assert.equal(await k.chain.rpc<Hash>('eth_sendRawTransaction', [raw]), hash);
    const newBlock = (await k.chain.receipt(hash)).blockNumber;
    assert.notEqual(newBlock, oldBlock);
    await k.tick();
    await k.chain.mine(3);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].deposits.length, 1);
    assert.equal(pay.attempts[0].deposits[0].block_number, newBlock.toString());
    const types = k.eventTypes(p.id);
    // Back to what the remaining deposits justify (nothing: waiting), then the re-included transfer counts again.
    assert.deepEqual(types.slice(types.indexOf('payment.reorged')), [
      'payment.reorged',
      'payment.detected',
      'payment.confirming',
      'payment.paid',
    ]);
    assert.equal(await balanceCents(), balancePaid, 'credited again');
  });

  test('a reorg onto a chain of the same height is seen through the changed hash at the tip', async () => {
    const p = await createPayment('base:usdc', 900);
    await k.tick();
    const snap = await k.chain.snapshot();
    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount));
    await k.tick();
    assert.equal((await get(p.id)).attempts[0].deposits[0].status, 'pending');
    const height = await k.chain.blockNumber();
    await k.chain.revert(snap);
    await k.chain.mine(1); // same height, other block
    assert.equal(await k.chain.blockNumber(), height);
    const r = await k.tick();
    assert.equal(r.reorgFrom, height);
    const pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(pay.status, 'waiting');
  });

  test('a head that went backwards with the same hashes is a lagging node: wait, skip nothing', async () => {
    // Reverting to a snapshot without mining looks exactly like a node that has not caught up yet.
    const p = await createPayment('base:usdc', 800);
    await k.tick();
    const snap = await k.chain.snapshot();
    await k.chain.mine(3);
    await k.tick();
    const cursor = (await k.watcher.cursor())!.number;
    await k.chain.revert(snap);
    const r = await k.tick();
    assert.equal(r.lagging, true);
    assert.equal((await k.watcher.cursor())!.number, cursor, 'the cursor stays');
    // The "node" catches up along another chain that pays the payment: found.
    await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, p.amount));
    await k.chain.mine(5);
    const r2 = await k.tick();
    assert.ok(r2.reorgFrom !== null);
    assert.equal((await get(p.id)).status, 'paid');
  });
});

test('every month of every merchant’s statement reconciles with its payments and refunds', async () => {
  assert.ok((await assertEveryMerchantReconciles(k.t.kasse)) > 0);
});
