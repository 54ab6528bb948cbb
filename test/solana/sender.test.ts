/**
 * Refunds from the Solana hot wallet through the public API, and the crash-safe sender: the signed transaction is
 * stored before it is sent, sent again byte for byte after a restart or when its block is dropped, and rebuilt with
 * a new blockhash only after the old one expired unseen; the destination is paid exactly once. A refund the chain
 * refuses for good (preflight: a fresh destination left below rent exemption) ends failed with the reason and can be
 * asked again; a node that cannot be reached only delays it. Private test node.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SolanaSender } from '../../src/chains/solana/sender.ts';
import { solanaKeys } from '../../src/chains/solana/index.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';

let k: SolanaKasse;

before(async () => {
  k = await startSolanaKasse();
  await k.tick();
});
after(() => k?.close());

let seq = 0;
/** A payment paid in `token` and final, ready to refund. */
async function paidPayment(token: 'solana:sol' | 'solana:usdc') {
  const res = await k.m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: `rfd-${++seq}`,
    chain: 'solana',
    token,
  });
  const attempt = res.body.attempts[0];
  const payer = await k.payer(10_000_000_000n, 100_000_000n);
  if (token === 'solana:sol') await k.chain.sendSol(payer, attempt.address, BigInt(attempt.pay_amount));
  else await k.chain.sendUsdc(payer, attempt.address, BigInt(attempt.pay_amount), { createAta: true });
  await k.chain.produce();
  await k.tick();
  await k.chain.finalize();
  await k.chain.produce();
  await k.tick();
  const pay = (await k.m.test.get(`/payments/${res.body.id}`)).body;
  assert.equal(pay.status, 'paid');
  return { id: res.body.id as string, amount: BigInt(attempt.pay_amount) };
}

async function refund(paymentId: string, destination: string) {
  const res = await k.m.test.post(`/payments/${paymentId}/refund`, { destination, note: 'customer asked' });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, 'pending');
  return res.body as { id: string; amount: string; token: string };
}

/** Sender passes and blocks until the transfer settles (finalized). */
async function settle(id: string) {
  for (let i = 0; i < 6; i++) {
    await k.send();
    const row = await k.adapter.sender!.get(id);
    if (row!.status === 'sent' || row!.status === 'failed') return row!;
    await k.chain.produce();
    await k.chain.finalize();
  }
  return (await k.adapter.sender!.get(id))!;
}

test('a SOL refund leaves the hot wallet once; the payment becomes refunded', async () => {
  const p = await paidPayment('solana:sol');
  const dest = (await k.chain.newWallet(0n)).address;
  const r = await refund(p.id, dest);
  assert.equal(r.token, 'solana:sol');
  assert.equal(BigInt(r.amount), p.amount);
  const row = await settle(r.id);
  assert.equal(row.status, 'sent');
  assert.equal(await k.chain.balance(dest), p.amount);
  const pay = (await k.m.test.get(`/payments/${p.id}`)).body;
  assert.equal(pay.status, 'refunded');
  assert.equal(k.eventTypes(p.id).at(-1), 'payment.refunded');
  const refunds = await k.t.kasse.db.selectFrom('refunds').selectAll().where('id', '=', r.id).executeTakeFirstOrThrow();
  assert.equal(refunds.status, 'sent');
  assert.equal(refunds.tx_hash, row.signature);
});

test('a USDC refund opens the destination token account from the hot wallet and pays it', async () => {
  const p = await paidPayment('solana:usdc');
  const dest = (await k.chain.newWallet(0n)).address;
  const hotBefore = await k.chain.tokenBalance(k.hotWallet);
  const r = await refund(p.id, dest);
  const row = await settle(r.id);
  assert.equal(row.status, 'sent', row.error ?? '');
  assert.equal(await k.chain.tokenBalance(dest), p.amount);
  assert.equal(await k.chain.tokenBalance(k.hotWallet), hotBefore - p.amount);
  assert.equal(await k.chain.balance(dest), 0n, 'the recipient paid nothing');
});

test('an invalid destination is refused with 400 and changes nothing', async () => {
  const p = await paidPayment('solana:sol');
  const res = await k.m.test.post(`/payments/${p.id}/refund`, {
    destination: '0x1111111111111111111111111111111111111111',
  });
  assert.equal(res.status, 400);
  assert.equal(res.body.error.param, 'destination');
  assert.equal(
    (await k.t.kasse.db.selectFrom('refunds').select('id').where('payment_id', '=', p.id).execute()).length,
    0,
  );
});

