/**
 * The EVM hot-wallet sender on a PRIVATE Hardhat node (this file turns automine off and moves the base fee, so it
 * owns its chain; see test/harness/hardhat.ts): refunds of paid payments in USDC and ETH reach their destination
 * through pending → signed → broadcast → sent and make the payment `refunded` with `payment.refunded`; a crash after
 * signing (before, or just after, the broadcast) ends with a fresh Kasse on the same database broadcasting the SAME
 * bytes, paying exactly once; a stuck transaction is replaced with the same nonce and a higher fee; a transaction
 * that reverts on chain fails the transfer and its nonce stays used. Hold operations through the escrow (placed at
 * its canonical addresses): a real workers process killed (SIGKILL) with a capture and a void submitted and not yet
 * confirmed, started again, captures and voids exactly once; a hold the payer reclaimed on chain after
 * `capture_before` while Kasse was down is recorded by the deadline pass, and one reclaimed while the deadline's void
 * was on its way is recorded as soon as that void fails. Blocks are mined explicitly; nothing sleeps.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { getAddress, parseEther, parseTransaction, type Address, type Hex } from 'viem';
import { SENDER_DEFAULTS } from '../../src/chains/evm/sender-options.ts';
import { EvmAdapter } from '../../src/chains/evm/adapter.ts';
import { authCaptureEscrowAbi } from '../../src/chains/evm/contracts.ts';
import { AUTH_CAPTURE_V1_1, placeAuthCaptureContracts } from '../../src/chains/evm/escrow.ts';
import { paymentInfoOf } from '../../src/chains/evm/holds.ts';
import { EvmSender } from '../../src/chains/evm/sender.ts';
import { hotWalletAccount } from '../../src/chains/evm/wallet.ts';
import { newId } from '../../src/core/ids.ts';
import { withTx } from '../../src/db/index.ts';
import type { Kasse } from '../../src/kasse.ts';
import { ApiClient, startTestKasse } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { startEvmKasse, workersProcesses, type EvmKasse, type WorkersProcess } from '../harness/evm-kasse.ts';
import {
  startHardhatNode,
  TestChain,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
  type HardhatNode,
  type TestWallet,
} from '../harness/hardhat.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';

let node: HardhatNode;
let k: EvmKasse;
let sender: EvmSender;

before(async () => {
  node = await startHardhatNode();
  // The escrow of hold and capture at its canonical addresses, as `kasse evm deploy-escrow` places it.
  const escrow = await placeAuthCaptureContracts({ request: (m, p) => new TestChain(node.url).rpc(m, p) });
  k = await startEvmKasse({
    rpcUrl: node.url,
    tiers: [{ max_usd_cents: null, confirmations: 2 }],
    finality: 4,
    evm: {
      replace_after_blocks: 3,
      auth_capture: {
        escrow: escrow.escrow,
        erc3009_collector: escrow.erc3009Collector,
        operator_refund_collector: escrow.operatorRefundCollector,
      },
    },
  });
  await k.tick();
  assert.ok(k.adapter.sender instanceof EvmSender, 'registerEvmAdapters attaches a sender');
  sender = k.adapter.sender;
  assert.equal(sender.confirmations, 2);
  assert.equal(sender.replaceAfterBlocks, 3);
  // The hot wallet (the factory owner, funded with ETH by the harness) also needs USDC to refund with.
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, sender.address, 1_000_000_000n));
});
after(async () => {
  await k?.close();
  await node?.stop();
});

const freshAddress = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);

let orderSeq = 0;
/** A payment paid in full on chain and seen by the watcher. */
async function paidPayment(token: 'base:usdc' | 'base:eth', cents = 1000) {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `refund-${++orderSeq}`,
    chain: 'base',
    token,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const attempt = res.body.attempts[0];
  const address = attempt.address as Address;
  const amount = BigInt(attempt.pay_amount);
  const hash =
    token === 'base:usdc'
      ? await k.chain.sendToken(k.payer, k.usdc, address, amount)
      : await k.chain.sendEth(k.payer, address, amount);
  await k.chain.receipt(hash);
  await k.tick();
  await k.chain.mine(1);
  await k.tick();
  const pay = await k.m.test.get(`/payments/${res.body.id}`);
  assert.equal(pay.body.status, 'paid');
  return { id: res.body.id as string, amount };
}

