/**
 * Disbursements through the API and the service the dashboard calls: the Disbursement object with every field,
 * CreateDisbursement validation (the spec's limits, unknown properties, `param` naming the item), Idempotency-Key,
 * pricing in the payout coin, the list (newest first, cursor paging), isolation between modes and merchants,
 * cancel before release only; approval by a quorum of owners (each once, of the digest they saw), release taking
 * the total from the available balance (refused when short, refused and audited when the batch changed after
 * approval), simulated payouts in test mode, failure giving money back, the ledger and GET /balance, the owners'
 * email, and every event at a receiver that verifies signatures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Actor } from '../../src/modules/audit/service.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { createUser } from '../harness/dashboard.ts';
import { assertError } from '../harness/expect.ts';
import { countQueries } from '../harness/query-count.ts';
import { assertStatementsReconcile } from '../harness/statements.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

let t: TestKasse;
let m: TestMerchant;
let r: WebhookReceiver;
let owners: Array<{ id: string; actor: Actor }>;

before(async () => {
  t = await startTestKasse();
  r = await startWebhookReceiver({ now: () => t.clock.now() });
  m = await t.merchant({ rateLimit: 100_000, webhookUrl: r.url });
  r.setSecret(m.webhookSecret);
  owners = [];
  for (const email of ['ana@example.com', 'bo@example.com']) {
    const u = await createUser(t.kasse, m.id, email, 'owner');
    owners.push({ id: u.id, actor: { type: 'user', id: u.id, label: email, ip: '127.0.0.1' } });
  }
});
after(async () => {
  await t.close();
  await r.close();
});

const FIELDS = [
  'id',
  'merchant_id',
  'token',
  'symbol',
  'chain',
  'title',
  'status',
  'total_usd_cents',
  'item_count',
  'approvals_required',
  'approvals',
  'approval_mac',
  'released_at',
  'released_by',
  'cancelled_at',
  'created_by',
  'created_at',
  'items',
  'progress',
];

const addr = (n: number) => `0x${n.toString(16).padStart(40, '0')}`;
const items = (n: number, cents = 100) =>
  Array.from({ length: n }, (_, i) => ({ destination: addr(i + 1), usd_cents: cents, label: `payee ${i + 1}` }));

async function create(body: unknown, client = m.test, headers?: Record<string, string>) {
  const res = await client.post('/disbursements', body, headers);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** Credits the merchant's test balance with paid payments of `cents` each. */
