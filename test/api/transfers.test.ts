/**
 * The transfers module: refunds go out as transfers recorded in the refund's own transaction and settled through
 * the one sink senders report to, which calls the module that asked back in the same transaction; another module
 * (here a test owner of rebates) plugs in by purpose without any chain code; reports are idempotent and mode-scoped,
 * an owner that fails leaves the transfer pending for the next report, and live networks without a sender keep
 * their transfers pending.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { newId } from '../../src/core/ids.ts';
import type { Mode } from '../../src/core/mode.ts';
import { withTx } from '../../src/db/index.ts';
import type { SettledTransfer } from '../../src/modules/transfers/service.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';

let t: TestKasse;
let m: TestMerchant;

before(async () => {
  t = await startTestKasse();
  m = await t.merchant({ rateLimit: 100_000 });
});
after(() => t.close());

const DESTINATION = '0x000000000000000000000000000000000000bEEF';

async function transfer(id: string) {
  return t.kasse.db.selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A transfer of 5 USDC on base asked for by `purpose`, in its own transaction. */
async function request(purpose: string, mode: Mode = 'test') {
  const id = newId('po');
  const token = t.kasse.chains.token(mode, 'base:usdc')!;
  const delivery = await withTx(t.kasse.db, (tx) =>
    t.kasse.transfers.request(tx, {
      transferId: id,
      mode,
      purpose,
      token,
      destination: DESTINATION,
      amount: 5_000_000n,
    }),
  );
  return { id, delivery };
}

describe('refunds as transfers', () => {
  test('a refund is a transfer recorded with it; the simulated sender settles it and the refund and payment follow', async () => {
    const p = (
      await m.test.post('/payments', {
        price_amount: 1000,
        price_currency: 'USD',
        order_id: 'tr-1',
        token: 'base:usdc',
      })
    ).body;
    await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
    const refund = (await m.test.post(`/payments/${p.id}/refund`, { destination: DESTINATION })).body;
    const pending = (await transfer(refund.id))!;
    assert.equal(pending.purpose, 'refund');
    assert.equal(pending.status, 'pending');
    assert.equal(pending.simulated, true);
    assert.equal(pending.chain, 'base');
    assert.equal(pending.token, 'base:usdc');
    assert.equal(pending.amount, '10000000');
    assert.equal(pending.destination, DESTINATION);

    assert.equal(await t.kasse.refunds.settleSimulated(), 1);
    const sent = (await transfer(refund.id))!;
    assert.equal(sent.status, 'sent');
    assert.match(sent.tx_hash!, /^0xsim[0-9a-f]{61}$/);
    const row = await t.kasse.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', refund.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'sent');
    assert.equal(row.tx_hash, sent.tx_hash);
    assert.equal((await m.test.get(`/payments/${p.id}`)).body.status, 'refunded');
  });
});

describe('owners by purpose', () => {
  const calls: SettledTransfer[] = [];
  let failNext = false;
  before(() => {
    t.kasse.transfers.own('rebate', {
      async transfersSettled(tx, [settled]) {
        if (failNext) {
          failNext = false;
          throw new Error('the owner could not record it');
        }
        // Inside the settling transaction: the transfer already shows as settled.
        const row = await tx
          .selectFrom('transfers')
          .select('status')
          .where('id', '=', settled.id)
          .executeTakeFirstOrThrow();
        assert.equal(row.status, settled.status);
        calls.push(settled);
      },
    });
  });

  test('a module plugs in by purpose: called back once per transfer, with how it ended', async () => {
    const { id, delivery } = await request('rebate');
    assert.equal(delivery, 'simulated');
    assert.equal(await t.kasse.transfers.settleSimulated('rebate'), 1);
    assert.deepEqual(
      calls.filter((c) => c.id === id),
      [
        {
          id,
          mode: 'test',
          purpose: 'rebate',
          status: 'sent',
          txHash: (await transfer(id))!.tx_hash,
          error: null,
          blockNumber: null,
        },
      ],
    );
    await t.kasse.transfers.transferSettled('test', {
      transferId: id,
      status: 'failed',
      txHash: null,
      error: 'late report',
    });
    assert.equal((await transfer(id))!.status, 'sent', 'a settled transfer stays as it settled');
    assert.equal(calls.filter((c) => c.id === id).length, 1);
  });

  test('an owner that fails leaves the transfer pending; the next report settles it', async () => {
    const { id } = await request('rebate');
    failNext = true;
    await assert.rejects(
      t.kasse.transfers.transferSettled('test', { transferId: id, status: 'sent', txHash: '0xabc', error: null }),
      /could not record/,
    );
    assert.equal((await transfer(id))!.status, 'pending');
    await t.kasse.transfers.transferSettled('test', { transferId: id, status: 'sent', txHash: '0xabc', error: null });
    assert.equal((await transfer(id))!.status, 'sent');
    assert.equal((await transfer(id))!.tx_hash, '0xabc');
  });

  test('reports are mode-scoped and unknown transfers change nothing', async () => {
    const { id } = await request('rebate');
    await t.kasse.transfers.transferSettled('live', { transferId: id, status: 'sent', txHash: '0xdef', error: null });
    assert.equal((await transfer(id))!.status, 'pending');
    await t.kasse.transfers.transferSettled('test', {
      transferId: 'po_NOSUCHTRANSFER00000000000',
      status: 'sent',
      txHash: '0xdef',
      error: null,
    });
    assert.equal(await transfer('po_NOSUCHTRANSFER00000000000'), undefined);
  });

  test('a live network without a sender keeps its transfers pending; nothing simulates them', async () => {
    const { id, delivery } = await request('rebate', 'live');
    assert.equal(delivery, 'waiting_for_sender');
    const row = (await transfer(id))!;
    assert.equal(row.simulated, false);
    await t.kasse.transfers.settleSimulated('rebate');
    assert.equal((await transfer(id))!.status, 'pending');
  });

  test('a purpose nobody owns is refused, and records nothing', async () => {
    const count = async () => (await t.kasse.db.selectFrom('transfers').select('id').execute()).length;
    const before = await count();
    await assert.rejects(request('bonus'), /no owner for transfers of purpose "bonus"/);
    assert.equal(await count(), before);
    assert.throws(() => t.kasse.transfers.own('rebate', { transfersSettled: async () => {} }), /already have an owner/);
  });
});
