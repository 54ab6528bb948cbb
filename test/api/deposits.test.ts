/**
 * Deposits as chain watchers report them (the payments module's DepositSink), time-based rules driven by the fake
 * clock and the due-work pass, and refunds through a chain sender (TransferSink).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HOUR, MINUTE } from '../../src/core/clock.ts';
import type { ChainAdapter } from '../../src/chains/plugin.ts';
import type { DepositObservation, TransferRequest } from '../../src/chains/ports.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { recordedLog } from '../harness/log.ts';
import { assertEveryMerchantReconciles } from '../harness/statements.ts';

let t: TestKasse;
let m: TestMerchant;
let txSeq = 0;
const { log, lines: logLines } = recordedLog();

before(async () => {
  t = await startTestKasse({ log });
  m = await t.merchant({ rateLimit: 100_000 });
});
after(() => t.close());

async function create(body: Record<string, unknown> = {}) {
  const res = await m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: 'dep',
    token: 'base:usdc',
    ...body,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

function obs(
  attempt: { chain: string; address: string; token: string },
  amount: bigint,
  block: bigint,
  extra: Partial<DepositObservation> = {},
): DepositObservation {
  return {
    chain: attempt.chain,
    address: attempt.address.toLowerCase(),
    token: attempt.token,
    txHash: `0x${(++txSeq).toString(16).padStart(64, '0')}`,
    index: 0,
    amount,
    from: '0x1111111111111111111111111111111111111111',
    blockNumber: block,
    blockHash: `0x${block.toString(16).padStart(64, 'b')}`,
    ...extra,
  };
}

async function get(id: string) {
  return (await m.test.get(`/payments/${id}`)).body;
}

async function eventTypes(paymentId: string): Promise<string[]> {
  const rows = await t.kasse.db
    .selectFrom('events')
    .select('type')
    .where('ordering_key', '=', paymentId)
    .orderBy('seq')
    .execute();
  return rows.map((e) => e.type);
}

async function available(): Promise<number> {
  return (await m.test.get('/balance')).body.available_usd_cents;
}

const sink = () => t.kasse.payments.deposits;

describe('DepositSink', () => {
  test('watchedAddresses finds issued addresses in any case and returns them canonical', async () => {
    const p = await create();
    const a = p.attempts[0];
    const found = await sink().watchedAddresses('test', 'base', [
      a.address.toLowerCase(),
      '0x2222222222222222222222222222222222222222',
    ]);
    assert.deepEqual([...found], [[a.address.toLowerCase(), a.address]]);
    assert.equal((await sink().watchedAddresses('live', 'base', [a.address])).size, 0);
    assert.equal((await sink().watchedAddresses('test', 'ethereum', [a.address])).size, 0);
  });

  test('detected → confirming → paid as confirmations grow, then final; recording twice changes nothing', async () => {
    const before = await available();
    const p = await create();
    const a = p.attempts[0];
    const o = obs(a, 10_000_000n, 100n);
    await sink().recordDeposits('test', [o]);
    let now = await get(p.id);
    assert.equal(now.status, 'detected');
    assert.deepEqual(now.attempts[0].deposits[0], {
      tx_hash: o.txHash,
      token: 'base:usdc',
      amount: '10000000',
      amount_display: '10',
      from: o.from,
      block_number: '100',
      status: 'pending',
      confirmations: 0,
      explorer_url: `https://sepolia.basescan.org/tx/${o.txHash}`,
    });
    await sink().headAdvanced('test', 'base', 100n);
    assert.equal((await get(p.id)).status, 'confirming');
    await sink().headAdvanced('test', 'base', 103n);
    now = await get(p.id);
    assert.equal(now.status, 'confirming');
    assert.equal(now.attempts[0].deposits[0].confirmations, 4);
    await sink().headAdvanced('test', 'base', 104n);
    now = await get(p.id);
    assert.equal(now.status, 'paid');
    assert.equal(now.attempts[0].deposits[0].status, 'confirmed');
    assert.deepEqual(await eventTypes(p.id), ['payment.detected', 'payment.confirming', 'payment.paid']);
    assert.equal((await available()) - before, 990);
    await sink().headAdvanced('test', 'base', 399n);
    assert.equal((await get(p.id)).attempts[0].deposits[0].status, 'final');
    await sink().recordDeposits('test', [o]);
    await sink().headAdvanced('test', 'base', 500n);
    assert.equal((await get(p.id)).attempts[0].deposits.length, 1);
    assert.deepEqual(await eventTypes(p.id), ['payment.detected', 'payment.confirming', 'payment.paid']);
    assert.equal((await available()) - before, 990);
  });

  test('a reorg reverses the credit and sends payment.reorged; paid again credits again, once', async () => {
    const before = await available();
    const p = await create();
    const o = obs(p.attempts[0], 10_000_000n, 1000n);
    await sink().recordDeposits('test', [o]);
    await sink().headAdvanced('test', 'base', 1010n);
    assert.equal((await get(p.id)).status, 'paid');
    assert.equal((await available()) - before, 990);

    await sink().blocksRemoved('test', 'base', 1000n);
    let now = await get(p.id);
    assert.equal(now.status, 'waiting');
    assert.equal(now.paid_at, null);
    assert.equal(now.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(now.attempts[0].received_amount, '0');
    assert.equal(await available(), before);

    await sink().recordDeposits('test', [{ ...o, blockNumber: 1002n, blockHash: '0xfeed' }]);
    await sink().headAdvanced('test', 'base', 1012n);
    now = await get(p.id);
    assert.equal(now.status, 'paid');
    assert.equal(now.attempts[0].deposits[0].block_number, '1002');
    assert.deepEqual(await eventTypes(p.id), [
      'payment.detected',
      'payment.paid',
      'payment.reorged',
      'payment.detected',
      'payment.paid',
    ]);
    assert.equal((await available()) - before, 990);
    const kinds = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select('kind')
      .where('payment_id', '=', p.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      kinds.map((k) => k.kind),
      ['payment_credit', 'payment_reorg', 'payment_credit'],
    );
  });

  test('short money is underpaid; the rest within the hold pays it; more than asked is overpaid', async () => {
    const p = await create();
    const a = p.attempts[0];
    await sink().recordDeposits('test', [obs(a, 4_000_000n, 2000n)]);
    await sink().headAdvanced('test', 'base', 2010n);
    assert.equal((await get(p.id)).status, 'underpaid');
    await sink().recordDeposits('test', [obs(a, 7_000_000n, 2011n)]);
    await sink().headAdvanced('test', 'base', 2020n);
    const now = await get(p.id);
    assert.equal(now.status, 'paid');
    assert.equal(now.attempts[0].overpaid, true);
    assert.equal(now.attempts[0].received_amount, '11000000');
    assert.deepEqual(await eventTypes(p.id), [
      'payment.detected',
      'payment.underpaid',
      'payment.paid',
      'payment.overpaid',
    ]);
  });

  test('the rest after the 10-minute hold is late, auto-accepted on the next pass when the price held', async () => {
    const p = await create();
    const a = p.attempts[0];
    await sink().recordDeposits('test', [obs(a, 5_000_000n, 3000n)]);
    await sink().headAdvanced('test', 'base', 3010n);
    t.clock.advance(11 * MINUTE);
    await sink().recordDeposits('test', [obs(a, 5_000_000n, 3011n)]);
    await sink().headAdvanced('test', 'base', 3020n);
    assert.equal((await get(p.id)).status, 'late');
    await t.kasse.payments.runDue();
    assert.equal((await get(p.id)).status, 'paid');
    assert.deepEqual(await eventTypes(p.id), ['payment.detected', 'payment.underpaid', 'payment.late', 'payment.paid']);
  });

  test('a crash between recounting confirmations and the state machine is finished by the next pass', async () => {
    const p = await create();
    await sink().recordDeposits('test', [obs(p.attempts[0], 10_000_000n, 5000n)]);
    // What headAdvanced's one statement leaves behind if the process dies right after it commits:
    await t.kasse.db
      .updateTable('deposits')
      .set({ confirmations: 20, status: 'confirmed' })
      .where('payment_id', '=', p.id)
      .execute();
    await t.kasse.db.updateTable('payments').set({ deposits_dirty: true }).where('id', '=', p.id).execute();
    assert.equal((await get(p.id)).status, 'detected');
    await t.kasse.payments.runDue();
    assert.equal((await get(p.id)).status, 'paid');
    const row = await t.kasse.db
      .selectFrom('payments')
      .select('deposits_dirty')
      .where('id', '=', p.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.deposits_dirty, false);
  });

  test('a watcher catching up after downtime judges the hold by block time: mined in time is paid, not late', async () => {
    const p = await create();
    const a = p.attempts[0];
    const minedAt = new Date(t.clock.now().getTime() + 5 * MINUTE);
    t.clock.advance(40 * MINUTE); // the watcher was down; it sees the block only now
    await sink().recordDeposits('test', [obs(a, 10_000_000n, 4000n, { blockTime: minedAt })]);
    await sink().headAdvanced('test', 'base', 4010n);
    assert.equal((await get(p.id)).status, 'paid');
    // the same money without a block time counts from when it was seen: late
    const q = await create();
    t.clock.advance(40 * MINUTE);
    await sink().recordDeposits('test', [obs(q.attempts[0], 10_000_000n, 4020n)]);
    await sink().headAdvanced('test', 'base', 4030n);
    assert.equal((await get(q.id)).status, 'late');
  });

  test('another coin worth at least its minimum is a wrong asset; less is ignored', async () => {
    const p = await create();
    const a = p.attempts[0];
    await sink().recordDeposits('test', [obs({ ...a, token: 'base:eth' }, 100n, 4000n)]);
    assert.equal((await get(p.id)).attempts[0].wrong_asset, false);
    assert.deepEqual(await eventTypes(p.id), []);
    await sink().recordDeposits('test', [obs({ ...a, token: 'base:eth' }, 400_000_000_000_000n, 4001n)]);
    const now = await get(p.id);
    assert.equal(now.attempts[0].wrong_asset, true);
    assert.equal(now.status, 'waiting');
    assert.deepEqual(await eventTypes(p.id), ['payment.wrong_asset']);
  });

  test('transfers to addresses Kasse did not issue are ignored', async () => {
    await sink().recordDeposits('test', [
      obs({ chain: 'base', address: '0x3333333333333333333333333333333333333333', token: 'base:usdc' }, 1n, 1n),
    ]);
    const n = await t.kasse.db
      .selectFrom('deposits')
      .select('id')
      .where('from_address', '=', '0x1111111111111111111111111111111111111111')
      .where('block_number', '=', 1n)
      .execute();
    assert.equal(n.length, 0);
  });
});

describe('DepositSink for chains that are not EVM: mempool sightings, commitment finality, dropped transfers', () => {
  /** A transfer on the Solana test network, not in a block yet unless `extra` gives one. */
  function sighting(
    attempt: { address: string; token: string },
    amount: bigint,
    extra: Partial<DepositObservation> = {},
  ): DepositObservation {
    return {
      chain: 'solana',
      address: attempt.address,
      token: attempt.token,
      txHash: `sig${++txSeq}`,
      index: 0,
      amount,
      from: null,
      blockNumber: null,
      blockHash: null,
      ...extra,
    };
  }

  test('a transfer seen before any block holds it is detected; reported again in its block it counts confirmations', async () => {
    const p = await create();
    const o = obs(p.attempts[0], 10_000_000n, 6000n);
    await sink().recordDeposits('test', [{ ...o, blockNumber: null, blockHash: null }]);
    let now = await get(p.id);
    assert.equal(now.status, 'detected');
    assert.equal(now.attempts[0].deposits[0].block_number, null);
    assert.equal(now.attempts[0].deposits[0].status, 'pending');
    await sink().headAdvanced('test', 'base', 6100n);
    assert.equal((await get(p.id)).attempts[0].deposits[0].confirmations, 0, 'no block, no confirmations');

    await sink().recordDeposits('test', [o]);
    await sink().headAdvanced('test', 'base', 6004n);
    now = await get(p.id);
    assert.equal(now.status, 'paid');
    assert.equal(now.attempts[0].deposits.length, 1, 'the same transfer, now in its block');
    assert.equal(now.attempts[0].deposits[0].block_number, '6000');
    assert.equal(now.attempts[0].deposits[0].confirmations, 5);
    assert.deepEqual(await eventTypes(p.id), ['payment.detected', 'payment.paid']);
  });

  test('a paid transfer seen again without a block (back in the mempool before the reorg is read) keeps its block: the reorg still reverses it', async () => {
    const before = await available();
    const p = await create();
    const o = obs(p.attempts[0], 10_000_000n, 7000n);
    await sink().recordDeposits('test', [o]);
    await sink().headAdvanced('test', 'base', 7010n);
    assert.equal((await get(p.id)).status, 'paid');

    await sink().recordDeposits('test', [{ ...o, blockNumber: null, blockHash: null }]);
    let now = await get(p.id);
    assert.equal(now.attempts[0].deposits[0].block_number, '7000', 'a sighting does not take it out of its block');
    assert.equal(now.status, 'paid');

    await sink().blocksRemoved('test', 'base', 7000n);
    now = await get(p.id);
    assert.equal(now.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(now.status, 'waiting');
    assert.equal(await available(), before, 'credit reversed');
    // Seen in the mempool once more, after the reorg: pending without a block.
    await sink().recordDeposits('test', [{ ...o, blockNumber: null, blockHash: null }]);
    now = await get(p.id);
    assert.equal(now.attempts[0].deposits[0].status, 'pending');
    assert.equal(now.attempts[0].deposits[0].block_number, null);
    assert.deepEqual(await eventTypes(p.id), [
      'payment.detected',
      'payment.paid',
      'payment.reorged',
      'payment.detected',
    ]);
  });

  test('commitment finality: the chain says how far a transfer is; paid at the confirmations asked, then final', async () => {
    const before = await available();
    const p = await create({ token: 'solana:usdc' });
    const o = sighting(p.attempts[0], 10_000_000n, { blockNumber: 900n, blockHash: 'slot900' });
    await sink().recordDeposits('test', [o]);
    assert.equal((await get(p.id)).status, 'detected');
    await sink().depositsProgressed('test', 'solana', [
      { txHash: 'sig-unknown', index: 0, confirmations: 1, final: true },
    ]);
    assert.equal((await get(p.id)).status, 'detected', 'progress of a transfer Kasse does not hold changes nothing');

    await sink().depositsProgressed('test', 'solana', [{ txHash: o.txHash, index: 0, confirmations: 1, final: false }]);
    let now = await get(p.id);
    assert.equal(now.status, 'paid');
    assert.equal(now.attempts[0].deposits[0].status, 'confirmed');
    assert.equal(now.attempts[0].deposits[0].confirmations, 1);
    await sink().depositsProgressed('test', 'solana', [{ txHash: o.txHash, index: 0, confirmations: 1, final: true }]);
    now = await get(p.id);
    assert.equal(now.attempts[0].deposits[0].status, 'final');
    assert.deepEqual(await eventTypes(p.id), ['payment.detected', 'payment.paid']);
    assert.equal((await available()) - before, 990);
  });

  test('a dropped transfer is orphaned and the payment waits again; seen again in a block, it counts', async () => {
    const p = await create({ token: 'solana:usdc' });
    const o = sighting(p.attempts[0], 10_000_000n);
    await sink().recordDeposits('test', [o]);
    assert.equal((await get(p.id)).status, 'detected');
    await sink().depositsDropped('test', 'solana', [{ txHash: o.txHash, index: 0 }]);
    let now = await get(p.id);
    assert.equal(now.status, 'waiting');
    assert.equal(now.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(now.attempts[0].received_amount, '0');

    await sink().recordDeposits('test', [{ ...o, blockNumber: 950n, blockHash: 'slot950' }]);
    await sink().depositsProgressed('test', 'solana', [{ txHash: o.txHash, index: 0, confirmations: 1, final: false }]);
    now = await get(p.id);
    assert.equal(now.status, 'paid');
    assert.equal(now.attempts[0].deposits.length, 1);
    assert.deepEqual(await eventTypes(p.id), ['payment.detected', 'payment.detected', 'payment.paid']);
  });
});