test('crash after signing: a new sender sends the stored bytes; a dropped block gets the same bytes again; paid once', async () => {
  const p = await paidPayment('solana:sol');
  const dest = (await k.chain.newWallet(0n)).address;
  const r = await refund(p.id, dest);
  assert.equal(await k.adapter.sender!.step(r.id), 'progress');
  const signed = (await k.adapter.sender!.get(r.id))!;
  assert.equal(signed.status, 'signed');
  const [v0] = await k.adapter.sender!.versions(r.id);
  assert.equal(v0!.signature, signed.signature);
  // The process dies here; a new one (a new sender over the same database) carries on.
  const reborn = new SolanaSender(k.adapter, {
    db: k.t.kasse.db,
    clock: k.t.clock,
    log: k.t.kasse.log,
    keys: solanaKeys(k.secrets),
    sink: k.t.kasse.transfers,
  });
  assert.equal(await reborn.step(r.id), 'progress');
  assert.equal((await reborn.get(r.id))!.status, 'broadcast');
  await k.chain.produce();
  assert.equal(await k.chain.balance(dest), p.amount);
  // Its block leaves the chain before finality; the check finds no status and resends the same bytes.
  await k.chain.drop(v0!.signature, false);
  assert.equal(await k.chain.balance(dest), 0n);
  assert.equal(await reborn.step(r.id), 'wait');
  await k.chain.produce();
  assert.equal(await k.chain.balance(dest), p.amount);
  await k.chain.finalize();
  assert.equal(await reborn.step(r.id), 'done');
  const row = (await reborn.get(r.id))!;
  assert.equal(row.status, 'sent');
  assert.equal(row.signature, v0!.signature);
  assert.equal((await reborn.versions(r.id)).length, 1, 'never rebuilt');
  assert.equal(await k.chain.balance(dest), p.amount);
});

test('rebuilt only after the blockhash expired unseen: a new signature lands, the old one never does', async () => {
  const p = await paidPayment('solana:sol');
  const dest = (await k.chain.newWallet(0n)).address;
  const r = await refund(p.id, dest);
  const sender = k.adapter.sender!;
  await sender.step(r.id);
  await sender.step(r.id);
  const [v0] = await sender.versions(r.id);
  await k.chain.drop(v0!.signature, false);
  // Not expired yet: the same bytes go out again (and are dropped again, as if lost in transit).
  assert.equal(await sender.step(r.id), 'wait');
  await k.chain.drop(v0!.signature, false);
  assert.equal((await sender.versions(r.id)).length, 1);
  await k.chain.produce(152);
  await k.chain.finalize();
  assert.equal(await sender.step(r.id), 'progress', 'expired unseen: rebuilt');
  const versions = await sender.versions(r.id);
  assert.equal(versions.length, 2);
  assert.notEqual(versions[1]!.signature, v0!.signature);
  assert.ok(versions[1]!.last_valid_block_height > v0!.last_valid_block_height);
  // The old bytes can no longer land.
  await assert.rejects(k.chain.rpc('sendTransaction', [v0!.raw, { encoding: 'base64' }]), /Blockhash not found/);
  const row = await settle(r.id);
  assert.equal(row.status, 'sent');
  assert.equal(row.signature, versions[1]!.signature);
  assert.equal(await k.chain.balance(dest), p.amount, 'paid exactly once');
  assert.equal(
    (await k.chain.rpc('getSignatureStatuses', [[v0!.signature], { searchTransactionHistory: true }])).value[0],
    null,
  );
});

