/**
 * The UTXO hot-wallet sender and the operator's commands on the run's shared Litecoin Core regtest node (own node
 * wallet; blocks mined by the other file only add confirmations, so these tests mine until what they wait for):
 * a refund signed locally, stored before it is broadcast, confirmed and reported (payment `refunded`); a crash
 * between signing and broadcasting (the restarted Kasse broadcasts the stored bytes, paid once); a stuck refund
 * replaced with a higher fee (RBF) spending the same coins, only one version mined; a refund that waits for the hot
 * wallet's own change, bounded, and one the hot wallet truly cannot cover; `kasse utxo sweep` moving
 * confirmed deposits to the hot wallet, and `kasse utxo status`.
 */
import assert from 'node:assert/strict';
import { bech32m } from '@scure/base';
import { Transaction } from '@scure/btc-signer';
import { after, before, describe, test } from 'node:test';
import { utxoCommands } from '../../src/chains/utxo/commands.ts';
import type { UtxoSender } from '../../src/chains/utxo/sender.ts';
import type { Kasse } from '../../src/kasse.ts';
import { startTestKasse } from '../harness/app.ts';
import { sharedLitecoinRpc } from '../harness/litecoind.ts';
import { startUtxoKasse, type UtxoKasse } from '../harness/utxo-kasse.ts';

let k: UtxoKasse;
let sender: UtxoSender;

const run = (kasse: Kasse, name: string, flags: Record<string, string | boolean> = {}) =>
  utxoCommands
    .find((c) => c.name === name)!
    .run(kasse.familyContext, { mode: 'test', chain: 'litecoin', ...flags }, []) as Promise<any>;

before(async () => {
  k = await startUtxoKasse({
    rpcUrl: sharedLitecoinRpc(),
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
    utxo: { bump_after_blocks: 2 },
  });
  sender = k.adapter.sender!;
  assert.ok(sender, 'a sender runs where the network has a node');
  await k.tick();
  // Fund the hot wallet with one coin, seen by the watcher in a block. Each refund spends it and makes one change
  // coin, so the hot wallet holds one coin in a block whenever no transfer is open.
  await k.payer.send(k.adapter.hotWalletAddress(), 500_000_000n);
  await k.payer.mine(1);
  await k.tick();
  const status = await run(k.t.kasse, 'utxo status');
  assert.equal(status.hot_wallet_balance, '500000000');
  assert.equal(status.hot_wallet_coins, 1);
});
after(() => k?.close());

let orderSeq = 0;
async function paidPayment(cents: number) {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `snd-${++orderSeq}`,
    chain: 'litecoin',
    token: 'litecoin:ltc',
  });
  assert.equal(res.status, 201);
  const a = res.body.attempts[0];
  await k.payer.send(a.address, BigInt(a.pay_amount));
  await mineUntil(async () => (await k.m.test.get(`/payments/${res.body.id}`)).body.status === 'paid');
  return { id: res.body.id as string, amount: BigInt(a.pay_amount) };
}

/** Mines a block at a time (the watcher ticking after each) until `done`. */
async function mineUntil(done: () => Promise<boolean>, max = 10): Promise<void> {
  for (let i = 0; i < max; i++) {
    await k.payer.mine(1);
    await k.tick();
    if (await done()) return;
  }
  assert.fail('not reached by mining');
}

/** The methods the sender's node client is asked for while `fn` runs. */
async function nodeCalls(fn: () => Promise<void>): Promise<string[]> {
  const rpc = k.adapter.rpc();
  const call = rpc.call;
  const calls: string[] = [];
  rpc.call = function (this: typeof rpc, method: string, params?: unknown[]) {
    calls.push(method);
    return call.call(this, method, params);
  } as typeof call;
  try {
    await fn();
  } finally {
    rpc.call = call;
  }
  return calls;
}

async function refund(paymentId: string, destination: string): Promise<string> {
  const res = await k.m.test.post(`/payments/${paymentId}/refund`, { destination, note: 'customer asked' });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id as string;
}