describe('time', () => {
  test('a coin hold lapses silently after 10 minutes; the payment expires after 24 hours with payment.expired', async () => {
    const p = await create();
    t.clock.advance(10 * MINUTE);
    await t.kasse.payments.runDue();
    let now = await get(p.id);
    assert.equal(now.status, 'waiting');
    assert.equal(now.attempts[0].status, 'expired');
    assert.deepEqual(await eventTypes(p.id), []);
    t.clock.advance(24 * HOUR);
    await t.kasse.payments.runDue();
    now = await get(p.id);
    assert.equal(now.status, 'expired');
    assert.deepEqual(await eventTypes(p.id), ['payment.expired']);
    await t.kasse.payments.runDue();
    assert.deepEqual(await eventTypes(p.id), ['payment.expired']);
  });

  test('money after expiry is reported late', async () => {
    const p = await create();
    t.clock.advance(25 * HOUR);
    await t.kasse.payments.runDue();
    await sink().recordDeposits('test', [obs(p.attempts[0], 10_000_000n, 5000n)]);
    await sink().headAdvanced('test', 'base', 5010n);
    assert.equal((await get(p.id)).status, 'late');
    await t.kasse.payments.runDue();
    assert.equal((await get(p.id)).status, 'late', 'money seen after the 24 hours is not auto-accepted');
    assert.deepEqual(await eventTypes(p.id), ['payment.expired', 'payment.late']);
  });
});