async function refund(paymentId: string, destination: Address): Promise<string> {
  const res = await k.m.test.post(`/payments/${paymentId}/refund`, { destination, note: 'customer asked' });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, 'pending');
  return res.body.id as string;
}

async function status(id: string) {
  return (await sender.get(id))!.status;
}

async function hotNonce(): Promise<number> {
  return k.chain.client.getTransactionCount({ address: sender.address });
}

async function expectRefunded(paymentId: string, refundId: string, txHash: string) {
  const pay = await k.m.test.get(`/payments/${paymentId}`);
  assert.equal(pay.body.status, 'refunded');
  const row = await k.t.kasse.db.selectFrom('refunds').selectAll().where('id', '=', refundId).executeTakeFirstOrThrow();
  assert.equal(row.status, 'sent');
  assert.equal(row.tx_hash, txHash);
  await k.t.kasse.webhooks.drain();
  assert.equal(k.eventTypes(paymentId).at(-1), 'payment.refunded');
}

describe('refunds', () => {
  test('a USDC refund goes pending → signed → broadcast → sent and the payment becomes refunded', async () => {
    const p = await paidPayment('base:usdc', 1200);
    const destination = freshAddress();
    const nonce0 = await hotNonce();
    const id = await refund(p.id, destination);
    assert.equal(await status(id), 'pending');

    assert.equal(await sender.step(id), 'progress');
    const signed = (await sender.get(id))!;
    assert.equal(signed.status, 'signed');
    assert.equal(signed.nonce, BigInt(nonce0));
    const [v0] = await sender.versions(id);
    assert.equal(v0!.tx_hash, signed.tx_hash, 'the signed raw transaction and its hash are stored before broadcasting');
    assert.equal(await k.chain.rpc('eth_getTransactionByHash', [signed.tx_hash]), null, 'not broadcast yet');
    const parsed = parseTransaction(v0!.raw as Hex);
    assert.equal(parsed.type, 'eip1559');
    assert.equal(parsed.nonce, nonce0);
    assert.ok(parsed.maxFeePerGas! <= sender.maxFeePerGas);

    assert.equal(await sender.step(id), 'progress');
    assert.equal(await status(id), 'broadcast');
    assert.equal(await sender.step(id), 'wait', 'mined (automine) but 1 confirmation of 2');
    assert.equal(await k.chain.tokenBalance(k.usdc, destination), p.amount);
    await k.chain.mine(1);
    assert.equal(await sender.step(id), 'done');
    const sent = (await sender.get(id))!;
    assert.equal(sent.status, 'sent');
    assert.equal(sent.tx_hash, signed.tx_hash);
    assert.equal(sent.reported, true);
    const tx = await k.chain.client.getTransaction({ hash: sent.tx_hash as Hex });
    assert.equal(tx.from.toLowerCase(), sender.address.toLowerCase());
    await expectRefunded(p.id, id, sent.tx_hash!);
    assert.equal(await hotNonce(), nonce0 + 1);
  });

  test('an ETH refund through the worker pass (runDue) reaches the destination', async () => {
    const p = await paidPayment('base:eth', 2500);
    const destination = freshAddress();
    const id = await refund(p.id, destination);
    assert.equal(await sender.runDue(), 1);
    assert.equal(await status(id), 'broadcast');
    assert.equal(await k.chain.balance(destination), p.amount);
    await k.chain.mine(1);
    await sender.runDue();
    const sent = (await sender.get(id))!;
    assert.equal(sent.status, 'sent');
    await expectRefunded(p.id, id, sent.tx_hash!);
    assert.equal(await sender.runDue(), 0, 'nothing left to do');
  });
});

