/**
 * Kasse's Solana RPC client against the shared Solana test node of the run: answers in the node's wire format,
 * failover from a URL that is down to the next, errors that are facts (a skipped slot) thrown at once with their
 * code, and "block not available" from a lagging listener retried on the next URL.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SolanaRpc, SolanaRpcError } from '../../src/chains/solana/rpc.ts';
import { sharedSolanaRpc } from '../harness/solana.ts';
import { SolanaTestChain } from '../harness/solana-chain.ts';

const [first, second] = sharedSolanaRpc();
const chain = new SolanaTestChain(first!);
const noSleep = async () => {};

test('failover: a URL that refuses connections is left for the next', async () => {
  const rpc = new SolanaRpc({ chain: 'solana', urls: ['http://127.0.0.1:1', first!], sleep: noSleep });
  const slot = await rpc.request<number>('getSlot', [{ commitment: 'confirmed' }]);
  assert.ok(slot >= 0);
  assert.equal(rpc.counts.get('getSlot'), 2);
  assert.equal(rpc.currentUrl, new URL(first!).origin);
});

test('a skipped slot is a fact, thrown at once with its code; bad params too', async () => {
  const before = await chain.produce();
  await chain.skip(1);
  await chain.produce();
  const rpc = new SolanaRpc({ chain: 'solana', urls: [first!, second!], sleep: noSleep });
  await assert.rejects(
    rpc.request('getBlock', [before + 1, { commitment: 'confirmed' }]),
    (e: unknown) => e instanceof SolanaRpcError && e.code === -32007 && !e.retryable,
  );
  assert.equal(rpc.counts.get('getBlock'), 1);
  await assert.rejects(
    rpc.request('getBlock', ['x']),
    (e: unknown) => e instanceof SolanaRpcError && e.code === -32602,
  );
});

test('a listener lagging behind answers "block not available": retried on the next URL', async () => {
  const tip = await chain.produce(2);
  await chain.rpc('harness_setListener', [1, { lag: 2 }]);
  try {
    const rpc = new SolanaRpc({ chain: 'solana', urls: [second!, first!], sleep: noSleep });
    const b = await rpc.request<{ blockhash: string }>('getBlock', [
      tip,
      { commitment: 'confirmed', transactionDetails: 'none' },
    ]);
    assert.ok(b.blockhash);
    assert.equal(rpc.counts.get('getBlock'), 2);
  } finally {
    await chain.rpc('harness_setListener', [1, { lag: 0 }]);
  }
});