async function fund(cents: number, count = 1, merchant = m) {
  for (let i = 0; i < count; i++) {
    const p = (
      await merchant.test.post('/payments', {
        price_amount: cents,
        price_currency: 'USD',
        order_id: `fund-${Date.now()}-${i}`,
        token: 'base:usdc',
      })
    ).body;
    assert.equal((await merchant.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' })).status, 200);
  }
}

async function available(merchant = m): Promise<number> {
  return (await merchant.test.get('/balance')).body.available_usd_cents;
}

async function approveAll(id: string, mode: 'test' | 'live' = 'test', merchantId = m.id) {
  const k = t.kasse.disbursements;
  for (const o of owners)
    await k.approve({ mode, merchantId }, id, o.id, await k.digest({ mode, merchantId }, id), o.actor);
}

async function deliver() {
  while ((await t.kasse.webhooks.delivery.runOnce()) > 0);
}

describe('POST /disbursements', () => {
  test('creates a batch with every field, priced exactly in the payout coin', async () => {
    const d = await create({
      title: 'March affiliates',
      items: [
        { destination: addr(0xabc), usd_cents: 12345, label: 'Ann' },
        { destination: addr(0xdef), usd_cents: 100 },
      ],
    });
    assert.deepEqual(Object.keys(d), FIELDS);
    assert.match(d.id, /^dsb_[0-9A-Z]{26}$/);
    assert.equal(d.merchant_id, m.id);
    assert.deepEqual([d.token, d.symbol, d.chain], ['base:usdc', 'USDC', 'base']);
    assert.equal(d.status, 'pending_approval');
    assert.equal(d.total_usd_cents, 12445);
    assert.equal(d.item_count, 2);
    assert.equal(d.approvals_required, 2, 'two owners: a quorum of two');
    assert.deepEqual(d.approvals, []);
    assert.equal(d.approval_mac, null);
    assert.deepEqual([d.released_at, d.released_by, d.cancelled_at], [null, null, null]);
    assert.match(d.created_by, /^key_/);
    assert.equal(d.created_at, t.clock.now().toISOString());
    assert.deepEqual(d.items, [
      {
        item_no: 1,
        destination: addr(0xabc),
        usd_cents: 12345,
        amount: '123450000',
        amount_display: '123.45',
        label: 'Ann',
        payout: null,
      },
      {
        item_no: 2,
        destination: addr(0xdef),
        usd_cents: 100,
        amount: '1000000',
        amount_display: '1',
        label: null,
        payout: null,
      },
    ]);
    assert.deepEqual(d.progress, { sent: 0, failed: 0, open: 2 });
    assert.deepEqual((await m.test.get(`/disbursements/${d.id}`)).body, d);
  });

  test("the spec's limits, each refusal naming the field or the item, and nothing is created", async () => {
    const before = (await m.test.get('/disbursements?limit=100')).body.data.length;
    const cases: Array<[unknown, string | null]> = [
      [{ title: '', items: items(1) }, 'title'],
      [{ title: 'x'.repeat(121), items: items(1) }, 'title'],
      [{ items: items(1) }, 'title'],
      [{ title: 'T' }, 'items'],
      [{ title: 'T', items: [] }, 'items'],
      [{ title: 'T', items: items(501) }, 'items'],
      [{ title: 'T', items: [...items(17), { destination: '0x123', usd_cents: 100 }] }, 'items.17.destination'],
      [
        { title: 'T', items: [...items(3), { destination: `${addr(1).slice(0, 41)}g`, usd_cents: 100 }] },
        'items.3.destination',
      ],
      [{ title: 'T', items: [{ usd_cents: 100 }] }, 'items.0.destination'],
      [{ title: 'T', items: [...items(4), { destination: addr(5), usd_cents: 99 }] }, 'items.4.usd_cents'],
      [{ title: 'T', items: [{ destination: addr(5), usd_cents: 500001 }] }, 'items.0.usd_cents'],
      [{ title: 'T', items: [{ destination: addr(5), usd_cents: 100.5 }] }, 'items.0.usd_cents'],
      [{ title: 'T', items: [{ destination: addr(5), usd_cents: '100' }] }, 'items.0.usd_cents'],
      [{ title: 'T', items: [{ destination: addr(5) }] }, 'items.0.usd_cents'],
      [{ title: 'T', items: [{ destination: addr(5), usd_cents: 100, label: 'x'.repeat(121) }] }, 'items.0.label'],
      [{ title: 'T', items: [{ destination: addr(5), usd_cents: 100, memo: 'no' }] }, 'items.0.memo'],
      [{ title: 'T', items: items(1), currency: 'USD' }, 'currency'],
    ];
    for (const [body, param] of cases)
      assertError(await m.test.post('/disbursements', body), 400, 'invalid_request', param);
    assert.equal((await m.test.get('/disbursements?limit=100')).body.data.length, before);
  });

  test('500 items and labels of 120 characters are accepted', async () => {
    const d = await create({
      title: 'x'.repeat(120),
      items: items(500, 500000).map((i) => ({ ...i, label: 'l'.repeat(120) })),
    });
    assert.equal(d.item_count, 500);
    assert.equal(d.total_usd_cents, 500 * 500000);
    assert.equal(d.items[499].item_no, 500);
    assert.equal(d.items[499].amount, '5000000000');
  });

  test('Idempotency-Key: the same body replays the first batch (200), another body is a conflict', async () => {
    const body = { title: 'Once', items: items(2) };
    const first = await create(body, m.test, { 'Idempotency-Key': 'dsb-once' });
    const again = await m.test.post('/disbursements', body, { 'Idempotency-Key': 'dsb-once' });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first);
    assertError(
      await m.test.post('/disbursements', { ...body, title: 'Twice' }, { 'Idempotency-Key': 'dsb-once' }),
      409,
      'idempotency_conflict',
      'Idempotency-Key',
    );
    const rows = await t.kasse.db.selectFrom('disbursements').select('id').where('title', '=', 'Once').execute();
    assert.equal(rows.length, 1);
  });

  test('the owners get an email asking for their approval, with a link to the batch', async () => {
    const d = await create({ title: 'Mail <me>', items: items(3) });
    const mails = await t.kasse.db
      .selectFrom('email_outbox')
      .selectAll()
      .where('kind', '=', 'disbursement.approval')
      .where('text_body', 'like', `%${d.id}%`)
      .orderBy('to_address')
      .execute();
    assert.deepEqual(
      mails.map((x) => x.to_address),
      ['ana@example.com', 'bo@example.com'],
    );
    assert.match(mails[0]!.text_body!, new RegExp(`/dashboard/test/disbursements/${d.id}`));
    assert.match(mails[0]!.text_body!, /\$3\.00/);
    assert.ok(!mails[0]!.html_body!.includes('Mail <me>'), 'the title is escaped in HTML');
  });
});

describe('GET /disbursements', () => {
  test('newest first with cursor paging and a status filter; other modes and merchants see nothing', async () => {
    const other = await t.merchant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      t.clock.advance(1000);
      ids.push((await create({ title: `Page ${i}`, items: items(1) }, other.test)).id);
    }
    const first = (await other.test.get('/disbursements?limit=2')).body;
    assert.deepEqual(
      first.data.map((d: any) => d.id),
      [ids[4], ids[3]],
    );
    const second = (await other.test.get(`/disbursements?limit=2&cursor=${first.next_cursor}`)).body;
    assert.deepEqual(
      second.data.map((d: any) => d.id),
      [ids[2], ids[1]],
    );
    const third = (await other.test.get(`/disbursements?limit=2&cursor=${second.next_cursor}`)).body;
    assert.deepEqual(
      third.data.map((d: any) => d.id),
      [ids[0]],
    );
    assert.equal(third.next_cursor, null);
    assert.equal((await other.test.get('/disbursements?status=cancelled')).body.data.length, 0);
    assertError(await other.test.get('/disbursements?cursor=nope'), 400, 'invalid_request', 'cursor');
    assertError(await other.test.get('/disbursements?status=done'), 400, 'invalid_request', 'status');

    assert.equal((await other.live.get('/disbursements')).body.data.length, 0);
    assertError(await other.live.get(`/disbursements/${ids[0]}`), 404, 'not_found', null);
    assertError(await m.test.get(`/disbursements/${ids[0]}`), 404, 'not_found', null);
    assertError(await m.test.post(`/disbursements/${ids[0]}/cancel`), 404, 'not_found', null);
    assertError(await m.test.get('/disbursements/dsb_nope'), 400, 'invalid_request', 'id');
  });

  test('there is no API route to approve or release', async () => {
    const d = await create({ title: 'No shortcut', items: items(1) });
    for (const path of ['approve', 'release'])
      assert.equal((await m.test.post(`/disbursements/${d.id}/${path}`, {})).status, 404);
  });
});