describe('records that contradict each other', () => {
  /** Rows that say what the payment holds and was credited: none may change when a change is stopped. */
  async function books(paymentId: string) {
    const [deposits, ledger] = await Promise.all([
      t.kasse.db.selectFrom('deposits').select(['id', 'status']).where('payment_id', '=', paymentId).execute(),
      t.kasse.db.selectFrom('ledger_transactions').select('id').where('payment_id', '=', paymentId).execute(),
    ]);
    return { deposits, ledger, payment: await get(paymentId), available: await available() };
  }
  /** The change is refused with ImpossibleState naming the payment and coin choice, and logged with the payment id. */
  async function stopped(change: Promise<unknown>, p: { id: string; attempts: Array<{ id: string }> }, what: RegExp) {
    const ids = `payment ${p.id}, attempt ${p.attempts[0]!.id}`;
    await assert.rejects(
      change,
      (e: Error) => e.name === 'ImpossibleState' && what.test(e.message) && e.message.includes(ids),
    );
    const logged = logLines.filter((l) => l.msg === 'impossible payment state' && l.paymentId === p.id);
    assert.equal(logged.length, 1, 'logged once, with the payment id');
    assert.match(logged[0].err.message, what);
    logLines.length = 0;
  }

  test('a credited payment without its paid amount: new money on it stops, nothing is held twice', async () => {
    const p = await create();
    await sink().recordDeposits('test', [obs(p.attempts[0], 10_000_000n, 6000n)]);
    await sink().headAdvanced('test', 'base', 6010n);
    const before = await books(p.id);
    assert.equal(before.payment.status, 'paid');
    await t.kasse.db.updateTable('payments').set({ paid_amount: null }).where('id', '=', p.id).execute();
    try {
      await stopped(
        sink().recordDeposits('test', [obs(p.attempts[0], 2_000_000n, 6011n)]),
        p,
        /standing credit has no paid amount/,
      );
      assert.deepEqual(await books(p.id), before);
      // Its deposit turning final marks it for the state machine, where it stops again; the other marked payments
      // go on, and its mark stays for the next pass.
      const other = await create();
      await sink().recordDeposits('test', [obs(other.attempts[0], 10_000_000n, 6020n)]);
      await sink().headAdvanced('test', 'base', 6400n);
      assert.equal((await get(other.id)).status, 'paid');
      assert.ok(
        logLines.some((l) => l.msg === 'marked payment failed; the next pass tries again' && l.paymentId === p.id),
      );
      const marked = () =>
        t.kasse.db.selectFrom('payments').select('deposits_dirty').where('id', '=', p.id).executeTakeFirstOrThrow();
      assert.equal((await marked()).deposits_dirty, true);
      await t.kasse.db.updateTable('payments').set({ paid_amount: '10000000' }).where('id', '=', p.id).execute();
      await t.kasse.payments.runDue();
      assert.equal((await marked()).deposits_dirty, false);
      assert.equal((await get(p.id)).attempts[0].deposits[0].status, 'final');
      logLines.length = 0;
    } finally {
      await t.kasse.db.updateTable('payments').set({ paid_amount: '10000000' }).where('id', '=', p.id).execute();
    }
  });

  test('a coin no longer configured: its money is neither valued nor credited, the payment stays as it was', async () => {
    const p = await create();
    const a = p.attempts[0];
    await sink().recordDeposits('test', [obs(a, 4_000_000n, 6100n)]);
    await sink().headAdvanced('test', 'base', 6110n);
    const retire = (token: string) =>
      Promise.all([
        t.kasse.db.updateTable('attempts').set({ token }).where('payment_id', '=', p.id).execute(),
        t.kasse.db.updateTable('deposits').set({ token }).where('payment_id', '=', p.id).execute(),
      ]);
    await retire('base:retired');
    try {
      const before = await books(p.id);
      assert.equal(before.payment.status, 'underpaid');
      // Held money is valued in the coin's decimals: another coin arriving revalues what is held.
      await stopped(
        sink().recordDeposits('test', [obs({ ...a, token: 'base:eth' }, 400_000_000_000_000n, 6111n)]),
        p,
        /base:retired is not configured in test mode/,
      );
      assert.deepEqual(await books(p.id), before);
      // Accepting credits the coins, as a conversion or not by the coin's kind.
      const accepted = await m.test.post(`/payments/${p.id}/accept`, {});
      assert.equal(accepted.status, 500);
      assert.equal(accepted.body.error.code, 'internal_error');
      const log = logLines.find((l) => l.msg === 'impossible payment state' && l.paymentId === p.id);
      assert.match(log?.err.message ?? '', new RegExp(`base:retired .*payment ${p.id}, attempt ${a.id}`));
      logLines.length = 0;
      assert.deepEqual(await books(p.id), before);
    } finally {
      await retire('base:usdc');
    }
  });
});

