/**
 * Bitcoin-family payments end to end through the public API against Litecoin Core in regtest, on a PRIVATE node
 * (this file mines at will and reorgs with `invalidateblock`, so it owns its chain; see test/harness/litecoind.ts).
 * A payment on litecoin:ltc gets a BIP-84 address and a BIP-21 URI, a node wallet pays it with real transactions,
 * the watcher (ticked by hand) sees the payment in the mempool (`detected` at zero confirmations) and then in
 * blocks (`confirming`, `paid` by the amount's tier). Then: under then rest, over, late, several outputs of one
 * transaction, an RBF replacement orphaning the first deposit, a reorg reversing a credit and the payment paid
 * again, a restart mid-watch. Wrong asset cannot happen on a single-asset chain and is not faked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Transaction } from '@scure/btc-signer';
import { utxoParams } from '../../src/chains/utxo/params.ts';
import { MINUTE } from '../../src/core/clock.ts';
import { LitecoinWallet, startLitecoind, type LitecoinNode } from '../harness/litecoind.ts';
import { eventually } from '../harness/expect.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';
import { startUtxoKasse, type UtxoKasse } from '../harness/utxo-kasse.ts';

let node: LitecoinNode;
let k: UtxoKasse;

before(async () => {
  node = await startLitecoind();
  k = await startUtxoKasse({ rpcUrl: node.url });
  const first = await k.tick(); // no cursor yet: starts at the tip
  assert.equal(first.scanned, 0);
});
after(async () => {
  await k?.close();
  await node?.stop();
});

let orderSeq = 0;
async function createPayment(cents = 1000) {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `ltc-${++orderSeq}`,
    chain: 'litecoin',
    token: 'litecoin:ltc',
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const attempt = res.body.attempts[0];
  return { id: res.body.id as string, address: attempt.address as string, amount: BigInt(attempt.pay_amount), attempt };
}

async function get(id: string) {
  const res = await k.m.test.get(`/payments/${id}`);
  assert.equal(res.status, 200);
  return res.body;
}

async function balanceCents(): Promise<number> {
  const res = await k.m.test.get('/balance');
  assert.equal(res.status, 200);
  return res.body.available_usd_cents;
}

describe('payment outcomes', () => {
  test('GET /currencies offers litecoin:ltc, served by the UTXO adapter', async () => {
    const res = await k.m.test.get('/currencies');
    assert.equal(res.status, 200);
    const ids = JSON.stringify(res.body);
    assert.match(ids, /litecoin:ltc/);
    assert.equal(k.t.kasse.chains.hasAdapter('test', 'litecoin'), true);
  });

  test('while a coin choice waits the mempool is looked at between ticks; with none, the node is not asked', async () => {
    const rpc = k.adapter.rpc();
    const asked = () => rpc.counts.get('getrawmempool') ?? 0;
    const before = asked();
    assert.equal(await k.watcher.lookAtMempool(), null, 'no coin choice waits: nothing to look for');
    assert.equal(asked(), before, 'and the node was not asked');

    // Ticks every 10 minutes, the mempool every 50 ms while a coin choice waits.
    const network = { ...k.adapter.network, pollIntervalMs: 600_000 };
    const w = k.adapter.watcher(k.t.kasse.payments.deposits, { network, mempoolPollMs: 50 }).start();
    let p: Awaited<ReturnType<typeof createPayment>>;
    try {
      await w.tick();
      p = await createPayment(1000);
      await k.payer.send(p.address, p.amount);
      await eventually('detected from the mempool without a tick', async () => (await get(p.id)).status === 'detected');
      assert.ok(asked() > before);
    } finally {
      await w.stop();
    }
    // The ticks take it from there: in its block, it is counting confirmations.
    await k.tick();
    await k.payer.mine(1);
    await k.tick();
    assert.equal((await get(p!.id)).status, 'confirming');
  });

  test('exact: BIP-84 address, BIP-21 URI, detected from the mempool at 0 confirmations, confirming, paid', async () => {
    const p = await createPayment(1000);
    assert.equal(p.amount, 10_000_000n, '10 USD at 100 USD/LTC');
    assert.match(p.address, /^rltc1q[02-9ac-hj-np-z]{38}$/);
    assert.equal(p.attempt.uri, `litecoin:${p.address}?amount=0.1`);
    // The node agrees the address is a valid one of its network, and it is fresh.
    const info = await k.payer.rpc('validateaddress', [p.address]);
    assert.equal(info.isvalid, true);
    assert.equal(info.iswitness, true);
    assert.equal(info.witness_version, 0);

    const txid = await k.payer.send(p.address, p.amount);
    const r = await k.tick();
    assert.equal(r.mempoolDeposits, 1);
    let pay = await get(p.id);
    let dep = pay.attempts[0].deposits[0];
    assert.equal(dep.tx_hash, txid);
    assert.equal(dep.amount, '10000000');
    assert.equal(dep.block_number, null);
    assert.equal(dep.confirmations, 0);
    assert.equal(dep.status, 'pending');
    assert.equal(dep.explorer_url, `https://litecoinspace.org/testnet/tx/${txid}`);
    assert.equal(pay.status, 'detected');
    assert.deepEqual(k.eventTypes(p.id), ['payment.detected']);

    const [blockHash] = await k.payer.mine(1);
    const height = (await k.payer.rpc('getblockheader', [blockHash])).height;
    await k.tick();
    pay = await get(p.id);
    dep = pay.attempts[0].deposits[0];
    assert.equal(dep.block_number, String(height));
    assert.equal(dep.confirmations, 1);
    assert.equal(pay.status, 'confirming');
    assert.equal(Number(pay.attempts[0].confirmations_required), 2);

    await k.payer.mine(1);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].deposits[0].status, 'confirmed');
    assert.deepEqual(k.eventTypes(p.id), ['payment.detected', 'payment.confirming', 'payment.paid']);

    await k.payer.mine(4);
    await k.tick();
    assert.equal((await get(p.id)).attempts[0].deposits[0].status, 'final');
  });

  test('confirmation tiers by amount: above 100 USD needs 4 confirmations', async () => {
    const p = await createPayment(25_000);
    await k.payer.send(p.address, p.amount);
    await k.payer.mine(3);
    await k.tick();
    let pay = await get(p.id);
    assert.equal(pay.attempts[0].confirmation_tier, 2);
    assert.equal(pay.status, 'confirming');
    await k.payer.mine(1);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
  });

  test('underpaid, then the rest in a second transaction: paid', async () => {
    const p = await createPayment(2000);
    await k.payer.send(p.address, 15_000_000n);
    await k.tick();
    await k.payer.mine(2);
    await k.tick();
    let pay = await get(p.id);
    assert.equal(pay.status, 'underpaid');
    assert.equal(pay.attempts[0].received_amount, '15000000');
    assert.ok(k.eventTypes(p.id).includes('payment.underpaid'));

    await k.payer.send(p.address, 5_000_000n);
    await k.tick();
    await k.payer.mine(2);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].deposits.length, 2);
    assert.equal(k.eventTypes(p.id).at(-1), 'payment.paid');
  });

  test('underpayment tolerance: short by exactly the allowed amount is paid, one unit more is underpaid', async () => {
    assert.equal((await k.m.test.patch('/account', { underpayment_tolerance_bps: 100 })).status, 200);
    try {
      const atBound = await createPayment(2000);
      const over = await createPayment(2000);
      const allowed = (atBound.amount * 100n) / 10_000n;
      assert.ok(allowed > 0n);
      const before = await balanceCents();
      await k.payer.send(atBound.address, atBound.amount - allowed);
      await k.payer.send(over.address, over.amount - (over.amount * 100n) / 10_000n - 1n);
      await k.tick();
      await k.payer.mine(2);
      await k.tick();
      const paid = await get(atBound.id);
      assert.equal(paid.status, 'paid');
      assert.equal(paid.underpaid_within_tolerance, true);
      assert.equal(paid.tolerance_shortfall, allowed.toString());
      assert.equal(k.eventTypes(atBound.id).at(-1), 'payment.paid');
      // Credited at floor(2000 × (pay − floor(pay / 100)) / pay) = 1980 cents, less the 1 % fee (20) and
      // the 0.5 % conversion spread (10) on that: litecoin is not a stablecoin.
      assert.equal(
        (await balanceCents()) - before,
        1950,
        'the value received is credited, less the fee and spread on it',
      );
      const short = await get(over.id);
      assert.equal(short.status, 'underpaid');
      assert.equal(k.eventTypes(over.id).at(-1), 'payment.underpaid');
    } finally {
      await k.m.test.patch('/account', { underpayment_tolerance_bps: 0 });
    }
  });

  test('overpaid: paid and overpaid', async () => {
    const p = await createPayment(1000);
    await k.payer.send(p.address, 12_500_000n);
    await k.payer.mine(2);
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].overpaid, true);
    assert.deepEqual(k.eventTypes(p.id).slice(-2), ['payment.paid', 'payment.overpaid']);
  });

  test('money after the coin hold ran out is found and reported late', async () => {
    const p = await createPayment(1200);
    k.t.clock.advance(11 * MINUTE);
    await k.payer.send(p.address, p.amount);
    await k.tick();
    await k.payer.mine(2);
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'late');
    assert.ok(k.eventTypes(p.id).includes('payment.late'));
  });

  test('several outputs to one address in one transaction add up', async () => {
    const p = await createPayment(1000);
    const tx = new Transaction({ allowUnknownOutputs: true });
    const net = utxoParams('litecoin', 'regtest').address;
    tx.addOutputAddress(p.address, 4_000_000n, net);
    tx.addOutputAddress(p.address, 6_000_000n, net);
    const funded = await k.payer.rpc('fundrawtransaction', [tx.hex, { replaceable: true }, false]);
    const signed = await k.payer.rpc('signrawtransactionwithwallet', [funded.hex]);
    const txid = await k.payer.rpc('sendrawtransaction', [signed.hex]);
    await k.tick();
    await k.payer.mine(2);
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    const deps = pay.attempts[0].deposits;
    assert.equal(deps.length, 2);
    assert.ok(deps.every((d: { tx_hash: string }) => d.tx_hash === txid));
    assert.deepEqual(deps.map((d: { amount: string }) => d.amount).sort(), ['4000000', '6000000']);
    assert.equal(pay.attempts[0].overpaid, false);
  });
});

describe('checkout', () => {
  test('the hosted checkout shows the amount, the address, a QR code of the BIP-21 URI and no browser-wallet button', async () => {
    const p = await createPayment(1000);
    const res = await fetch(`${k.t.urls.checkout}/p/${p.id}`);
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.ok(page.includes(p.address));
    assert.ok(page.includes(`href="litecoin:${p.address}?amount=0.1"`), 'deep link to a wallet app');
    assert.ok(page.includes(`aria-label="QR code: send 0.1 LTC to ${p.address}"`));
    assert.ok(!page.includes('k-btn k-alt'), 'no wallet buttons');
  });
});

describe('mempool replacement', () => {
  test('an RBF replacement paying elsewhere orphans the first deposit', async () => {
    const p = await createPayment(1000);
    const txid = await k.payer.send(p.address, p.amount);
    await k.tick();
    assert.equal((await get(p.id)).status, 'detected');
    const other = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    const replacement = await k.payer.replaceTo(txid, other);
    assert.notEqual(replacement, txid);
    const r = await k.tick();
    assert.equal(r.dropped, 1);
    let pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits[0].status, 'orphaned');
    assert.notEqual(pay.status, 'detected');
    assert.equal(pay.status, 'waiting');

    // The replacement is mined: nothing comes back to the payment.
    await k.payer.mine(2);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits.length, 1);
    assert.equal(pay.attempts[0].deposits[0].status, 'orphaned');
  });

  test('a fee bump (same outputs, new transaction) orphans the old one and the replacement pays', async () => {
    const p = await createPayment(1000);
    const txid = await k.payer.send(p.address, p.amount);
    await k.tick();
    const bumped = await k.payer.bumpFee(txid);
    await k.tick();
    let pay = await get(p.id);
    const byTx = new Map(
      pay.attempts[0].deposits.map((d: { tx_hash: string; status: string }) => [d.tx_hash, d.status]),
    );
    assert.equal(byTx.get(txid), 'orphaned');
    assert.equal(byTx.get(bumped), 'pending');
    assert.equal(pay.status, 'detected');
    await k.payer.mine(2);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].overpaid, false, 'the orphaned deposit does not count');
  });
});

describe('reorgs and restarts', () => {
  /** A payment paid by a transaction in `blockHash`, one block below the tip, and the balance before and after. */
  async function paidInABlock() {
    const p = await createPayment(3000);
    const balance0 = await balanceCents();
    // Paid from coins that are not fresh coinbase outputs, which the removed blocks would make immature again.
    const spender = await LitecoinWallet.create(node.url, undefined, false);
    await k.payer.send(spender.address, 100_000_000n);
    await k.payer.mine(3);
    await k.tick();
    const txid = await spender.send(p.address, p.amount);
    await k.tick();
    const [blockHash] = await k.payer.mine(1);
    await k.payer.mine(1);
    await k.tick();
    assert.equal((await get(p.id)).status, 'paid');
    const balancePaid = await balanceCents();
    assert.ok(balancePaid > balance0, 'credited');
    return { p, spender, txid, blockHash: blockHash!, balance0, balancePaid };
  }

  test('invalidateblock: a paid payment loses its block, payment.reorged, credit reversed; mined again: paid again', async () => {
    const { p, spender, txid, blockHash, balance0, balancePaid } = await paidInABlock();
    let pay = await get(p.id);
    const height = (await k.payer.rpc('getblockheader', [blockHash])).height;

    await k.payer.rpc('invalidateblock', [blockHash]);
    assert.ok((await k.payer.getRawMempool()).includes(txid), 'the transaction is back in the mempool');
    const r = await k.tick();
    assert.equal(r.reorgFrom, height);
    pay = await get(p.id);
    assert.ok(k.eventTypes(p.id).includes('payment.reorged'));
    assert.equal(await balanceCents(), balance0, 'credit reversed');
    const reversal = await k.t.kasse.db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('payment_id', '=', p.id)
      .where('reverses', 'is not', null)
      .execute();
    assert.equal(reversal.length, 1, 'one reversing ledger transaction');
    // Seen again in the mempool: pending without a block.
    assert.equal(pay.attempts[0].deposits[0].block_number, null);
    assert.notEqual(pay.status, 'paid');

    // Mined to another address: the same parent, coinbase and transactions in the same second would make the
    // very block that was invalidated.
    const mined = await k.payer.mine(2, spender.address);
    assert.notEqual(mined[0], blockHash);
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].deposits.length, 1);
    assert.equal(pay.attempts[0].deposits[0].block_number, String(height));
    const types = k.eventTypes(p.id);
    assert.equal(types.at(-1), 'payment.paid');
    assert.equal(await balanceCents(), balancePaid, 'credited again');
  });

  test('a reorg lowering the tip while a coin choice waits: the first pass, a mempool look, reverses the credit; a competing chain that drops the transaction leaves it orphaned', async () => {
    const { p, spender, txid, blockHash, balance0 } = await paidInABlock();
    await createPayment(500); // a coin choice waits: the mempool is looked at between ticks
    const tip = await k.payer.rpc<number>('getblockcount');

    await k.payer.rpc('invalidateblock', [blockHash]);
    assert.equal(await k.payer.rpc<number>('getblockcount'), tip - 2, 'the tip went down');
    assert.ok((await k.payer.getRawMempool()).includes(txid), 'the transaction is back in the mempool');
    // The first pass after it: a look between ticks, which finds the transaction back in the mempool.
    await k.watcher.lookAtMempool();
    await k.t.kasse.webhooks.drain();
    let pay = await get(p.id);
    assert.ok(k.eventTypes(p.id).includes('payment.reorged'));
    assert.equal(await balanceCents(), balance0, 'credit reversed in that pass');
    assert.equal(pay.status, 'detected', 'in the mempool again: detected');
    assert.equal(pay.attempts[0].deposits[0].block_number, null);

    // The competing chain takes a replacement paying someone else: the payment's transaction is gone for good.
    const other = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    await spender.replaceTo(txid, other);
    await k.payer.mine(3, other);
    await k.tick();
    await k.t.kasse.webhooks.drain();
    pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(pay.status, 'waiting');
    assert.equal(await balanceCents(), balance0);
    const types = k.eventTypes(p.id);
    assert.deepEqual(types.slice(types.indexOf('payment.reorged')), ['payment.reorged', 'payment.detected']);
  });

  test('invalidateblock under a sent refund: the sender follows it out of its block and in again; refunded once', async () => {
    const sender = k.adapter.sender!;
    await k.payer.send(k.adapter.hotWalletAddress(), 200_000_000n);
    const p = await createPayment(1000);
    await k.payer.send(p.address, p.amount);
    for (let i = 0; i < 6 && (await get(p.id)).status !== 'paid'; i++) {
      await k.payer.mine(1);
      await k.tick();
    }
    assert.equal((await get(p.id)).status, 'paid');
    const destination = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    const res = await k.m.test.post(`/payments/${p.id}/refund`, { destination });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const id = res.body.id as string;
    assert.equal(await sender.step(id), 'progress'); // signed and stored
    assert.equal(await sender.step(id), 'progress'); // broadcast
    const { txid } = (await sender.get(id))!;
    const [blockHash] = await k.payer.mine(1);
    await k.tick();
    const height = (await k.payer.rpc('getblockheader', [blockHash])).height;
    assert.equal(Number((await sender.get(id))!.block_height), height, 'the watcher told the sender its block');

    await k.payer.rpc('invalidateblock', [blockHash]);
    assert.equal((await k.tick()).reorgFrom, height);
    assert.equal((await sender.get(id))!.block_height, null, 'its block is gone');
    assert.equal(await sender.step(id), 'wait', 'back in the mempool: waited for, not sent again');
    assert.ok((await k.payer.getRawMempool()).includes(txid!));

    const other = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    for (let i = 0; i < 6 && (await sender.get(id))!.status !== 'sent'; i++) {
      await k.payer.mine(1, other);
      await k.tick();
      await sender.step(id);
    }
    const sent = (await sender.get(id))!;
    assert.equal(sent.status, 'sent');
    assert.equal(sent.txid, txid, 'the one transaction, mined again');
    assert.equal((await sender.versions(id)).length, 1, 'never re-signed');
    await k.t.kasse.webhooks.drain();
    assert.equal((await get(p.id)).status, 'refunded');
    assert.equal(k.eventTypes(p.id).filter((t) => t === 'payment.refunded').length, 1);
  });

  test('a restarted Kasse resumes from the stored cursor and misses nothing mined while it was down', async () => {
    const cursor = (await k.watcher.cursor())!;
    const p = await createPayment(700);
    await k.payer.send(p.address, p.amount);
    await k.payer.mine(3);
    // A whole new process on the same database: a fresh watcher with no memory of its own.
    const fresh = k.adapter.watcher(k.t.kasse.payments.deposits);
    const r = await fresh.tick();
    await k.t.kasse.webhooks.drain();
    const tip = await k.payer.rpc<number>('getblockcount');
    assert.equal(r.reorgFrom, null);
    assert.equal(r.scanned, tip - cursor.height);
    assert.equal((await get(p.id)).status, 'paid');
    assert.equal((await k.watcher.cursor())!.height, tip);
  });

  test('the ledger reconciles', async () => {
    assert.ok((await assertEveryMerchantReconciles(k.t.kasse)) >= 1);
  });
});
