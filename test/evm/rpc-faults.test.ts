/**
 * The watcher and its RPC client against misbehaving endpoints: Kasse talks to the run's shared Hardhat node through
 * two fault-injection proxies (test/harness/rpc-proxy.ts). Errors, HTTP 500, 429, timeouts, dropped connections,
 * non-JSON bodies, missing blocks, logs for unknown block hashes, incomplete log answers and a lagging head are all
 * survived with retries and failover, every payment is found, and the stored chain of block hashes has no gap; an
 * optional method both nodes refuse is listed by `kasse evm status`.
 * Blocks mined by the other test file on the shared node only add blocks, which this file tolerates.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Address } from 'viem';
import { evmCommands } from '../../src/chains/evm/commands.ts';
import { RpcClient, RpcError } from '../../src/chains/evm/rpc.ts';
import { startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import { sharedEvmRpc } from '../harness/hardhat.ts';
import { startRpcProxy, type RpcFault, type RpcProxy } from '../harness/rpc-proxy.ts';

let k: EvmKasse;
let primary: RpcProxy;
let secondary: RpcProxy;
let firstCursor: bigint;

before(async () => {
  primary = await startRpcProxy(sharedEvmRpc());
  secondary = await startRpcProxy(sharedEvmRpc());
  k = await startEvmKasse({
    rpcUrl: sharedEvmRpc(),
    kasseRpcUrls: [primary.url, secondary.url],
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
    finality: 10_000,
    evm: { rpc_timeout_ms: 300 },
  });
  await k.tick();
  firstCursor = (await k.watcher.cursor())!.number;
});
after(async () => {
  await k?.close();
  await primary?.close();
  await secondary?.close();
});

let orderSeq = 0;
async function pay(cents = 500): Promise<{ id: string; address: Address }> {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `fault-${++orderSeq}`,
    chain: 'base',
    token: 'base:usdc',
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const p = { id: res.body.id as string, address: res.body.attempts[0].address as Address };
  await k.chain.receipt(await k.chain.sendToken(k.payer, k.usdc, p.address, BigInt(res.body.attempts[0].pay_amount)));
  await k.chain.mine(1);
  return p;
}

async function status(id: string): Promise<string> {
  return (await k.m.test.get(`/payments/${id}`)).body.status;
}

describe('transport faults are retried with failover', () => {
  for (const fault of ['error', 'http500', 'rate_limit', 'timeout', 'drop', 'malformed'] as RpcFault[]) {
    test(`${fault} on every method`, async () => {
      const p = await pay();
      const applied = () => primary.applied.length + secondary.applied.length;
      const before = applied();
      // Queued on both endpoints, so the first call of each method fails wherever the client is pointed.
      for (const method of ['eth_blockNumber', 'eth_getBlockByNumber', 'eth_getLogs']) {
        primary.failNext(1, fault, method);
        secondary.failNext(1, fault, method);
      }
      try {
        await k.tick();
      } finally {
        primary.clearFaults();
        secondary.clearFaults();
      }
      assert.equal(await status(p.id), 'paid');
      assert.ok(applied() - before >= 3, `faults were hit: ${applied() - before}`);
    });
  }

  test('an endpoint that fails every time: the other URL serves', async () => {
    const p = await pay();
    primary.failNext(1000, 'drop');
    try {
      await k.tick();
      assert.equal(await status(p.id), 'paid');
      assert.ok(secondary.total > 0);
    } finally {
      primary.clearFaults();
    }
  });

  test('every URL failing beyond the attempts: the tick fails, the cursor stays, the next tick recovers', async () => {
    const p = await pay();
    const cursor = (await k.watcher.cursor())!.number;
    primary.failNext(20, 'http500');
    secondary.failNext(20, 'http500');
    try {
      await assert.rejects(k.tick(), RpcError);
      assert.equal((await k.watcher.cursor())!.number, cursor);
    } finally {
      primary.clearFaults();
      secondary.clearFaults();
    }
    await k.tick();
    assert.equal(await status(p.id), 'paid');
  });

  test('429 and errors are counted in kasse_chain_rpc_calls_total by outcome', async () => {
    const text = await k.t.kasse.metrics.registry.getSingleMetricAsString('kasse_chain_rpc_calls_total');
    assert.match(text, /outcome="rate_limited"/);
    assert.match(text, /outcome="timeout"/);
    assert.match(text, /outcome="error"/);
    assert.match(text, /outcome="ok"/);
  });
});

describe('inconsistent answers are retried, never skipped', () => {
  test('a missing block (null) is fetched again', async () => {
    const p = await pay();
    primary.failNext(1, 'null', 'eth_getBlockByNumber');
    await k.tick();
    assert.equal(await status(p.id), 'paid');
    assert.ok(primary.applied.some((a) => a.fault === 'null'));
  });

  test('logs naming a block hash that is not in the batch are fetched again', async () => {
    const p = await pay();
    primary.failNext(1, 'foreign_logs', 'eth_getLogs');
    await k.tick();
    assert.equal(await status(p.id), 'paid');
  });

  test("a log answer missing a block's logs is caught by the block's bloom and completed", async () => {
    const p = await pay();
    primary.failNext(1, 'empty_logs', 'eth_getLogs');
    secondary.failNext(1, 'empty_logs', 'eth_getLogs');
    const before = (primary.counts.get('eth_getLogs') ?? 0) + (secondary.counts.get('eth_getLogs') ?? 0);
    await k.tick();
    const after = (primary.counts.get('eth_getLogs') ?? 0) + (secondary.counts.get('eth_getLogs') ?? 0);
    assert.ok(after - before >= 2, 'a per-block eth_getLogs by blockHash followed');
    assert.equal(await status(p.id), 'paid');
  });

  test('a lagging node (head behind the cursor) is waited for; what it had not seen is found later', async () => {
    await k.tick();
    const cursor = (await k.watcher.cursor())!.number;
    primary.setLag(30);
    secondary.setLag(30);
    try {
      const r = await k.tick();
      assert.equal(r.lagging, true);
      assert.equal((await k.watcher.cursor())!.number, cursor);
      const p = await pay();
      await k.tick();
      assert.equal(await status(p.id), 'waiting', 'the lagging node does not have it yet');
      primary.setLag(0);
      secondary.setLag(0);
      await k.tick();
      assert.equal(await status(p.id), 'paid');
    } finally {
      primary.setLag(0);
      secondary.setLag(0);
    }
  });

  test('no block was skipped: the stored hashes form one unbroken chain from the first cursor to the last', async () => {
    const cursor = (await k.watcher.cursor())!;
    const rows = await k.t.kasse.db
      .selectFrom('evm_blocks')
      .select(['number', 'hash', 'parent_hash'])
      .where('mode', '=', 'test')
      .where('chain', '=', 'base')
      .orderBy('number')
      .execute();
    assert.ok(
      BigInt(rows[0]!.number) < firstCursor,
      'nothing pruned (finality 10000): the rows start below the first tick',
    );
    for (let i = 1; i < rows.length; i++) {
      assert.equal(BigInt(rows[i]!.number), BigInt(rows[i - 1]!.number) + 1n, `gap after block ${rows[i - 1]!.number}`);
      assert.equal(rows[i]!.parent_hash, rows[i - 1]!.hash, `block ${rows[i]!.number} does not link`);
    }
    assert.equal(BigInt(rows.at(-1)!.number), cursor.number);
    assert.equal(rows.at(-1)!.hash, cursor.hash);
    const onChain = await k.chain.client.getBlock({ blockNumber: cursor.number });
    assert.equal(onChain.hash, cursor.hash);
  });
});

describe('optional methods', () => {
  test('kasse evm status lists eth_maxPriorityFeePerGas when the nodes do not serve it, with what the sender does instead', async () => {
    const status = () =>
      evmCommands
        .find((c) => c.name === 'evm status')!
        .run(k.t.kasse.familyContext, { chain: 'base', mode: 'test' }, []) as Promise<{
        missing_methods: Array<{ method: string; answer: string; without: string }>;
      }>;
    assert.deepEqual((await status()).missing_methods, []);
    primary.refuseMethods(['eth_maxPriorityFeePerGas']);
    secondary.refuseMethods(['eth_maxPriorityFeePerGas']);
    try {
      const [missing] = (await status()).missing_methods;
      assert.equal(missing!.method, 'eth_maxPriorityFeePerGas');
      assert.equal(
        missing!.answer,
        'eth_maxPriorityFeePerGas: the method eth_maxPriorityFeePerGas does not exist/is not available (-32601)',
      );
      assert.match(missing!.without, /tips 1 gwei/);
    } finally {
      primary.refuseMethods([]);
      secondary.refuseMethods([]);
    }
  });
});

describe('RpcClient', () => {
  test('non-retryable errors (bad params) are thrown at once, without failover', async () => {
    const client = new RpcClient({ chain: 'base', urls: [primary.url, secondary.url], timeoutMs: 300, backoffMs: 1 });
    const before = primary.total + secondary.total;
    await assert.rejects(
      client.request('eth_getBlockByNumber', ['not-a-number', false]),
      (err: RpcError) => err.retryable === false,
    );
    assert.equal(primary.total + secondary.total - before, 1);
  });

  test('Retry-After and exponential backoff: a 429 then success', async () => {
    const sleeps: number[] = [];
    const client = new RpcClient({
      chain: 'base',
      urls: [primary.url],
      backoffMs: 100,
      random: () => 0.5,
      sleep: async (ms) => void sleeps.push(ms),
    });
    primary.failNext(1, 'rate_limit');
    primary.failNext(1, 'http500');
    assert.match(await client.request<string>('eth_chainId'), /^0x/);
    assert.deepEqual(sleeps, [50, 100], 'full jitter of 100·2^n (Retry-After: 0 is below it)');
    assert.equal(client.counts.get('eth_chainId'), 3);
  });
});
