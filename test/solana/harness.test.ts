/**
 * The Solana test node speaks a Solana RPC node's wire format and its controls do what the chain tests rely on:
 * blocks with balances and token balances, skipped slots, commitment levels, blockhash expiry, preflight errors (in
 * a node's words), the cluster's rent, a transaction dropped before finality (state rolled back, others replayed),
 * and listeners that are down or lag.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startSolanaNode, type SolanaNode } from '../harness/solana.ts';
import { SolanaTestChain, type Wallet } from '../harness/solana-chain.ts';

let node: SolanaNode;
let chain: SolanaTestChain;
let funder: Wallet;

before(async () => {
  node = await startSolanaNode({ listeners: 2, finalityDepth: 4 });
  chain = new SolanaTestChain(node.urls[0]!);
  funder = await chain.newWallet(100_000_000_000n);
  await chain.produce();
  await chain.createUsdc(funder);
  await chain.produce();
});
after(() => node?.stop());

test('a block lists SOL and SPL balance changes with transactionDetails "accounts"', async () => {
  const payer = await chain.newWallet();
  await chain.produce();
  await chain.mintUsdc(funder, payer.address, 50_000_000n);
  await chain.produce();
  const to = await chain.newWallet(0n);
  const sig = await chain.sendUsdc(payer, to.address, 12_000_000n, { createAta: true });
  const sig2 = await chain.sendSol(payer, to.address, 5_000_000n);
  const slot = await chain.produce();
  const blocks = await chain.rpc<number[]>('getBlocks', [slot - 3, slot, { commitment: 'confirmed' }]);
  assert.ok(blocks.includes(slot));
  await assert.rejects(
    chain.rpc('getBlock', [slot, { transactionDetails: 'accounts' }]),
    /Block not available/,
    'default commitment is finalized',
  );
  const block = await chain.rpc('getBlock', [
    slot,
    { commitment: 'confirmed', transactionDetails: 'accounts', rewards: false, maxSupportedTransactionVersion: 0 },
  ]);
  assert.equal(block.transactions.length, 2);
  const [usdcTx, solTx] = block.transactions;
  assert.deepEqual(usdcTx.transaction.signatures, [sig]);
  assert.equal(usdcTx.version, 0);
  assert.equal(usdcTx.meta.err, null);
  assert.equal(usdcTx.meta.fee, 5000);
  const ata = await chain.ata(to.address);
  const idx = usdcTx.transaction.accountKeys.findIndex((k: any) => k.pubkey === ata);
  assert.ok(idx > 0);
  assert.deepEqual(usdcTx.transaction.accountKeys[0], {
    pubkey: payer.address,
    signer: true,
    source: 'transaction',
    writable: true,
  });
  const post = usdcTx.meta.postTokenBalances.find((b: any) => b.accountIndex === idx);
  assert.equal(post.owner, to.address);
  assert.equal(post.mint, chain.usdc);
  assert.equal(post.uiTokenAmount.amount, '12000000');
  assert.equal(post.uiTokenAmount.uiAmountString, '12');
  assert.ok(!usdcTx.meta.preTokenBalances.some((b: any) => b.accountIndex === idx), 'the account did not exist before');
  assert.equal(solTx.transaction.signatures[0], sig2);
  const j = solTx.transaction.accountKeys.findIndex((k: any) => k.pubkey === to.address);
  assert.equal(solTx.meta.postBalances[j] - solTx.meta.preBalances[j], 5_000_000);
  assert.equal(block.parentSlot, slot - 1);
  await assert.rejects(
    chain.rpc('getBlock', [slot, { commitment: 'confirmed', transactionDetails: 'accounts' }]),
    (e: any) => e.code === -32015,
  );
});

test('skipped slots are missing from getBlocks and answer -32007; the next block names its real parent', async () => {
  const before = await chain.produce();
  await chain.skip(3);
  const slot = await chain.produce();
  assert.equal(slot, before + 4);
  assert.deepEqual(await chain.rpc('getBlocks', [before, slot, { commitment: 'confirmed' }]), [before, slot]);
  await assert.rejects(chain.rpc('getBlock', [before + 2, { commitment: 'confirmed' }]), (e: any) => e.code === -32007);
  const b = await chain.rpc('getBlock', [slot, { commitment: 'confirmed', transactionDetails: 'none' }]);
  assert.equal(b.parentSlot, before);
});

test('commitment levels: finalized trails by the finality depth', async () => {
  const tip = await chain.produce(5);
  const s = await chain.state();
  assert.equal(await chain.rpc('getSlot', [{ commitment: 'confirmed' }]), tip);
  assert.equal(await chain.rpc('getSlot', [{ commitment: 'finalized' }]), s.finalized);
  assert.ok(s.finalized < tip);
  const fin = await chain.rpc<number[]>('getBlocks', [s.finalized - 2, tip, { commitment: 'finalized' }]);
  assert.equal(fin.at(-1), s.finalized);
});

test('preflight: an expired blockhash and a repeated transaction are refused; skipPreflight accepts and drops them', async () => {
  const w = await chain.newWallet();
  await chain.produce();
  const tx = await chain.sign(w, [
    chain.usdcTransfer(w, await chain.ata(w.address), await chain.ata(funder.address), 1n),
  ]);
  await assert.rejects(chain.send(tx), (e: any) => e.code === -32002 && /simulation failed/.test(e.message));
  const sol = await chain.sign(w, [
    (await import('@solana-program/system')).getTransferSolInstruction({
      source: w,
      destination: funder.address,
      amount: 1000n,
    }),
  ]);
  await chain.send(sol);
  await assert.rejects(chain.send(sol), (e: any) => e.code === -32002 && e.data.err === 'AlreadyProcessed');
  await chain.produce(151);
  const stale = await chain.sign(w, []);
  await chain.produce(151);
  await assert.rejects(chain.send(stale), (e: any) => e.code === -32002 && e.data.err === 'BlockhashNotFound');
  const { value } = await chain.rpc('isBlockhashValid', [
    (await chain.latestBlockhash()).blockhash,
    { commitment: 'processed' },
  ]);
  assert.equal(value, true);
});

test("preflight words a rent refusal as a node does; the cluster's rent can be raised and restored", async () => {
  const w = await chain.newWallet(1_000_000_000n);
  await chain.produce();
  const fresh = (await chain.newWallet(0n)).address;
  const refused = (e: any) =>
    e.code === -32002 &&
    /Transaction simulation failed: Transaction results in an account \(1\) with insufficient funds for rent$/.test(
      e.message,
    ) &&
    JSON.stringify(e.data.err) === '{"InsufficientFundsForRent":{"account_index":1}}' &&
    Array.isArray(e.data.logs);
  await assert.rejects(chain.sendSol(w, fresh, 1000n), refused);
  assert.equal(await chain.rpc('harness_setRent', [1_000_000]), 128_000_000);
  assert.equal(await chain.rpc('getMinimumBalanceForRentExemption', [0]), 128_000_000);
  try {
    await assert.rejects(chain.sendSol(w, fresh, 100_000_000n), refused);
  } finally {
    assert.equal(await chain.rpc('harness_setRent', [null]), 890_880);
  }
  await chain.sendSol(w, fresh, 100_000_000n);
  await chain.produce();
  assert.equal(await chain.balance(fresh), 100_000_000n);
});

test('a transaction dropped before finality: its slot leaves the chain, its effects are undone, the others land again', async () => {
  const a = await chain.newWallet();
  const b = await chain.newWallet();
  await chain.produce();
  const to = (await chain.newWallet(0n)).address;
  const dropped = await chain.sendSol(a, to, 1_000_000n);
  const kept = await chain.sendSol(b, to, 2_000_000n);
  const slot = await chain.produce();
  assert.equal(await chain.balance(to), 3_000_000n);
  const r = await chain.drop(dropped);
  assert.deepEqual(r.droppedSlots, [String(slot)]);
  assert.equal(await chain.balance(to), 2_000_000n);
  const statuses = await chain.rpc('getSignatureStatuses', [[dropped, kept], { searchTransactionHistory: true }]);
  assert.equal(statuses.value[0], null);
  assert.equal(statuses.value[1].confirmationStatus, 'processed');
  const next = await chain.produce();
  await assert.rejects(chain.rpc('getBlock', [slot, { commitment: 'confirmed' }]), (e: any) => e.code === -32007);
  const blk = await chain.rpc('getBlock', [next, { commitment: 'confirmed', transactionDetails: 'signatures' }]);
  assert.deepEqual(blk.signatures, [kept]);
  assert.equal(blk.parentSlot < slot, true);
  await chain.finalize();
  await assert.rejects(chain.drop(kept), /finalized/);
});

test('listeners: one down answers 503, one lagging hides the newest blocks', async () => {
  const other = new SolanaTestChain(node.urls[1]!);
  const tip = await chain.produce(3);
  await other.rpc('harness_setListener', [1, { lag: 2 }]);
  assert.equal(await other.rpc('getSlot', [{ commitment: 'confirmed' }]), tip - 2);
  await assert.rejects(other.rpc('getBlock', [tip, { commitment: 'confirmed' }]), (e: any) => e.code === -32004);
  await other.rpc('harness_setListener', [1, { lag: 0, down: true }]);
  const res = await fetch(node.urls[1]!, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getSlot' }),
  });
  assert.equal(res.status, 503);
  await other.rpc('harness_setListener', [1, { down: false }]);
  assert.equal(await chain.rpc('getSlot', [{ commitment: 'confirmed' }]), tip);
});