describe('approval, release and payouts', () => {
  test('a quorum of two owners approves, each once; the batch is sealed with the approval MAC', async () => {
    const d = await create({ title: 'Quorum', items: items(2) });
    const k = t.kasse.disbursements;
    const digest = await k.digest({ mode: 'test', merchantId: m.id }, d.id);
    const one = await k.approve({ mode: 'test', merchantId: m.id }, d.id, owners[0]!.id, digest, owners[0]!.actor);
    assert.equal(one.status, 'pending_approval');
    assert.deepEqual(
      one.approvals.map((a) => a.user_id),
      [owners[0]!.id],
    );
    await assert.rejects(
      k.approve({ mode: 'test', merchantId: m.id }, d.id, owners[0]!.id, digest, owners[0]!.actor),
      /already approved/,
    );
    const member = await createUser(t.kasse, m.id, 'member@example.com', 'member');
    await assert.rejects(
      k.approve({ mode: 'test', merchantId: m.id }, d.id, member.id, digest, { type: 'user', id: member.id, ip: null }),
      /Only an owner/,
    );
    const stranger = await createUser(t.kasse, (await t.merchant()).id, 'stranger@example.com', 'owner');
    await assert.rejects(
      k.approve({ mode: 'test', merchantId: m.id }, d.id, stranger.id, digest, {
        type: 'user',
        id: stranger.id,
        ip: null,
      }),
      /Only an owner/,
    );
    await assert.rejects(
      k.approve({ mode: 'test', merchantId: m.id }, d.id, owners[1]!.id, '0'.repeat(64), owners[1]!.actor),
      /changed since you opened it/,
    );
    t.clock.advance(60_000);
    const two = await k.approve({ mode: 'test', merchantId: m.id }, d.id, owners[1]!.id, digest, owners[1]!.actor);
    assert.equal(two.status, 'approved');
    assert.match(two.approval_mac!, /^[0-9a-f]{64}$/);
    assert.deepEqual(two.approvals, [
      { user_id: owners[0]!.id, approved_at: one.approvals[0]!.approved_at },
      { user_id: owners[1]!.id, approved_at: t.clock.now().toISOString() },
    ]);
    await assert.rejects(
      k.approve({ mode: 'test', merchantId: m.id }, d.id, owners[1]!.id, digest, owners[1]!.actor),
      /takes no more approvals/,
    );
  });

  test('release needs the total in the available balance, and changes nothing when short', async () => {
    const merchant = await t.merchant();
    const o = await createUser(t.kasse, merchant.id, 'solo@example.com', 'owner');
    const actor: Actor = { type: 'user', id: o.id, label: 'solo', ip: null };
    await fund(10_000, 1, merchant);
    const have = await available(merchant);
    const d = await create(
      { title: 'Too much', items: [{ destination: addr(7), usd_cents: have + 1 }] },
      merchant.test,
    );
    assert.equal(d.approvals_required, 1, 'one owner: a quorum of one');
    const k = t.kasse.disbursements;
    await k.approve(
      { mode: 'test', merchantId: merchant.id },
      d.id,
      o.id,
      await k.digest({ mode: 'test', merchantId: merchant.id }, d.id),
      actor,
    );
    await assert.rejects(
      k.release({ mode: 'test', merchantId: merchant.id }, d.id, o.id, actor),
      (err: any) => err.code === 'insufficient_balance' && err.status === 422,
    );
    const after = (await merchant.test.get(`/disbursements/${d.id}`)).body;
    assert.equal(after.status, 'approved');
    assert.ok(after.items.every((i: any) => i.payout === null));
    assert.equal(await available(merchant), have);
  });

  test('a batch changed in the database after approval is refused at release, and the refusal is audited', async () => {
    await fund(100_000);
    const d = await create({ title: 'Tamper', items: items(3, 1000) });
    await approveAll(d.id);
    const have = await available();
    await t.kasse.db
      .updateTable('disbursement_items')
      .set({ destination: addr(0x666) })
      .where('disbursement_id', '=', d.id)
      .where('item_no', '=', 2)
      .execute();
    await assert.rejects(
      t.kasse.disbursements.release({ mode: 'test', merchantId: m.id }, d.id, owners[0]!.id, owners[0]!.actor),
      (err: any) => err.code === 'invalid_state' && /changed after it was approved/.test(err.message),
    );
    const audit = await t.kasse.db
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'disbursement.release_refused')
      .where('target_id', '=', d.id)
      .execute();
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.actor_id, owners[0]!.id);
    assert.equal((await m.test.get(`/disbursements/${d.id}`)).body.status, 'approved');
    assert.equal(await available(), have);
    // An amount changed (even by a unit) is refused the same way.
    const e = await create({ title: 'Tamper amount', items: items(2, 1000) });
    await approveAll(e.id);
    await t.kasse.db
      .updateTable('disbursement_items')
      .set({ amount: '10000001' })
      .where('disbursement_id', '=', e.id)
      .where('item_no', '=', 1)
      .execute();
    await assert.rejects(
      t.kasse.disbursements.release({ mode: 'test', merchantId: m.id }, e.id, owners[1]!.id, owners[1]!.actor),
      /changed after it was approved/,
    );
  });

  test('through every status: released takes the total, simulated payouts are sent, a failed one gives its amount back; every event arrives signed', async () => {
    await fund(100_000);
    const d = await create({ title: 'Full run', items: items(3, 2500) });
    await approveAll(d.id);
    const before = await available();
    const released = await t.kasse.disbursements.release(
      { mode: 'test', merchantId: m.id },
      d.id,
      owners[1]!.id,
      owners[1]!.actor,
    );
    assert.equal(released.status, 'released');
    assert.equal(released.released_by, owners[1]!.id);
    assert.equal(released.released_at, t.clock.now().toISOString());
    assert.ok(
      released.items.every(
        (i) => i.payout !== null && /^po_[0-9A-Z]{26}$/.test(i.payout.id) && i.payout.status === 'pending',
      ),
    );
    assert.equal(await available(), before - 7500, 'the total left the available balance at release');
    assertError(await m.test.post(`/disbursements/${d.id}/cancel`), 422, 'invalid_state', null);

    // The third payout fails (as a refused destination would); the others are sent by the simulated sender.
    const failing = released.items[2]!.payout!.id;
    await t.kasse.transfers.transferSettled('test', {
      transferId: failing,
      status: 'failed',
      txHash: null,
      error: 'the transfer would revert: recipient refused',
    });
    assert.equal((await t.kasse.disbursements.runDue()).simulated, 2);
    const done = (await m.test.get(`/disbursements/${d.id}`)).body;
    assert.deepEqual(done.progress, { sent: 2, failed: 1, open: 0 });
    assert.equal(done.status, 'released');
    for (const i of done.items.slice(0, 2)) {
      assert.equal(i.payout.status, 'sent');
      assert.match(i.payout.tx_hash, /^0xsim/);
      assert.equal(i.payout.sent_at, t.clock.now().toISOString());
    }
    assert.deepEqual(
      { ...done.items[2].payout, id: 0 },
      { id: 0, status: 'failed', tx_hash: null, error: 'the transfer would revert: recipient refused', sent_at: null },
    );
    assert.equal(await available(), before - 5000, 'the failed payout gave its amount back');

    // The ledger: one release per item, a sent or a failed posting per item, each balanced.
    const postings = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select(['kind', 'dedupe_key'])
      .where(
        'dedupe_key',
        'in',
        done.items.flatMap((i: any) => ['release', 'sent', 'failed'].map((f) => `payout:${i.payout.id}:${f}`)),
      )
      .execute();
    assert.deepEqual(postings.map((p) => p.kind).sort(), [
      'payout_failed',
      'payout_release',
      'payout_release',
      'payout_release',
      'payout_sent',
      'payout_sent',
    ]);
    await assertStatementsReconcile(t.kasse, 'test', m.id, { payoutsTaken: () => 5000 });

    await deliver();
    const events = r.events.filter((e) => e.data.id === d.id);
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'disbursement.created',
        'disbursement.approved',
        'disbursement.released',
        'payout.failed',
        'payout.sent',
        'payout.sent',
        'disbursement.completed',
      ],
    );
    assert.equal(r.rejected.length, 0);
    const last = events[events.length - 1]!;
    assert.deepEqual(last.data, done, 'data is the Disbursement as the API shows it');
  });

  test('payouts settle in linear time: one database transaction, and statements, rows and bytes per payout that do not grow with the batch', async () => {
    await fund(20_000);
    const perPayout = async (n: number) => {
      const d = await create({ title: `Linear ${n}`, items: items(n, 100) });
      await approveAll(d.id);
      await t.kasse.disbursements.release({ mode: 'test', merchantId: m.id }, d.id, owners[0]!.id, owners[0]!.actor);
      const { result, count } = await countQueries(() => t.kasse.disbursements.runDue());
      assert.equal(result.simulated, n);
      const done = (await m.test.get(`/disbursements/${d.id}`)).body;
      assert.deepEqual(done.progress, { sent: n, failed: 0, open: 0 });
      const events = await t.kasse.db
        .selectFrom('events')
        .select(['type', 'data'])
        .where('ordering_key', '=', d.id)
        .orderBy('seq')
        .execute();
      const types = events.map((e) => e.type).slice(-(n + 1));
      assert.deepEqual(types, [...Array<string>(n).fill('payout.sent'), 'disbursement.completed']);
      assert.deepEqual(events[events.length - 1]!.data, done, 'data is the Disbursement as the API shows it');
      return {
        commits: count.commits,
        statements: count.statements / n,
        rows: count.rows / n,
        bytes: count.paramBytes / n,
      };
    };
    const small = await perPayout(6);
    const large = await perPayout(60);
    assert.equal(small.commits, 1, 'the batch settles in one database transaction');
    assert.equal(large.commits, 1, 'the batch settles in one database transaction');
    const grew = (what: keyof typeof small) => `${what} per payout: ${small[what]} at 6 payouts, ${large[what]} at 60`;
    assert.ok(large.statements <= small.statements, grew('statements'));
    assert.ok(large.rows <= small.rows, grew('rows'));
    assert.ok(large.bytes <= small.bytes, grew('bytes'));
  });

  test('cancel before release: pending or approved batches, once; events follow', async () => {
    const a = await create({ title: 'Cancel me', items: items(1) });
    const cancelled = await m.test.post(`/disbursements/${a.id}/cancel`);
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal(cancelled.body.cancelled_at, t.clock.now().toISOString());
    assertError(await m.test.post(`/disbursements/${a.id}/cancel`), 422, 'invalid_state', null);
    await assert.rejects(
      t.kasse.disbursements.approve(
        { mode: 'test', merchantId: m.id },
        a.id,
        owners[0]!.id,
        await t.kasse.disbursements.digest({ mode: 'test', merchantId: m.id }, a.id),
        owners[0]!.actor,
      ),
      /cancelled/,
    );

    const b = await create({ title: 'Cancel approved', items: items(1) });
    await approveAll(b.id);
    assert.equal((await m.test.post(`/disbursements/${b.id}/cancel`)).body.status, 'cancelled');
    await assert.rejects(
      t.kasse.disbursements.release({ mode: 'test', merchantId: m.id }, b.id, owners[0]!.id, owners[0]!.actor),
      /only an approved batch/,
    );
    await deliver();
    const types = (id: string) => r.events.filter((e) => e.data.id === id).map((e) => e.type);
    assert.deepEqual(types(a.id), ['disbursement.created', 'disbursement.cancelled']);
    assert.deepEqual(types(b.id), ['disbursement.created', 'disbursement.approved', 'disbursement.cancelled']);
    assert.equal(r.rejected.length, 0);
  });
});