describe('refunds through a chain sender', () => {
  test('enqueued in the refund transaction; sent → refunded and reversed; failed → can be retried', async () => {
    const fallback = t.kasse.chains.adapter('test', 'arbitrum');
    const sent: TransferRequest[] = [];
    const adapter: ChainAdapter = {
      network: fallback.network,
      mode: 'test',
      deriveAddress: (i) => fallback.deriveAddress(i),
      paymentUri: (tk, addr, amt) => fallback.paymentUri(tk, addr, amt),
      isValidAddress: (addr) => fallback.isValidAddress(addr),
      explorerUrl: (h) => fallback.explorerUrl(h),
      sender: { enqueue: async (_tx, req) => void sent.push(req) },
    };
    t.kasse.chains.register(adapter);
    const before = await available();
    const p = await create({ token: 'arbitrum:usdc' });
    await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    const destination = '0x000000000000000000000000000000000000bEEF';

    const first = (await m.test.post(`/payments/${p.id}/refund`, { destination })).body;
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.transferId, first.id);
    assert.equal(sent[0]!.amount, 10_000_000n);
    assert.equal(sent[0]!.token.id, 'arbitrum:usdc');
    assert.equal(await t.kasse.refunds.settleSimulated(), 0, 'a chain sender settles it, not the simulated one');
    await t.kasse.transfers.transferSettled('test', {
      transferId: first.id,
      status: 'failed',
      txHash: null,
      error: 'insufficient gas',
    });
    assert.equal((await get(p.id)).status, 'paid');

    const second = (await m.test.post(`/payments/${p.id}/refund`, { destination })).body;
    await t.kasse.transfers.transferSettled('test', {
      transferId: second.id,
      status: 'sent',
      txHash: '0xabc',
      error: null,
    });
    await t.kasse.transfers.transferSettled('test', {
      transferId: second.id,
      status: 'sent',
      txHash: '0xabc',
      error: null,
    });
    assert.equal((await get(p.id)).status, 'refunded');
    assert.deepEqual(
      await eventTypes(p.id),
      ['payment.paid', 'refund.failed', 'payment.refunded'],
      'the failed refund is told once, the sent one once',
    );
    assert.equal(await available(), before);
  });
});

test('every month of every merchant’s statement reconciles with its payments and refunds', async () => {
  assert.ok((await assertEveryMerchantReconciles(t.kasse)) > 0);
});