test('a refund the chain refuses for good (a fresh destination left below rent exemption) fails with the reason; nothing leaves the hot wallet; refund.failed is sent; a new refund is sent', async () => {
  const sender = k.adapter.sender!;
  const p = await paidPayment('solana:sol');
  const fresh = (await k.chain.newWallet(0n)).address;
  const good = (await k.chain.newWallet(1_000_000_000n)).address;
  await k.chain.produce();
  const hotSol = await k.chain.balance(k.hotWallet);
  const hotUsdc = await k.chain.tokenBalance(k.hotWallet);
  // The cluster's rent now asks 0.128 SOL of an account: the refund cannot open the fresh destination.
  const exempt = BigInt(await k.chain.rpc<number>('harness_setRent', [1_000_000]));
  try {
    assert.ok(p.amount < exempt);
    const r = await refund(p.id, fresh);
    await k.send();
    const row = (await sender.get(r.id))!;
    assert.equal(row.status, 'failed', row.error ?? '');
    assert.match(row.error!, /insufficient funds for rent/);
    const [v0] = await sender.versions(r.id);
    assert.equal(
      (await k.chain.rpc('getSignatureStatuses', [[v0!.signature], { searchTransactionHistory: true }])).value[0],
      null,
      'never on chain',
    );
    await k.chain.produce();
    assert.equal(await k.chain.balance(k.hotWallet), hotSol, 'no lamports (not even a fee) left the hot wallet');
    assert.equal(await k.chain.tokenBalance(k.hotWallet), hotUsdc);
    assert.equal(await k.chain.balance(fresh), 0n);

    const stored = await k.t.kasse.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', r.id)
      .executeTakeFirstOrThrow();
    assert.equal(stored.status, 'failed');
    assert.match(stored.error!, /insufficient funds for rent/);
    const event = k.receiver!.events.find((e) => e.type === 'refund.failed' && e.data?.id === r.id);
    assert.ok(event, 'refund.failed was delivered');
    assert.equal(event.data.status, 'failed');
    assert.equal(event.data.payment_id, p.id);
    assert.equal(event.data.destination, fresh);
    assert.equal(event.data.tx_hash, null);
    assert.match(event.data.error, /InsufficientFundsForRent/);
    const pay = (await k.m.test.get(`/payments/${p.id}`)).body;
    assert.equal(pay.status, 'paid', 'the payment keeps its status');
    assert.ok(!k.eventTypes(p.id).includes('payment.refunded'));

    // The merchant asks again, to a destination the chain can pay.
    const again = await refund(p.id, good);
    assert.notEqual(again.id, r.id);
    const sent = await settle(again.id);
    assert.equal(sent.status, 'sent', sent.error ?? '');
    assert.equal(await k.chain.balance(good), 1_000_000_000n + p.amount);
    assert.equal(await k.chain.balance(k.hotWallet), hotSol - p.amount - 5000n, 'one refund and one fee');
  } finally {
    await k.chain.rpc('harness_setRent', [null]);
  }
  assert.equal((await k.m.test.get(`/payments/${p.id}`)).body.status, 'refunded');
});

test('a node that cannot be reached is not a verdict: the refund waits and is tried again, then sent once', async () => {
  const sender = k.adapter.sender!;
  const p = await paidPayment('solana:sol');
  const dest = (await k.chain.newWallet(0n)).address;
  const r = await refund(p.id, dest);
  const down = async (on: boolean) => {
    for (const i of [0, 1]) await k.chain.rpc('harness_setListener', [i, { down: on }]);
  };
  const waitsAs = async (status: string, tries: number) => {
    const row = (await sender.get(r.id))!;
    assert.equal(row.status, status);
    assert.equal(row.tries, tries);
    assert.ok(row.error, 'the reason is kept');
    assert.ok(row.next_attempt_at.getTime() > k.t.clock.now().getTime(), 'backed off');
    return row;
  };
  // Unreachable while building, then while sending: each step waits where it is.
  await down(true);
  try {
    assert.equal(await sender.step(r.id), 'wait');
  } finally {
    await down(false);
  }
  await waitsAs('pending', 1);
  k.t.clock.advance(60_000);
  assert.equal(await sender.step(r.id), 'progress');
  assert.equal((await sender.get(r.id))!.status, 'signed');
  await down(true);
  try {
    assert.equal(await sender.step(r.id), 'wait');
    const waiting = await waitsAs('signed', 1);
    assert.match(waiting.error!, /^send: .*503/);
    // A worker pass while the node is still away leaves it as it is.
    k.t.clock.advance(60_000);
    assert.ok((await k.send()) >= 1, 'the worker took it up');
    assert.equal((await sender.get(r.id))!.status, 'signed');
  } finally {
    await down(false);
  }
  assert.equal(
    (await k.t.kasse.db.selectFrom('refunds').select('status').where('id', '=', r.id).executeTakeFirstOrThrow()).status,
    'pending',
  );
  assert.equal(await k.chain.balance(dest), 0n);

  k.t.clock.advance(60_000);
  const row = await settle(r.id);
  assert.equal(row.status, 'sent', row.error ?? '');
  assert.equal((await sender.versions(r.id)).length, 1, 'the stored bytes were sent');
  assert.equal(await k.chain.balance(dest), p.amount, 'paid once');
  assert.equal((await k.m.test.get(`/payments/${p.id}`)).body.status, 'refunded');
  assert.ok(!k.receiver!.events.some((e) => e.type === 'refund.failed' && e.data?.id === r.id));
});