describe('a node that cannot be reached', () => {
  test('a broadcast refund whose node is down waits with backoff, its tries counted and the reason kept; then it settles once', async () => {
    const p = await paidPayment('base:usdc', 700);
    const destination = freshAddress();
    const id = await refund(p.id, destination);
    assert.equal(await sender.step(id), 'progress');
    assert.equal(await sender.step(id), 'progress');
    assert.equal(await status(id), 'broadcast');
    // The same network and hot wallet behind a node that refuses every connection.
    const unreachable = { request: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:9')) };
    const cut = new EvmSender(
      { network: sender.network, mode: sender.mode, rpc: () => unreachable as never },
      {
        db: k.t.kasse.db,
        clock: k.t.clock,
        log: k.t.kasse.log,
        account: () => hotWalletAccount(k.t.kasse.secrets),
        sink: k.t.kasse.transfers,
      },
    );
    assert.equal(await cut.step(id), 'wait');
    const waiting = (await sender.get(id))!;
    assert.equal(waiting.status, 'broadcast');
    assert.equal(waiting.tries, 1);
    assert.match(waiting.error!, /ECONNREFUSED/);
    assert.equal(
      waiting.next_attempt_at.getTime(),
      k.t.clock.now().getTime() + SENDER_DEFAULTS.retryBaseMs,
      'backed off',
    );
    assert.equal(await sender.runDue(), 0, 'not due during the backoff');
    k.t.clock.advance(SENDER_DEFAULTS.retryBaseMs);
    await k.chain.mine(1);
    await sender.runDue();
    const sent = (await sender.get(id))!;
    assert.equal(sent.status, 'sent');
    assert.equal(await k.chain.tokenBalance(k.usdc, destination), p.amount, 'paid once');
    await expectRefunded(p.id, id, sent.tx_hash!);
  });
});

/** The senders of every EVM adapter `kasse` registered, both modes. */
function evmSenders(kasse: Kasse): EvmSender[] {
  return (['live', 'test'] as const).flatMap((mode) =>
    kasse.chains.networks(mode).flatMap((network) => {
      const adapter = kasse.chains.hasAdapter(mode, network.id) ? kasse.chains.adapter(mode, network.id) : null;
      return adapter instanceof EvmAdapter && adapter.sender ? [adapter.sender] : [];
    }),
  );
}

describe('crash safety', () => {
  /** A second Kasse on the same database, as after a restart; the first one is never called again. */
  async function restart() {
    const fresh = await startTestKasse({
      databaseUrl: k.t.databaseUrl,
      clock: k.t.clock,
      env: { KASSE_NETWORKS_FILE: k.networksFile },
    });
    const senders = evmSenders(fresh.kasse);
    assert.equal(senders.length, 1);
    return { fresh, sender: senders[0]! };
  }

  test('crash after signing, before broadcasting: the fresh Kasse broadcasts the same bytes; paid once', async () => {
    const p = await paidPayment('base:usdc', 900);
    const destination = freshAddress();
    const nonce0 = await hotNonce();
    const id = await refund(p.id, destination);
    await sender.step(id); // signed and stored …
    const stored = (await sender.get(id))!;
    assert.equal(stored.status, 'signed');
    // … and the process dies here.
    const { fresh, sender: s2 } = await restart();
    try {
      await s2.runDue();
      await k.chain.mine(1);
      await s2.runDue();
      const done = (await s2.get(id))!;
      assert.equal(done.status, 'sent');
      assert.equal(done.tx_hash, stored.tx_hash, 'the same transaction hash');
      assert.equal((await s2.versions(id)).length, 1, 'never re-signed');
      assert.equal(await k.chain.tokenBalance(k.usdc, destination), p.amount, 'paid exactly once');
      assert.equal(await hotNonce(), nonce0 + 1, 'one transaction left the hot wallet');
      await expectRefunded(p.id, id, stored.tx_hash!);
    } finally {
      await fresh.close();
    }
  });

  test('crash just after broadcasting, before recording it: the same hash settles it; paid once', async () => {
    const p = await paidPayment('base:usdc', 800);
    const destination = freshAddress();
    const nonce0 = await hotNonce();
    const id = await refund(p.id, destination);
    await sender.step(id);
    const [v0] = await sender.versions(id);
    await k.chain.rpc('eth_sendRawTransaction', [v0!.raw]); // the broadcast went out, then the process died
    assert.equal(await status(id), 'signed');
    const { fresh, sender: s2 } = await restart();
    try {
      await s2.runDue(); // re-broadcast: the node answers "nonce too low" (mined); the receipt settles it
      await k.chain.mine(1);
      await s2.runDue();
      const done = (await s2.get(id))!;
      assert.equal(done.status, 'sent');
      assert.equal(done.tx_hash, v0!.tx_hash);
      assert.equal(await k.chain.tokenBalance(k.usdc, destination), p.amount, 'paid exactly once');
      assert.equal(await hotNonce(), nonce0 + 1);
      await expectRefunded(p.id, id, v0!.tx_hash);
    } finally {
      await fresh.close();
    }
  });
});

describe('stuck and reverted transactions', () => {
  async function payout(amount: bigint, destination: Address, token: 'base:usdc' | 'base:eth'): Promise<string> {
    const id = newId('po');
    await withTx(k.t.kasse.db, (tx) =>
      sender.enqueue(tx, {
        transferId: id,
        token: k.t.kasse.chains.token('test', token)!,
        destination,
        amount,
        mode: 'test',
        purpose: 'payout',
      }),
    );
    return id;
  }

  test('a transaction stuck below the base fee is replaced with the same nonce and a higher fee; the replacement settles it', async () => {
    const destination = freshAddress();
    const id = await payout(parseEther('0.01'), destination, 'base:eth');
    await k.chain.setAutomine(false);
    try {
      await sender.step(id);
      await sender.step(id);
      assert.equal(await status(id), 'broadcast');
      const [v0] = await sender.versions(id);
      // The next blocks' base fee jumps far above what v0 offers, so it stays in the mempool.
      await k.chain.rpc('hardhat_setNextBlockBaseFeePerGas', [`0x${(BigInt(v0!.max_fee_per_gas) * 20n).toString(16)}`]);
      await k.chain.mine(1);
      assert.equal(await sender.step(id), 'wait', 'unmined, but not yet for replace_after_blocks');
      await k.chain.mine(2);
      assert.equal(await sender.step(id), 'progress', 'replaced');
      assert.equal(await status(id), 'signed', 'the replacement is stored before it is broadcast');
      const versions = await sender.versions(id);
      assert.equal(versions.length, 2);
      const [a, b] = versions.map((v) => parseTransaction(v.raw as Hex));
      assert.equal(b!.nonce, a!.nonce, 'same nonce');
      assert.ok(
        b!.maxFeePerGas! * 10n >= a!.maxFeePerGas! * 11n &&
          b!.maxPriorityFeePerGas! * 10n >= a!.maxPriorityFeePerGas! * 11n,
        'at least +10 % on both fees',
      );
      assert.ok(b!.maxFeePerGas! <= sender.maxFeePerGas, 'within the cap');
      assert.equal((await sender.get(id))!.tx_hash, versions[1]!.tx_hash);

      assert.equal(await sender.step(id), 'progress');
      await k.chain.mine(2);
      assert.equal(await sender.step(id), 'done');
      const done = (await sender.get(id))!;
      assert.equal(done.status, 'sent');
      assert.equal(done.tx_hash, versions[1]!.tx_hash, 'the replacement was mined');
      assert.equal(
        await k.chain.rpc('eth_getTransactionReceipt', [versions[0]!.tx_hash]),
        null,
        'the original never was',
      );
      assert.equal(await k.chain.balance(destination), parseEther('0.01'), 'paid once');
    } finally {
      await k.chain.setAutomine(true);
    }
  });

  test('a transfer that reverts on chain fails; its nonce stays used and the next transfer takes the next one', async () => {
    const held = await k.chain.tokenBalance(k.usdc, sender.address);
    const [d1, d2, d3] = [freshAddress(), freshAddress(), freshAddress()];
    const first = await payout(held, d1, 'base:usdc');
    const second = await payout(held, d2, 'base:usdc'); // both fit the balance when estimated; only one can be paid
    await k.chain.setAutomine(false);
    try {
      for (const id of [first, second]) await sender.step(id);
      for (const id of [first, second]) await sender.step(id);
      await k.chain.mine(2);
    } finally {
      await k.chain.setAutomine(true);
    }
    assert.equal(await sender.step(first), 'done');
    assert.equal(await sender.step(second), 'done');
    const [a, b] = [(await sender.get(first))!, (await sender.get(second))!];
    assert.equal(a.status, 'sent');
    assert.equal(b.status, 'failed');
    assert.match(b.error!, /reverted/);
    assert.ok(b.tx_hash, 'the reverted transaction is on record');
    assert.equal(b.nonce, a.nonce! + 1n);
    assert.equal(await k.chain.tokenBalance(k.usdc, d1), held);
    assert.equal(await k.chain.tokenBalance(k.usdc, d2), 0n);

    await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, sender.address, 5_000_000n));
    const third = await payout(5_000_000n, d3, 'base:usdc');
    await sender.step(third);
    assert.equal((await sender.get(third))!.nonce, b.nonce! + 1n, 'the reverted nonce is not reused');
    await sender.step(third);
    await k.chain.mine(1);
    assert.equal(await sender.step(third), 'done');
    assert.equal(await status(third), 'sent');
    assert.equal(await k.chain.tokenBalance(k.usdc, d3), 5_000_000n);
  });

  test('a refund whose transfer reverts deterministically fails with the reason: refund.failed is sent, the payment is unchanged, a new refund is accepted', async () => {
    const p = await paidPayment('base:eth');
    const nonce0 = await hotNonce();
    // The USDC contract has no receive function: ETH sent to it always reverts.
    const res = await k.m.test.post(`/payments/${p.id}/refund`, { destination: k.usdc });
    assert.equal(res.status, 202);
    assert.equal(res.body.error, null);
    assert.equal(await sender.step(res.body.id), 'done');
    const row = await k.t.kasse.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'failed');
    assert.match(row.error!, /would revert/);
    assert.equal(await hotNonce(), nonce0, 'nothing was sent');
    await k.t.kasse.webhooks.drain();
    const event = k.receiver!.events.find((e) => e.type === 'refund.failed' && e.data?.id === res.body.id);
    assert.ok(event, 'refund.failed was delivered');
    assert.deepEqual(Object.keys(event.data).sort(), Object.keys(res.body).sort(), 'data is the Refund object');
    assert.equal(event.data.status, 'failed');
    assert.match(event.data.error, /would revert/);
    assert.equal((await k.m.test.get(`/payments/${p.id}`)).body.status, 'paid');
    const again = await k.m.test.post(`/payments/${p.id}/refund`, { destination: freshAddress() });
    assert.equal(again.status, 202, JSON.stringify(again.body));
    assert.equal(again.body.status, 'pending');
    // Settle it so later passes do not see it.
    await k.t.kasse.db
      .updateTable('evm_transfers')
      .set({ status: 'failed', reported: true })
      .where('id', '=', again.body.id)
      .execute();
  });

  test('a transfer whose estimate reverts fails before it takes a nonce; an underfunded hot wallet waits', async () => {
    await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, sender.address, 1_000_000n));
    const nonce0 = await hotNonce();
    const reverts = await payout(1n, getAddress(`0x${'00'.repeat(20)}`), 'base:usdc'); // ERC20InvalidReceiver
    assert.equal(await sender.step(reverts), 'done');
    const failed = (await sender.get(reverts))!;
    assert.equal(failed.status, 'failed');
    assert.equal(failed.nonce, null);
    assert.match(failed.error!, /would revert/);
    assert.equal((await sender.versions(reverts)).length, 0);

    const tooMuch = await payout(10n ** 30n, freshAddress(), 'base:eth');
    assert.equal(await sender.step(tooMuch), 'wait');
    const waiting = (await sender.get(tooMuch))!;
    assert.equal(waiting.status, 'pending');
    assert.equal(waiting.tries, 1);
    assert.match(waiting.error!, /hot wallet .* holds/);
    assert.ok(waiting.next_attempt_at.getTime() > k.t.clock.now().getTime(), 'backed off');

    const usdc = await k.chain.tokenBalance(k.usdc, sender.address);
    const noTokens = await payout(usdc + 1n, freshAddress(), 'base:usdc');
    assert.equal(await sender.step(noTokens), 'wait');
    assert.match((await sender.get(noTokens))!.error!, /holds/);
    assert.equal(await hotNonce(), nonce0, 'nothing was sent');
    // Settle them so later passes do not see them (the operator would fund the wallet instead).
    await k.t.kasse.db
      .updateTable('evm_transfers')
      .set({ status: 'failed', reported: true })
      .where('id', 'in', [tooMuch, noTokens])
      .execute();
  });
});