async function inMempool(txid: string): Promise<boolean> {
  return (await k.payer.getRawMempool()).includes(txid);
}

async function received(address: string): Promise<bigint> {
  const v = await k.payer.rpc<number>('getreceivedbyaddress', [address, 0]);
  return BigInt(Math.round(v * 1e8));
}

async function expectRefunded(paymentId: string, refundId: string, txid: string) {
  const pay = await k.m.test.get(`/payments/${paymentId}`);
  assert.equal(pay.body.status, 'refunded');
  const row = await k.t.kasse.db.selectFrom('refunds').selectAll().where('id', '=', refundId).executeTakeFirstOrThrow();
  assert.equal(row.status, 'sent');
  assert.equal(row.tx_hash, txid);
  await k.t.kasse.webhooks.drain();
  assert.equal(k.eventTypes(paymentId).at(-1), 'payment.refunded');
}

describe('refunds', () => {
  test('a refund is signed locally and stored before broadcast, then sent and reported: the payment is refunded', async () => {
    const p = await paidPayment(1500);
    const destination = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    const id = await refund(p.id, destination);
    assert.equal((await sender.get(id))!.status, 'pending');

    assert.equal(await sender.step(id), 'progress');
    const signed = (await sender.get(id))!;
    assert.equal(signed.status, 'signed');
    const [v0] = await sender.versions(id);
    assert.equal(v0!.txid, signed.txid);
    assert.equal(await inMempool(v0!.txid), false, 'stored, not yet broadcast');
    const decoded = await k.payer.rpc('decoderawtransaction', [v0!.raw]);
    assert.ok(
      decoded.vin.every((i: { sequence: number }) => i.sequence < 0xfffffffe),
      'signals RBF',
    );
    const toDestination = decoded.vout.find(
      (o: any) => o.scriptPubKey.addresses?.[0] === destination || o.scriptPubKey.address === destination,
    );
    assert.equal(BigInt(Math.round(toDestination.value * 1e8)), BigInt(signed.amount));
    const change = decoded.vout.find(
      (o: any) => (o.scriptPubKey.addresses?.[0] ?? o.scriptPubKey.address) === k.adapter.hotWalletAddress(),
    );
    assert.ok(change, 'change goes back to the hot wallet');
    const accepted = await k.payer.rpc('testmempoolaccept', [[v0!.raw]]);
    assert.equal(accepted[0].allowed, true, JSON.stringify(accepted[0]));
    const vsize = accepted[0].vsize as number;
    assert.ok(BigInt(v0!.fee) >= BigInt(vsize), 'pays at least 1 sat/vB');
    assert.ok(BigInt(v0!.fee) <= 200n * BigInt(vsize), 'within max_fee_rate');

    assert.equal(await sender.step(id), 'progress');
    assert.equal((await sender.get(id))!.status, 'broadcast');
    assert.equal(await inMempool(v0!.txid), true);
    await mineUntil(async () => (await sender.step(id)) === 'done');
    const sent = (await sender.get(id))!;
    assert.equal(sent.status, 'sent');
    assert.equal(sent.txid, v0!.txid);
    assert.equal(sent.reported, true);
    assert.equal(await received(destination), BigInt(signed.amount));
    await expectRefunded(p.id, id, v0!.txid);
  });

  test('following a sent refund takes the same few node calls however many blocks passed since its broadcast', async () => {
    const p = await paidPayment(1200);
    const destination = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    const id = await refund(p.id, destination);
    assert.equal(await sender.step(id), 'progress');
    assert.equal(await sender.step(id), 'progress');
    const broadcast = (await sender.get(id))!;
    assert.equal(broadcast.status, 'broadcast');
    const [mined] = await k.payer.mine(1);
    await k.payer.mine(11);
    await k.tick();
    const calls = await nodeCalls(async () => assert.equal(await sender.step(id), 'done'));
    assert.ok(calls.length <= 2, `node calls to settle it 12 blocks later: ${calls.join(', ')}`);
    const sent = (await sender.get(id))!;
    assert.equal(sent.status, 'sent');
    assert.equal(sent.txid, broadcast.txid);
    const block = await k.payer.rpc<{ height: number; tx: string[] }>('getblock', [mined, 1]);
    assert.ok(block.tx.includes(broadcast.txid!), 'mined in the first of the blocks');
    assert.equal(Number(sent.block_height), block.height);
    await expectRefunded(p.id, id, broadcast.txid!);
  });

  test('crash between signing and broadcast: the restarted Kasse broadcasts the stored transaction; paid once', async () => {
    const p = await paidPayment(900);
    const destination = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    const id = await refund(p.id, destination);
    await sender.step(id); // signed and stored …
    const stored = (await sender.get(id))!;
    assert.equal(stored.status, 'signed');
    // … and the process dies here. A whole new Kasse on the same database:
    const fresh = await startTestKasse({
      databaseUrl: k.t.databaseUrl,
      clock: k.t.clock,
      env: { KASSE_NETWORKS_FILE: k.networksFile },
    });
    try {
      const s2 = (fresh.kasse.chains.adapter('test', 'litecoin') as typeof k.adapter).sender!;
      await s2.runDue();
      assert.equal(await inMempool(stored.txid!), true, 'the very transaction that was signed');
      await mineUntil(async () => {
        await s2.runDue();
        return (await s2.get(id))!.status === 'sent';
      });
      const done = (await s2.get(id))!;
      assert.equal(done.txid, stored.txid);
      assert.equal((await s2.versions(id)).length, 1, 'never re-signed');
      assert.equal(await received(destination), BigInt(stored.amount), 'paid exactly once');
      await expectRefunded(p.id, id, stored.txid!);
    } finally {
      await fresh.close();
    }
  });

  test('a stuck refund is replaced with a higher fee spending the same coins; only the replacement is mined', async () => {
    const p = await paidPayment(800);
    const destination = await k.payer.rpc<string>('getnewaddress', ['', 'bech32']);
    const id = await refund(p.id, destination);
    await sender.step(id);
    await sender.step(id);
    const first = (await sender.get(id))!;
    assert.equal(first.status, 'broadcast');
    // Miners ignore it: its fee counts as far below the minimum in this node's block template.
    await k.payer.rpc('prioritisetransaction', [first.txid, 0, -10_000_000]);
    await k.payer.mine(2);
    await k.tick();
    assert.equal(await sender.step(id), 'progress', 'stuck for bump_after_blocks: replaced');
    const versions = await sender.versions(id);
    assert.equal(versions.length, 2);
    assert.ok(BigInt(versions[1]!.fee_rate) > BigInt(versions[0]!.fee_rate));
    assert.ok(BigInt(versions[1]!.fee) > BigInt(versions[0]!.fee));
    const [a, b] = await Promise.all(versions.map((v) => k.payer.rpc('decoderawtransaction', [v.raw])));
    assert.deepEqual(
      b.vin.map((i: any) => `${i.txid}:${i.vout}`),
      a.vin.map((i: any) => `${i.txid}:${i.vout}`),
      'the same coins: the two can never both be mined',
    );
    assert.equal(await sender.step(id), 'progress'); // broadcast the replacement
    assert.equal(await inMempool(versions[1]!.txid), true);
    assert.equal(await inMempool(versions[0]!.txid), false, 'replaced in the mempool');
    await mineUntil(async () => (await sender.step(id)) === 'done');
    const done = (await sender.get(id))!;
    assert.equal(done.status, 'sent');
    assert.equal(done.txid, versions[1]!.txid);
    assert.equal(await received(destination), BigInt(done.amount), 'paid once');
    await expectRefunded(p.id, id, versions[1]!.txid);
  });
});

