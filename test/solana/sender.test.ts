/**
 * Refunds from the Solana hot wallet through the public API, and the crash-safe sender: the signed transaction is
 * stored before it is sent, sent again byte for byte after a restart or when its block is dropped, and rebuilt with
 * a new blockhash only after the old one expired unseen; the destination is paid exactly once. Private test node.
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
  const res = await k.m.test.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: `rfd-${++seq}`, chain: 'solana', token });
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
  const res = await k.m.test.post(`/payments/${p.id}/refund`, { destination: '0x1111111111111111111111111111111111111111' });
  assert.equal(res.status, 400);
  assert.equal(res.body.error.param, 'destination');
  assert.equal((await k.t.kasse.db.selectFrom('refunds').select('id').where('payment_id', '=', p.id).execute()).length, 0);
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
  const reborn = new SolanaSender(k.adapter, { db: k.t.kasse.db, clock: k.t.clock, log: k.t.kasse.log, keys: solanaKeys(k.secrets), sink: k.t.kasse.transfers });
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
  assert.equal((await k.chain.rpc('getSignatureStatuses', [[v0!.signature], { searchTransactionHistory: true }])).value[0], null);
});