describe('hold operations', () => {
  /** The payer of the holds here: signs, and once reclaims on chain (its own gas). */
  let holder: TestWallet;
  /** The escrow's token store for the hot wallet as operator: where held money sits. */
  let store: Address;
  const checkout = () => new ApiClient(k.t.urls.checkout, null);
  const usdcOf = (a: Address) => k.chain.tokenBalance(k.usdc, a);
  const payment = async (id: string) => (await k.m.test.get(`/payments/${id}`)).body;
  const available = async () => (await k.m.test.get('/balance')).body.available_usd_cents as number;
  const credits = async (paymentId: string) =>
    (
      await k.t.kasse.db
        .selectFrom('ledger_transactions')
        .select('id')
        .where('payment_id', '=', paymentId)
        .where('kind', '=', 'payment_credit')
        .execute()
    ).length;

  before(async () => {
    holder = await k.chain.newWallet('1');
    await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, holder.address, 1_000_000_000n));
    store = await k.chain.client.readContract({
      address: AUTH_CAPTURE_V1_1.escrow,
      abi: authCaptureEscrowAbi,
      functionName: 'getTokenStore',
      args: [sender.address],
    });
  });

  /** Kasse's fake clock at the latest block's time: the escrow checks a hold's expiries against block time. */
  async function alignClockWithChain(): Promise<void> {
    k.t.clock.set((await k.chain.now()) * 1000);
  }

  /** A manual USDC payment of `cents` whose hold the holder signed (as the checkout's button does) and Kasse locked. */
  async function heldPayment(cents: number): Promise<{ id: string; amount: bigint }> {
    const res = await k.m.test.post('/payments', {
      price_amount: cents,
      price_currency: 'USD',
      order_id: `hold-${++orderSeq}`,
      chain: 'base',
      token: 'base:usdc',
      capture_method: 'manual',
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const attempt = res.body.attempts[0];
    const amount = BigInt(attempt.pay_amount);
    const ask = k.adapter.holds!.ask(
      {
        attemptId: attempt.id,
        payAmount: amount,
        expiresAt: new Date(attempt.expires_at),
        hold: {
          captureBefore: new Date(res.body.authorization.capture_before),
          refundBefore: new Date(res.body.authorization.refund_before),
        },
      },
      k.t.kasse.chains.token('test', 'base:usdc')!,
    );
    const signature = await holder.signTypedData({
      account: holder.account,
      domain: { name: 'Test USDC', version: '2', chainId: 31337, verifyingContract: k.usdc },
      types: { ReceiveWithAuthorization: TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization },
      primaryType: 'ReceiveWithAuthorization',
      message: {
        from: holder.address,
        to: ask.collector,
        value: ask.value,
        validAfter: 0n,
        validBefore: BigInt(ask.validBefore),
        nonce: ask.nonce,
      },
    });
    const posted = await checkout().post(`/p/${res.body.id}/hold`, {
      attempt_id: attempt.id,
      from: holder.address,
      signature,
    });
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    await k.settleQueue();
    assert.equal((await payment(res.body.id)).status, 'authorized');
    return { id: res.body.id, amount };
  }

  /** The escrow's state of a payment's hold. */
  async function escrowState(paymentId: string) {
    const hold = await k.t.kasse.db
      .selectFrom('holds')
      .select('reference')
      .where('payment_id', '=', paymentId)
      .executeTakeFirstOrThrow();
    const [, capturable, refundable] = await k.chain.client.readContract({
      address: AUTH_CAPTURE_V1_1.escrow,
      abi: authCaptureEscrowAbi,
      functionName: 'paymentState',
      args: [hold.reference as Hex],
    });
    return { capturable, refundable };
  }

  /** The hold of `paymentId` recorded as reclaimed by its payer: released so, one payment.cancelled, no credit. */
  async function recordedAsReclaimed(paymentId: string): Promise<void> {
    const row = await k.t.kasse.db
      .selectFrom('holds')
      .select(['status', 'released_by'])
      .where('payment_id', '=', paymentId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { status: 'released', released_by: 'reclaimed' });
    assert.deepEqual(k.eventTypes(paymentId), ['payment.authorized', 'payment.cancelled']);
    assert.equal(await credits(paymentId), 0);
  }

  test('a workers process killed (SIGKILL) between submitting a capture and a void and their confirmation, started again, captures and voids exactly once', async () => {
    // The workers processes read the real clock: Kasse's fake one is set to it, so what is due for one is due for them
    // (the chain's time runs a little ahead after the blocks mined so far, well within a hold's windows).
    k.t.clock.set(Date.now());
    const captured = await heldPayment(1200);
    const voided = await heldPayment(700);
    const [payer0, hot0, store0, balance0, nonce0] = [
      await usdcOf(holder.address),
      await usdcOf(sender.address),
      await usdcOf(store),
      await available(),
      await hotNonce(),
    ];
    assert.equal(store0, captured.amount + voided.amount, 'both holds sit in escrow');
    assert.equal((await k.m.test.post(`/payments/${captured.id}/capture`, { amount_usd_cents: 1200 })).status, 200);
    assert.equal((await k.m.test.post(`/payments/${voided.id}/void`)).status, 200);
    const ops = await k.t.kasse.db
      .selectFrom('hold_operations')
      .select(['id', 'kind'])
      .where('payment_id', 'in', [captured.id, voided.id])
      .execute();
    assert.deepEqual(ops.map((o) => o.kind).sort(), ['capture', 'void']);
    const transfers = () =>
      k.t.kasse.db
        .selectFrom('evm_transfers')
        .select(['id', 'status', 'tx_hash'])
        .where(
          'id',
          'in',
          ops.map((o) => o.id),
        )
        .orderBy('id')
        .execute();

    await k.chain.setAutomine(false);
    const start = workersProcesses(k, 'holds');
    let child: WorkersProcess | null = start();
    try {
      // Killed once both are submitted (broadcast, not mined: automine is off).
      await eventually(
        'the workers process to submit the capture and the void',
        async () => (await transfers()).every((t) => t.status === 'broadcast'),
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      await child.kill();
      child = null;
      const submitted = await transfers();
      assert.equal(
        (await payment(captured.id)).authorization.pending_usd_cents,
        1200,
        'nothing settled before the kill',
      );
      assert.equal((await payment(voided.id)).status, 'authorized');
      assert.equal(await available(), balance0);
      await k.chain.mine(3);
      child = start();
      await eventually(
        'the restarted workers process to settle both and send their webhooks (45 s)',
        async () =>
          (await transfers()).every((t) => t.status === 'sent') &&
          k.eventTypes(captured.id).includes('payment.captured') &&
          k.eventTypes(voided.id).includes('payment.cancelled'),
        { timeoutMs: 45_000, intervalMs: 100 },
      );
      await child.kill('SIGTERM');
      child = null;
      assert.deepEqual(
        (await transfers()).map((t) => t.tx_hash),
        submitted.map((t) => t.tx_hash),
        'what was submitted before the kill is what settled',
      );
    } finally {
      await child?.kill();
      await k.chain.setAutomine(true);
    }
    await k.t.kasse.webhooks.drain();

    assert.equal(await hotNonce(), nonce0 + 2, 'one capture and one void left the hot wallet');
    assert.equal(await usdcOf(sender.address), hot0 + captured.amount, 'captured once, to the hot wallet');
    assert.equal(await usdcOf(holder.address), payer0 + voided.amount, 'voided once, back to the payer');
    assert.equal(await usdcOf(store), store0 - captured.amount - voided.amount);
    assert.deepEqual(await escrowState(captured.id), { capturable: 0n, refundable: captured.amount });
    assert.deepEqual(await escrowState(voided.id), { capturable: 0n, refundable: 0n });

    const paid = await payment(captured.id);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.authorization.captured_usd_cents, 1200);
    assert.equal(paid.authorization.pending_usd_cents, 0);
    assert.equal(paid.authorization.captures.length, 1);
    const cancelled = await payment(voided.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.authorization.voided, true);
    // One credit: 1,200 cents less the 1 % fee.
    assert.equal(await credits(captured.id), 1);
    assert.equal(await credits(voided.id), 0);
    assert.equal(await available(), balance0 + 1188);
    assert.deepEqual(k.eventTypes(captured.id), ['payment.authorized', 'payment.paid', 'payment.captured']);
    assert.deepEqual(k.eventTypes(voided.id), ['payment.authorized', 'payment.cancelled']);
    assert.equal(k.receiver!.rejected.length, 0);
  });

  test('a hold not captured while Kasse was down, reclaimed by the payer on chain after capture_before, is recorded by the deadline pass: cancelled, nothing credited', async () => {
    await alignClockWithChain();
    const p = await heldPayment(900);
    const [payer0, store0, balance0, nonce0] = [
      await usdcOf(holder.address),
      await usdcOf(store),
      await available(),
      await hotNonce(),
    ];
    const hold = await k.t.kasse.db
      .selectFrom('holds')
      .select(['terms', 'capture_before'])
      .where('payment_id', '=', p.id)
      .executeTakeFirstOrThrow();
    const info = paymentInfoOf(hold.terms);
    assert.equal(info.authorizationExpiry * 1000, hold.capture_before.getTime());

    // Kasse is down: the chain's time passes capture_before and no pass of Kasse runs. The payer takes the hold back.
    await k.chain.rpc('evm_increaseTime', [info.authorizationExpiry - (await k.chain.now())]);
    await k.chain.mine(1);
    await k.chain.write(holder, AUTH_CAPTURE_V1_1.escrow, authCaptureEscrowAbi, 'reclaim', [info]);
    assert.equal(await usdcOf(store), store0 - p.amount);

    // Kasse is back: its deadline pass finds the escrow empty and records the reclaim, sending nothing.
    await alignClockWithChain();
    assert.equal(await k.t.kasse.capture.runDue(), 1);
    assert.equal(await k.t.kasse.capture.runDue(), 0, 'recorded once');
    await k.t.kasse.webhooks.drain();
    const cancelled = await payment(p.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.authorization.voided, true);
    assert.equal(cancelled.authorization.captured_usd_cents, 0);
    await recordedAsReclaimed(p.id);
    assert.equal(await available(), balance0, 'nothing credited');
    assert.equal(await hotNonce(), nonce0, 'Kasse sent nothing');
    assert.equal(await usdcOf(holder.address), payer0 + p.amount, 'the payer has the hold back');
    const ops = await k.t.kasse.db.selectFrom('hold_operations').select('id').where('payment_id', '=', p.id).execute();
    assert.deepEqual(ops, [], 'no void was asked for');
  });

  test('a deadline void racing the payer’s reclaim fails on chain, and the due pass it wakes records the reclaim at once: cancelled once, nothing credited', async () => {
    await alignClockWithChain();
    const p = await heldPayment(800);
    const payer0 = await usdcOf(holder.address);
    const balance0 = await available();
    const hold = await k.t.kasse.db
      .selectFrom('holds')
      .select('terms')
      .where('payment_id', '=', p.id)
      .executeTakeFirstOrThrow();
    const info = paymentInfoOf(hold.terms);
    await k.chain.rpc('evm_increaseTime', [info.authorizationExpiry - (await k.chain.now())]);
    await k.chain.mine(1);
    await alignClockWithChain();

    // The deadline pass finds the hold still in escrow and asks for its void; the payer reclaims before it is sent.
    assert.equal(await k.t.kasse.capture.runDue(), 1);
    await k.chain.write(holder, AUTH_CAPTURE_V1_1.escrow, authCaptureEscrowAbi, 'reclaim', [info]);
    const nonce0 = await hotNonce();
    // The workers' due loop, woken by the capture module (between its rounds it runs every 5 s).
    const passes: Promise<number>[] = [];
    const off = k.t.kasse.capture.onWork(() => void passes.push(k.t.kasse.capture.runDue()));
    try {
      await k.settleQueue();
    } finally {
      off();
    }
    const [voidOp] = await k.t.kasse.db
      .selectFrom('hold_operations')
      .select(['kind', 'reason', 'status', 'error'])
      .where('payment_id', '=', p.id)
      .execute();
    assert.equal(voidOp!.kind, 'void');
    assert.equal(voidOp!.reason, 'deadline');
    assert.equal(voidOp!.status, 'failed');
    assert.match(voidOp!.error!, /revert/);
    assert.equal(await hotNonce(), nonce0, 'the refused void took no transaction');
    assert.equal(passes.length, 1, 'the failed void woke the due pass once');
    assert.equal(await passes[0], 1);
    assert.equal(await k.t.kasse.capture.runDue(), 0, 'recorded once');
    await k.t.kasse.webhooks.drain();
    assert.equal((await payment(p.id)).status, 'cancelled');
    await recordedAsReclaimed(p.id);
    assert.equal(await available(), balance0);
    assert.equal(await usdcOf(holder.address), payer0 + p.amount, 'the payer has the hold back, once');
  });
});

test('every month of every merchant’s statement reconciles with its payments and refunds', async () => {
  assert.ok((await assertEveryMerchantReconciles(k.t.kasse)) > 0);
});