describe('the hot wallet waits for its own change', () => {
  test("two refunds back to back on one coin: the second waits, pending, for the first one's change and is sent once it is in a block", async () => {
    const p1 = await paidPayment(700);
    const p2 = await paidPayment(600);
    const status = await run(k.t.kasse, 'utxo status');
    assert.equal(status.hot_wallet_coins, 1, 'one coin in a block');
    const [d1, d2] = [
      await k.payer.rpc<string>('getnewaddress', ['', 'bech32']),
      await k.payer.rpc<string>('getnewaddress', ['', 'bech32']),
    ];
    const r1 = await refund(p1.id, d1);
    const r2 = await refund(p2.id, d2);
    await sender.runDue(); // one pass of the workers' sender loop: both, oldest first
    const t1 = (await sender.get(r1))!;
    assert.equal(t1.status, 'broadcast');
    let t2 = (await sender.get(r2))!;
    assert.equal(t2.status, 'pending', 'not failed: the change of the first refund is on its way back');
    assert.ok(t2.waiting_since);
    assert.match(t2.error!, /^waiting until .* for its own change/);
    assert.ok(t2.error!.includes(t1.txid!), 'names the transaction whose change it waits for');
    assert.equal((await sender.versions(r2)).length, 0, 'nothing signed yet');
    const refundRow = await k.t.kasse.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', r2)
      .executeTakeFirstOrThrow();
    assert.equal(refundRow.status, 'pending');
    const again = await k.m.test.post(`/payments/${p2.id}/refund`, { destination: d2 });
    assert.equal(again.status, 422, 'one refund at a time: the waiting one stands');
    const shown = await run(k.t.kasse, 'utxo status');
    assert.deepEqual(
      shown.waiting_for_change.map((w: { transfer_id: string; reason: string }) => [w.transfer_id, w.reason]),
      [[r2, t2.error]],
    );
    await sender.runDue();
    assert.equal((await sender.get(r2))!.status, 'pending', 'still waiting while the change is in no block');

    // The first refund's block: its change is a coin in a block, and the watcher's block makes the second due.
    await k.payer.mine(1);
    await k.tick();
    await sender.runDue();
    t2 = (await sender.get(r2))!;
    assert.equal(t2.status, 'broadcast');
    assert.equal(t2.error, null);
    const [v] = await sender.versions(r2);
    const decoded = await k.payer.rpc('decoderawtransaction', [v!.raw]);
    assert.deepEqual(
      decoded.vin.map((i: { txid: string }) => i.txid),
      [t1.txid],
      "spends the first refund's change",
    );
    assert.deepEqual((await run(k.t.kasse, 'utxo status')).waiting_for_change, []);
    await mineUntil(async () => {
      await sender.runDue();
      return (await sender.get(r1))!.status === 'sent' && (await sender.get(r2))!.status === 'sent';
    });
    assert.equal((await sender.versions(r2)).length, 1, 'sent once');
    assert.equal(await received(d2), BigInt((await sender.get(r2))!.amount));
    await expectRefunded(p1.id, r1, t1.txid!);
    await expectRefunded(p2.id, r2, t2.txid!);
  });

  test('it fails at once when even that change would not cover it, and when the change stays out of blocks past change_wait_ms', async () => {
    const p1 = await paidPayment(500);
    const p2 = await paidPayment(500);
    const hot = BigInt((await run(k.t.kasse, 'utxo status')).hot_wallet_balance);
    const big = await paidPayment(Number(hot / 10_000n)); // worth the whole hot wallet: more than what comes back
    const r1 = await refund(p1.id, await k.payer.rpc<string>('getnewaddress', ['', 'bech32']));
    await sender.runDue();
    const t1 = (await sender.get(r1))!;
    assert.equal(t1.status, 'broadcast');
    // Miners leave it out: its change stays in no block.
    await k.payer.rpc('prioritisetransaction', [t1.txid, 0, -10_000_000]);
    try {
      const rBig = await refund(big.id, await k.payer.rpc<string>('getnewaddress', ['', 'bech32']));
      assert.equal(await sender.step(rBig), 'done');
      const tBig = (await sender.get(rBig))!;
      assert.equal(tBig.status, 'failed', 'the hot wallet truly lacks the funds');
      assert.match(tBig.error!, /hot wallet holds 0 units in blocks and \d+ in the change of its own transactions/);

      const r2 = await refund(p2.id, await k.payer.rpc<string>('getnewaddress', ['', 'bech32']));
      assert.equal(await sender.step(r2), 'wait');
      assert.equal((await sender.get(r2))!.status, 'pending');
      k.t.clock.advance(59 * 60_000);
      await sender.runDue();
      assert.equal((await sender.get(r2))!.status, 'pending', 'within change_wait_ms (60 minutes)');
      k.t.clock.advance(2 * 60_000);
      await sender.runDue();
      const t2 = (await sender.get(r2))!;
      assert.equal(t2.status, 'failed');
      assert.match(t2.error!, /was not in a block within 60 minutes/);
      assert.equal((await sender.versions(r2)).length, 0, 'nothing was signed');
      await k.tick();
      const event = k.receiver!.events.find((e) => e.type === 'refund.failed' && e.data?.id === r2);
      assert.ok(event, 'refund.failed was delivered');
      assert.match(event.data.error, /was not in a block within 60 minutes/);
      assert.equal((await k.m.test.get(`/payments/${p2.id}`)).body.status, 'paid', 'and may be refunded again');
    } finally {
      await k.payer.rpc('prioritisetransaction', [t1.txid, 0, 10_000_000]);
    }
    await mineUntil(async () => (await sender.step(r1)) === 'done');
    assert.equal((await sender.get(r1))!.status, 'sent');
  });
});

describe('refusals', () => {
  test('a refund the hot wallet cannot cover fails with the reason and spends nothing', async () => {
    const status = await run(k.t.kasse, 'utxo status');
    const p = await paidPayment(Number(BigInt(status.hot_wallet_balance) / 10_000n) + 1000); // 1 cent is 10,000 units at 100 USD
    assert.ok(p.amount > BigInt(status.hot_wallet_balance));
    const id = await refund(p.id, await k.payer.rpc<string>('getnewaddress', ['', 'bech32']));
    assert.equal(await sender.step(id), 'done');
    const t = (await sender.get(id))!;
    assert.equal(t.status, 'failed');
    assert.match(t.error!, /hot wallet holds/);
    assert.equal((await sender.versions(id)).length, 0);
    const row = await k.t.kasse.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.equal((await run(k.t.kasse, 'utxo status')).hot_wallet_balance, status.hot_wallet_balance);
  });
});

/** A bech32m (witness v1) regtest address whose 32-byte program is not an x-only key: Core calls it valid and pays it. */
const BAD_TAPROOT = bech32m.encode('rltc', [1, ...bech32m.toWords(new Uint8Array(32).fill(0xff))]);

describe('destinations that cannot be paid', () => {
  test('Litecoin Core takes the address, but a refund to it answers 400 on destination and records nothing', async () => {
    assert.equal((await k.payer.rpc<{ isvalid: boolean }>('validateaddress', [BAD_TAPROOT])).isvalid, true);
    const p = await paidPayment(500);
    const before = await k.t.kasse.db.selectFrom('refunds').select('id').where('payment_id', '=', p.id).execute();
    const res = await k.m.test.post(`/payments/${p.id}/refund`, { destination: BAD_TAPROOT });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.param, 'destination');
    assert.deepEqual(
      await k.t.kasse.db.selectFrom('refunds').select('id').where('payment_id', '=', p.id).execute(),
      before,
    );
    assert.equal((await k.m.test.get(`/payments/${p.id}`)).body.status, 'paid');
  });

  test('a refund already recorded to such an address fails for good with the reason; refund.failed is sent; a new refund is accepted', async () => {
    const p = await paidPayment(500);
    const first = await refund(p.id, await k.payer.rpc<string>('getnewaddress', ['', 'bech32']));
    // As a Kasse that did not check the script stored it: the destination no output script can pay.
    await k.t.kasse.db
      .updateTable('utxo_transfers')
      .set({ destination: BAD_TAPROOT })
      .where('id', '=', first)
      .execute();
    await sender.runDue();
    const t = (await sender.get(first))!;
    assert.equal(t.status, 'failed');
    assert.match(t.error!, /wrong taproot public key/);
    assert.equal((await sender.versions(first)).length, 0, 'nothing was signed');
    assert.equal(
      (await k.t.kasse.db.selectFrom('utxo_coins').select('txid').where('spent_by', '=', first).execute()).length,
      0,
      'no coin is held',
    );
    await k.tick();
    const event = k.receiver!.events.find((e) => e.type === 'refund.failed' && e.data?.id === first);
    assert.ok(event, 'refund.failed was delivered');
    assert.equal(event.data.status, 'failed');
    assert.equal(event.data.payment_id, p.id);
    assert.match(event.data.error, /wrong taproot public key/);
    assert.equal((await k.m.test.get(`/payments/${p.id}`)).body.status, 'paid', 'the payment is unchanged');

    const again = await refund(p.id, await k.payer.rpc<string>('getnewaddress', ['', 'bech32']));
    assert.notEqual(again, first);
    await sender.runDue();
    assert.equal((await sender.get(again))!.status, 'broadcast');
  });
});

describe('commands', () => {
  test('kasse utxo sweep moves confirmed deposits to the hot wallet; a second sweep finds nothing left', async () => {
    await paidPayment(1000);
    const before = await run(k.t.kasse, 'utxo status');
    assert.ok(before.unswept_deposit_coins >= 1);
    const sweep = await run(k.t.kasse, 'utxo sweep');
    assert.equal(sweep.swept, true);
    assert.equal(sweep.status, 'broadcast');
    assert.equal(sweep.destination, k.adapter.hotWalletAddress());
    assert.equal(sweep.inputs, before.unswept_deposit_coins);
    assert.equal(BigInt(sweep.amount) + BigInt(sweep.fee), BigInt(sweep.input_total));
    assert.equal(await inMempool(sweep.txid), true);
    const again = await run(k.t.kasse, 'utxo sweep');
    assert.equal(again.swept, false, 'coins taken by a sweep are not swept twice');
    await mineUntil(async () => (await sender.step(sweep.transfer_id)) === 'done');
    const after = await run(k.t.kasse, 'utxo status');
    assert.equal(after.unswept_deposit_coins, 0);
    assert.equal(BigInt(after.hot_wallet_balance), BigInt(before.hot_wallet_balance) + BigInt(sweep.amount));
    assert.equal(after.behind, 0);
    assert.equal(after.transfers.sent >= 4, true);
  });

  test('every transaction the sender signs pays at least its fee rate for its signed size', () => {
    type Build = (
      coins: unknown[],
      destination: string,
      amount: bigint | null,
      rate: bigint,
    ) => { raw: string; fee: bigint; sent: bigint };
    const build = (sender as unknown as { build: Build }).build.bind(sender);
    const hot = k.adapter.hotWalletAddress();
    for (let i = 0; i < 64; i++) {
      const coins = Array.from({ length: 1 + (i % 3) }, (_, j) => ({
        txid: (i * 7 + j + 1).toString(16).padStart(64, '0'),
        vout: j,
        address: hot,
        amount: 100_000n + BigInt(i * 977 + j * 131),
        index: null,
      }));
      const rate = BigInt(1 + (i % 5));
      const built = build(coins, hot, i % 2 === 0 ? null : 50_000n + BigInt(i), rate);
      const vsize = BigInt(Transaction.fromRaw(Buffer.from(built.raw, 'hex')).vsize);
      assert.ok(built.fee >= rate * vsize, `fee ${built.fee} for ${vsize} vB at ${rate} per vB (try ${i})`);
      assert.ok(built.fee <= rate * (vsize + 1n) || i % 2 === 1, `a sweep pays the rate, not more (try ${i})`);
    }
  });

  test('bad flags are usage errors', async () => {
    await assert.rejects(run(k.t.kasse, 'utxo status', { chain: 'nope' }), /no test network "nope"/);
  });
});
