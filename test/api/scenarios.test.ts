/**
 * Scenarios: every outcome and transition of the spec's "States and transitions" table, driven the way a merchant
 * and a chain drive them — the public test API (create, attempts, cancel, accept, refund, simulate, events) and the
 * DepositSink a chain watcher reports to — with time moved by the fake clock and due work run by `runDue`/`drain`.
 *
 * Each scenario has its own shop (merchant + a real webhook receiver that verifies every signature) and checks:
 * - the exact ordered list of event types published for the payment, and that the receiver got exactly those
 *   events (deduplicated on id, as a receiver must), in that order;
 * - each event's `data` is the full Payment as `GET /payments/{id}` showed it right after the step that emitted
 *   it, and its status agrees with the event type;
 * - the ledger: every transaction balances per currency, each payment holds a standing credit exactly when it is
 *   paid, and the merchant's balance equals its credits less reversals.
 * Then the delivery side: a receiver failing its first deliveries, and restarts in the middle of the retry schedule.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, before, describe, test } from 'node:test';
import type { DepositObservation } from '../../src/chains/ports.ts';
import { FakeClock, HOUR, MINUTE, SECOND } from '../../src/core/clock.ts';
import { accounts } from '../../src/modules/ledger/ledger.ts';
import { ApiClient, startTestKasse, type TestKasse } from '../harness/app.ts';
import { createTestDatabase } from '../harness/db.ts';
import { ok, refused } from '../harness/expect.ts';
import { assertStatementsReconcile } from '../harness/statements.ts';
import { startWebhookReceiver, type ReceivedEvent, type WebhookReceiver } from '../harness/webhook-receiver.ts';

/** Short webhook timeout so a lease (timeout + 60 s) is quick to outrun on the fake clock. */
const ENV = { KASSE_WEBHOOK_TIMEOUT_MS: '1000' };
const LEASE_MS = 1000 + 60 * SECOND;
/** KASSE_FEE_BPS default (1 %). */
const FEE_BPS = 100;
const PRICE = 2000; // US cents; base:usdc pays 20 USDC = 20_000_000 units, 5 confirmations (tier 1)
const PAY = 20_000_000n;
const REFUND_TO = '0x000000000000000000000000000000000000dEaD';

type Payment = any;

let t: TestKasse;
const receivers: WebhookReceiver[] = [];

before(async () => {
  t = await startTestKasse({ env: ENV });
});
after(async () => {
  await t.close();
  for (const r of receivers) await r.close();
});

// ---------------------------------------------------------------------------------------------------------------
// A shop: a merchant with its own webhook receiver, speaking to one running Kasse.

interface Shop {
  tk: TestKasse;
  merchantId: string;
  api: ApiClient;
  receiver: WebhookReceiver;
}

async function openShop(tk: TestKasse = t): Promise<Shop> {
  const receiver = await startWebhookReceiver({ now: () => tk.clock.now() });
  receivers.push(receiver);
  const m = await tk.merchant({ webhookUrl: receiver.url, rateLimit: 100_000 });
  receiver.setSecret(m.webhookSecret);
  return { tk, merchantId: m.id, api: m.test, receiver };
}

/** The same shop talking to another process on the same database (after a restart). */
function reconnect(shop: Shop, tk: TestKasse): Shop {
  return { ...shop, tk, api: new ApiClient(tk.urls.test, shop.api.key) };
}

/**
 * A Kasse on a database of its own that the test can restart: `restart()` closes the running process and starts
 * another on the same database and clock. The chain reports to whichever process is running.
 */
async function withRestarts(
  body: (r: { first: TestKasse; clock: FakeClock; chain: Chain; restart(): Promise<TestKasse> }) => Promise<void>,
): Promise<void> {
  const db = await createTestDatabase();
  const clock = new FakeClock(t.clock.now());
  const start = () => startTestKasse({ databaseUrl: db.url, clock, env: ENV });
  let running: TestKasse | null = await start();
  let live = running;
  const restart = async () => {
    await running?.close();
    running = null;
    live = running = await start();
    return running;
  };
  try {
    await body({ first: running, clock, chain: new Chain(() => live), restart });
  } finally {
    await running?.close();
    await db.drop();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A chain: Base Sepolia as a watcher sees it. Blocks only go up over the whole file, so recounting confirmations
// for one scenario never disturbs another's deposits.

class Chain {
  private head = 1_000n;
  private txSeq = 0;
  constructor(private readonly tk: () => TestKasse) {}

  /** A transfer to the attempt's address in the next block, reported before any confirmation (detected). */
  async transfer(
    attempt: { chain: string; address: string; token: string },
    amount: bigint,
    token = attempt.token,
  ): Promise<DepositObservation> {
    const block = this.head + 1n;
    const o: DepositObservation = {
      chain: attempt.chain,
      address: attempt.address.toLowerCase(),
      token,
      txHash: `0x${(++this.txSeq).toString(16).padStart(8, '0')}${'ab'.repeat(28)}`,
      index: 0,
      amount,
      from: '0x1111111111111111111111111111111111111111',
      blockNumber: block,
      blockHash: blockHash(block, 'a'),
    };
    await this.tk().kasse.payments.deposits.recordDeposits('test', [o]);
    return o;
  }

  /** The same transfer mined again in a new block after a reorg. */
  async remine(o: DepositObservation): Promise<void> {
    const block = this.head + 1n;
    await this.tk().kasse.payments.deposits.recordDeposits('test', [
      { ...o, blockNumber: block, blockHash: blockHash(block, 'c') },
    ]);
  }

  /** `n` new blocks on top: every open deposit gains `n` confirmations. */
  async confirm(n: number): Promise<void> {
    this.head += BigInt(n);
    await this.tk().kasse.payments.deposits.headAdvanced('test', 'base', this.head);
  }

  /** The blocks from the one holding `o` up were replaced. */
  async reorg(o: DepositObservation): Promise<void> {
    await this.tk().kasse.payments.deposits.blocksRemoved('test', 'base', o.blockNumber!);
  }
}

function blockHash(block: bigint, fill: string): string {
  return `0x${block.toString(16).padStart(64, fill)}`;
}

const chain = new Chain(() => t);

// ---------------------------------------------------------------------------------------------------------------
// A payment followed through its life: each step records the events it published together with the Payment as the
// API shows it right after the step, and lets the delivery worker run.

interface Published {
  id: string;
  type: string;
  /** GET /payments/{id} right after the step that published it. */
  payment: Payment;
}

class Flow {
  readonly published: Published[] = [];
  constructor(
    public shop: Shop,
    readonly id: string,
  ) {}

  static async create(shop: Shop, body: Record<string, unknown> = {}): Promise<Flow> {
    const p = await ok(
      shop.api.post('/payments', { price_amount: PRICE, price_currency: 'USD', order_id: 'scenario', ...body }),
      201,
    );
    assert.equal(p.status, 'waiting');
    return new Flow(shop, p.id);
  }

  get(): Promise<Payment> {
    return ok(this.shop.api.get(`/payments/${this.id}`));
  }

  /** The latest attempt (coin choice). */
  async attempt(): Promise<any> {
    const p = await this.get();
    return p.attempts[p.attempts.length - 1];
  }

  /** Runs `action`, records the events it published with the Payment now, then delivers what is due. */
  async step(action: () => Promise<unknown>): Promise<Payment> {
    const before = (await this.events()).length;
    await action();
    const payment = await this.get();
    for (const e of (await this.events()).slice(before)) this.published.push({ id: e.id, type: e.type, payment });
    await this.shop.tk.kasse.webhooks.drain();
    return payment;
  }

  /** This payment's events from the public events API, oldest first. */
  async events(): Promise<Array<{ id: string; type: string; data: Payment }>> {
    const page = await ok(this.shop.api.get('/events?limit=100'));
    assert.equal(page.next_cursor, null, 'one page holds a scenario');
    return page.data.filter((e: any) => e.data.id === this.id).reverse();
  }

  /** Events the receiver acknowledged for this payment, deduplicated on id (first arrival kept). */
  received(): ReceivedEvent[] {
    const seen = new Map<string, ReceivedEvent>();
    for (const e of this.shop.receiver.events) {
      if (e.data?.id !== this.id) continue;
      const first = seen.get(e.id);
      if (first) assert.equal(e.rawBody, first.rawBody, `a repeat of ${e.id} is the same event, byte for byte`);
      else seen.set(e.id, e);
    }
    return [...seen.values()];
  }

  /**
   * The payment published exactly `types`, in order, and the receiver got exactly those events in that order, each
   * carrying the full Payment of its moment; then the ledger checks out.
   */
  async finish(types: string[]): Promise<void> {
    assert.deepEqual(
      this.published.map((e) => e.type),
      types,
      'events published',
    );
    assert.deepEqual(
      (await this.events()).map((e) => e.id),
      this.published.map((e) => e.id),
      'every event was published by a recorded step',
    );
    const got = this.received();
    assert.deepEqual(
      got.map((e) => e.type),
      types,
      'events received',
    );
    for (const [i, e] of got.entries()) {
      const want = this.published[i]!;
      assert.equal(e.id, want.id);
      assert.match(e.id, /^evt_[0-9A-Z]{26}$/);
      assert.equal(e.headers['service-event-id'], e.id);
      assert.equal(e.headers['service-event-type'], e.type);
      assert.deepEqual(e.data, want.payment, `${e.type} carries the Payment of its moment`);
      assertStatusFits(e.type, e.data);
    }
    assert.equal(this.shop.receiver.rejected.length, 0, 'every request carried a valid signature');
    await assertLedger(this.shop);
  }
}

/** What the Payment in an event's `data` must look like for that event type. */
function assertStatusFits(type: string, p: Payment): void {
  const paid = () => p.status === 'paid' && p.paid_at !== null && p.paid_attempt_id !== null;
  const checks: Record<string, () => boolean> = {
    'payment.detected': () => p.status === 'detected',
    'payment.confirming': () => p.status === 'confirming',
    'payment.paid': paid,
    'payment.underpaid': () => p.status === 'underpaid' && p.paid_at === null,
    'payment.overpaid': () => (paid() || p.status === 'refunded') && p.attempts.some((a: any) => a.overpaid),
    'payment.expired': () => p.status === 'expired',
    'payment.late': () => p.status === 'late' && p.paid_at === null,
    'payment.wrong_asset': () => p.attempts.some((a: any) => a.wrong_asset),
    'payment.reorged': () => p.status !== 'paid' && p.paid_at === null && p.paid_attempt_id === null,
    'payment.refunded': () => p.status === 'refunded',
    'payment.cancelled': () => p.status === 'cancelled',
  };
  const check = checks[type];
  assert.ok(check, `unknown event type ${type}`);
  assert.ok(check(), `${type} with a payment that is ${p.status}`);
}

// ---------------------------------------------------------------------------------------------------------------
// The ledger.

function net(priceCents: number): number {
  const fee = Math.floor((priceCents * FEE_BPS + 5_000) / 10_000); // round half up
  return priceCents - fee;
}

/**
 * Every ledger transaction sums to zero per currency; each of the shop's payments has a standing credit (credits
 * less reversals, each reversal the exact negation of a credit of the same payment) exactly when it is paid; the
 * merchant's balance is its credits less its reversals, which is the net price of its paid payments.
 */
async function assertLedger(shop: Shop): Promise<void> {
  const db = shop.tk.kasse.db;
  const unbalanced = await sql<{ transaction_id: string; currency: string }>`
    SELECT transaction_id, currency FROM ledger_entries GROUP BY 1, 2 HAVING sum(amount) <> 0`.execute(db);
  assert.deepEqual(unbalanced.rows, [], 'every ledger transaction balances per currency');

  const merchantAccount = accounts.merchant('test', shop.merchantId);
  const payments: Payment[] = (await ok(shop.api.get('/payments?limit=100'))).data;
  let expected = 0;
  for (const p of payments) {
    const txs = await db
      .selectFrom('ledger_transactions')
      .selectAll()
      .where('payment_id', '=', p.id)
      .where('kind', '<>', 'payment_hold')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const credits = txs.filter((x) => x.kind === 'payment_credit');
    const reversals = txs.filter((x) => x.reverses !== null);
    assert.equal(credits.length + reversals.length, txs.length, `${p.id}: only credits and reversals`);
    const lines = async (id: string) =>
      new Map(
        (
          await db
            .selectFrom('ledger_entries')
            .select(['account', 'currency', 'amount'])
            .where('transaction_id', '=', id)
            .execute()
        ).map((l) => [`${l.account} ${l.currency}`, BigInt(l.amount)]),
      );
    for (const r of reversals) {
      const original = credits.find((c) => c.id === r.reverses);
      assert.ok(original, `${p.id}: a reversal reverses a credit of the same payment`);
      const negated = new Map([...(await lines(original.id))].map(([k, v]) => [k, -v]));
      assert.deepEqual(await lines(r.id), negated, `${p.id}: a reversal is the exact negation of its credit`);
    }
    const standing = credits.length - reversals.length;
    assert.equal(standing, p.status === 'paid' ? 1 : 0, `${p.id} (${p.status}): credited exactly when paid`);
    if (p.status === 'paid') expected += net(p.price_amount);
  }

  const sumOf = async (kinds: string[]) => {
    const row = await db
      .selectFrom('ledger_entries as e')
      .innerJoin('ledger_transactions as x', 'x.id', 'e.transaction_id')
      .select(sql<string>`coalesce(sum(e.amount), 0)`.as('sum'))
      .where('e.account', '=', merchantAccount)
      .where('e.currency', '=', 'USD')
      .where('x.kind', 'in', kinds)
      .executeTakeFirstOrThrow();
    return Number(row.sum);
  };
  const credited = 0 - (await sumOf(['payment_credit']));
  const reversed = await sumOf(['payment_reorg', 'payment_refund']);
  const balance = (await ok(shop.api.get('/balance'))).available_usd_cents;
  assert.equal(balance, credited - reversed, 'balance = credits − reversals');
  assert.equal(balance, expected, 'balance = net price of the paid payments');
  await assertStatementsReconcile(shop.tk.kasse, 'test', shop.merchantId);
}

// ---------------------------------------------------------------------------------------------------------------
// Time.

async function passTime(ms: number, tk: TestKasse = t): Promise<void> {
  tk.clock.advance(ms);
  await tk.kasse.payments.runDue();
}

// ===============================================================================================================

describe('payment scenarios', () => {
  test('waiting → detected → confirming → paid, on the third of three coin choices (a fourth is refused)', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop);
    for (const token of ['ethereum:usdc', 'polygon:usdc', 'base:usdc']) {
      const p = await ok(shop.api.post(`/payments/${flow.id}/attempts`, { chain: token.split(':')[0], token }), 201);
      assert.equal(p.attempts[p.attempts.length - 1].token, token);
    }
    await refused(
      shop.api.post(`/payments/${flow.id}/attempts`, { chain: 'base', token: 'base:usdc' }),
      409,
      'too_many_attempts',
    );
    const a = await flow.attempt();
    assert.equal(a.pay_amount, PAY.toString());

    const detected = await flow.step(() => chain.transfer(a, PAY));
    assert.equal(detected.attempts[2].deposits[0].status, 'pending');
    await refused(shop.api.post(`/payments/${flow.id}/cancel`), 422, 'invalid_state');
    await flow.step(() => chain.confirm(1));
    await flow.step(() => chain.confirm(3));
    const paid = await flow.step(() => chain.confirm(1));
    assert.equal(paid.status, 'paid');
    assert.equal(paid.paid_attempt_id, a.id);
    assert.equal(paid.paid_at, t.clock.now().toISOString());
    assert.deepEqual(
      paid.attempts.map((x: any) => x.status),
      ['waiting', 'waiting', 'paid'],
    );
    await flow.finish(['payment.detected', 'payment.confirming', 'payment.paid']);
  });

  test('overpaid: more than asked is paid, then overpaid; the price is credited and the surplus stays in custody', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    await flow.step(() => chain.transfer(a, (PAY * 3n) / 2n));
    await flow.step(() => chain.confirm(2));
    const paid = await flow.step(() => chain.confirm(3));
    assert.equal(paid.status, 'paid');
    assert.equal(paid.attempts[0].overpaid, true);
    assert.equal(paid.attempts[0].received_amount, '30000000');
    const balance = await ok(shop.api.get('/balance'));
    assert.deepEqual(balance.custody, [
      { token: 'base:usdc', chain: 'base', symbol: 'USDC', amount: '30000000', amount_display: '30' },
    ]);
    await flow.finish(['payment.detected', 'payment.confirming', 'payment.paid', 'payment.overpaid']);
  });

  test('underpaid → paid: the rest arrives within the coin’s 10 minutes', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    await flow.step(() => chain.transfer(a, 8_000_000n));
    const short = await flow.step(() => chain.confirm(5));
    assert.equal(short.status, 'underpaid');
    assert.equal(short.attempts[0].received_amount, '8000000');
    await passTime(3 * MINUTE);
    const pending = await flow.step(() => chain.transfer(a, 12_000_000n));
    assert.equal(pending.status, 'underpaid', 'new pending money leaves it underpaid');
    const paid = await flow.step(() => chain.confirm(5));
    assert.equal(paid.status, 'paid');
    assert.equal(paid.attempts[0].overpaid, false);
    await flow.finish(['payment.detected', 'payment.underpaid', 'payment.paid']);
  });

  test('underpaid → late: the rest arrives after the 10 minutes; the next pass auto-accepts it (stable price)', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    await flow.step(() => chain.transfer(a, PAY / 2n));
    await flow.step(() => chain.confirm(5));
    await flow.step(() => passTime(11 * MINUTE));
    await flow.step(() => chain.transfer(a, PAY / 2n));
    const late = await flow.step(() => chain.confirm(5));
    assert.equal(late.status, 'late');
    assert.equal((await ok(shop.api.get('/balance'))).available_usd_cents, 0, 'late money is not credited');
    const paid = await flow.step(() => t.kasse.payments.runDue());
    assert.equal(paid.status, 'paid');
    await flow.finish(['payment.detected', 'payment.underpaid', 'payment.late', 'payment.paid']);
  });

  test('underpaid → accept: it never expires on its own; accepting credits the full price', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop);
    const simulated = await flow.step(() =>
      ok(shop.api.post(`/test/payments/${flow.id}/simulate`, { outcome: 'underpaid' })),
    );
    assert.equal(simulated.status, 'underpaid');
    const held = await flow.step(() => passTime(25 * HOUR));
    assert.equal(held.status, 'underpaid');
    let answer: Payment = null;
    const paid = await flow.step(async () => (answer = await ok(shop.api.post(`/payments/${flow.id}/accept`))));
    assert.deepEqual(answer, paid);
    assert.equal(paid.status, 'paid');
    await refused(shop.api.post(`/payments/${flow.id}/accept`), 422, 'invalid_state');
    await flow.finish(['payment.underpaid', 'payment.paid']);
  });

  test('expired → late → accept: money after the 24 hours is late, never auto-accepted, and the merchant accepts it', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    const expired = await flow.step(() => passTime(24 * HOUR));
    assert.equal(expired.status, 'expired');
    await passTime(MINUTE); // money seen at the very instant of expiry would still count as within the 24 hours
    const seen = await flow.step(() => chain.transfer(a, PAY));
    assert.equal(seen.status, 'expired', 'unconfirmed money on an expired payment sends nothing yet');
    const late = await flow.step(() => chain.confirm(5));
    assert.equal(late.status, 'late');
    const still = await flow.step(() => passTime(MINUTE));
    assert.equal(still.status, 'late', 'seen after the payment’s 24 hours: no auto-acceptance');
    const paid = await flow.step(() => ok(shop.api.post(`/payments/${flow.id}/accept`)));
    assert.equal(paid.status, 'paid');
    await flow.finish(['payment.expired', 'payment.late', 'payment.paid']);
  });

  test('late → refund: a requested refund stops auto-acceptance; sent, the payment is refunded with no credit to undo', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop);
    const late = await flow.step(() => ok(shop.api.post(`/test/payments/${flow.id}/simulate`, { outcome: 'late' })));
    assert.equal(late.status, 'late');
    const requested = await flow.step(() =>
      ok(shop.api.post(`/payments/${flow.id}/refund`, { destination: REFUND_TO }), 202),
    );
    assert.equal(requested.status, 'late', 'requested, not yet sent');
    // The workers' passes: late payments (not auto-accepted with a refund requested), then simulated refunds.
    const refunded = await flow.step(async () => {
      await t.kasse.payments.runDue();
      await t.kasse.refunds.settleSimulated();
    });
    assert.equal(refunded.status, 'refunded');
    assert.equal(refunded.attempts[0].status, 'refunded');
    await flow.finish(['payment.late', 'payment.refunded']);
  });

  test('expired: the coin hold lapses silently after 10 minutes, the payment after 24 hours', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const lapsed = await flow.step(() => passTime(10 * MINUTE));
    assert.equal(lapsed.status, 'waiting');
    assert.equal(lapsed.attempts[0].status, 'expired');
    const early = await flow.step(() => passTime(24 * HOUR - 10 * MINUTE - SECOND));
    assert.equal(early.status, 'waiting');
    const expired = await flow.step(() => passTime(SECOND));
    assert.equal(expired.status, 'expired');
    await flow.step(() => t.kasse.payments.runDue());
    await refused(
      shop.api.post(`/payments/${flow.id}/attempts`, { chain: 'base', token: 'base:usdc' }),
      422,
      'invalid_state',
    );
    await refused(shop.api.post(`/test/payments/${flow.id}/simulate`, { outcome: 'paid' }), 422, 'invalid_state');
    await flow.finish(['payment.expired']);
  });

  test('cancelled: only while waiting with no money seen; nothing more happens after', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const cancelled = await flow.step(() => ok(shop.api.post(`/payments/${flow.id}/cancel`)));
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.attempts[0].status, 'expired');
    await refused(shop.api.post(`/payments/${flow.id}/cancel`), 422, 'invalid_state');
    await refused(
      shop.api.post(`/payments/${flow.id}/attempts`, { chain: 'base', token: 'base:usdc' }),
      422,
      'invalid_state',
    );
    await flow.step(() => passTime(25 * HOUR));
    await flow.finish(['payment.cancelled']);
  });

  test('wrong_asset: another coin worth its minimum is reported (dust is not), blocks cancel, and the payment still expires', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    const dust = await flow.step(() => chain.transfer(a, 100n, 'base:eth'));
    assert.equal(dust.attempts[0].wrong_asset, false);
    const wrong = await flow.step(() => chain.transfer(a, 400_000_000_000_000n, 'base:eth'));
    assert.equal(wrong.status, 'waiting');
    assert.equal(wrong.attempts[0].wrong_asset, true);
    assert.equal(wrong.attempts[0].received_amount, '0');
    await flow.step(() => chain.confirm(5));
    await refused(shop.api.post(`/payments/${flow.id}/cancel`), 422, 'invalid_state');
    const expired = await flow.step(() => passTime(24 * HOUR));
    assert.equal(expired.status, 'expired');
    await flow.finish(['payment.wrong_asset', 'payment.expired']);
  });

  test('reorged → paid again: the credit is reversed while the transaction is off the chain, and posted again once', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    let sent!: DepositObservation;
    await flow.step(async () => (sent = await chain.transfer(a, PAY)));
    const paid = await flow.step(() => chain.confirm(5));
    assert.equal(paid.status, 'paid');
    const reorged = await flow.step(() => chain.reorg(sent));
    assert.equal(reorged.status, 'waiting');
    assert.equal(reorged.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(reorged.attempts[0].received_amount, '0');
    assert.equal(
      (await ok(shop.api.get('/balance'))).available_usd_cents,
      0,
      'pause fulfilment: the credit is reversed',
    );
    await assertLedger(shop);
    const back = await flow.step(() => chain.remine(sent));
    assert.equal(back.attempts[0].deposits[0].status, 'pending');
    const again = await flow.step(() => chain.confirm(5));
    assert.equal(again.status, 'paid');
    assert.equal(again.attempts[0].deposits.length, 1, 'the same transfer, revived in its new block');
    const kinds = await t.kasse.db
      .selectFrom('ledger_transactions')
      .select('kind')
      .where('payment_id', '=', flow.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      kinds.map((k) => k.kind),
      ['payment_credit', 'payment_reorg', 'payment_credit'],
    );
    await flow.finish(['payment.detected', 'payment.paid', 'payment.reorged', 'payment.detected', 'payment.paid']);
  });

  test('paid → refunded: a sent refund reverses the credit; a second refund is refused', async () => {
    const shop = await openShop();
    const flow = await Flow.create(shop);
    await flow.step(() => ok(shop.api.post(`/test/payments/${flow.id}/simulate`, { outcome: 'paid' })));
    let refund: any = null;
    await flow.step(
      async () =>
        (refund = await ok(
          shop.api.post(`/payments/${flow.id}/refund`, { destination: REFUND_TO, note: 'order cancelled' }),
          202,
        )),
    );
    assert.equal(refund.status, 'pending');
    assert.equal(refund.amount, PAY.toString());
    await refused(shop.api.post(`/payments/${flow.id}/refund`, { destination: REFUND_TO }), 422, 'invalid_state');
    const refunded = await flow.step(() => t.kasse.refunds.settleSimulated());
    assert.equal(refunded.status, 'refunded');
    assert.equal(refunded.paid_attempt_id, refunded.attempts[0].id, 'kept as history');
    await refused(shop.api.post(`/payments/${flow.id}/refund`, { destination: REFUND_TO }), 422, 'invalid_state');
    await flow.finish(['payment.paid', 'payment.refunded']);
  });
});

// ===============================================================================================================

describe('delivery', () => {
  test('a receiver failing (500) its first deliveries gets every event, in order, once the retries fall due', async () => {
    const shop = await openShop();
    shop.receiver.failNext(2);
    const flow = await Flow.create(shop, { token: 'base:usdc' });
    const a = await flow.attempt();
    const start = t.clock.now().getTime();
    await flow.step(() => chain.transfer(a, PAY));
    await flow.step(() => chain.confirm(1));
    await flow.step(() => chain.confirm(4));
    assert.equal(shop.receiver.requests.length, 1, 'the head failed; its followers wait behind it');

    const requestsAt = async (at: number) => {
      t.clock.set(at);
      await t.kasse.webhooks.drain();
      return shop.receiver.requests.length;
    };
    assert.equal(await requestsAt(start + MINUTE - SECOND), 1, 'nothing before the 1-minute retry');
    assert.equal(await requestsAt(start + MINUTE), 2, 'retry 1 after 1 minute (fails again)');
    assert.equal(shop.receiver.events.length, 0);
    assert.equal(await requestsAt(start + 6 * MINUTE - SECOND), 2, 'nothing before the 5-minute retry');
    assert.equal(await requestsAt(start + 6 * MINUTE), 5, 'retry 2 succeeds and the followers go');
    for (const e of shop.receiver.events) assert.equal(e.at.getTime(), start + 6 * MINUTE);
    await flow.finish(['payment.detected', 'payment.confirming', 'payment.paid']);
  });

  test('restart in the middle of the retry schedule: nothing lost, nothing out of order, new events queue behind', async () => {
    await withRestarts(async ({ first, clock, chain: ownChain, restart }) => {
      let shop = await openShop(first);
      shop.receiver.failNext(4);
      const a = await Flow.create(shop, { token: 'base:usdc' });
      const b = await Flow.create(shop, { token: 'base:usdc' });
      const start = clock.now().getTime();
      const attempt = await a.attempt();
      await a.step(() => ownChain.transfer(attempt, PAY)); // a: detected, fails
      await b.step(() => ok(shop.api.post(`/payments/${b.id}/cancel`))); // b: cancelled, fails (not held up by a)
      await a.step(() => ownChain.confirm(1)); // a: confirming, waits behind detected
      clock.set(start + MINUTE);
      await first.kasse.webhooks.drain(); // retry 1 of both heads fails
      assert.equal(shop.receiver.requests.length, 4);
      assert.equal(shop.receiver.events.length, 0);

      const second = await restart();
      shop = reconnect(shop, second);
      a.shop = shop;
      b.shop = shop;
      assert.equal(await second.kasse.webhooks.drain(), 0, 'retry 2 is not due yet');
      await a.step(() => ownChain.confirm(4)); // a: paid, published after the restart, queued behind
      assert.equal(shop.receiver.requests.length, 4);
      clock.set(start + 6 * MINUTE - SECOND);
      assert.equal(await second.kasse.webhooks.drain(), 0);
      clock.set(start + 6 * MINUTE);
      await second.kasse.webhooks.drain();
      await a.finish(['payment.detected', 'payment.confirming', 'payment.paid']);
      await b.finish(['payment.cancelled']);
      assert.equal(shop.receiver.events.length, 4, 'each event acknowledged once');
      const detail = await ok(shop.api.get(`/events/${a.published[0]!.id}`));
      assert.deepEqual(
        detail.deliveries[0].attempts.map((x: any) => [x.outcome, x.started_at]),
        [
          ['http_error', new Date(start).toISOString()],
          ['http_error', new Date(start + MINUTE).toISOString()],
          ['delivered', new Date(start + 6 * MINUTE).toISOString()],
        ],
      );
    });
  });

  test('restart after a worker sent but never recorded: the events come again (at least once) and dedupe cleanly', async () => {
    await withRestarts(async ({ first, clock, chain: ownChain, restart }) => {
      let shop = await openShop(first);
      shop.receiver.failNext(1);
      const flow = await Flow.create(shop, { token: 'base:usdc' });
      const start = clock.now().getTime();
      const attempt = await flow.attempt();
      await flow.step(() => ownChain.transfer(attempt, PAY)); // detected fails once
      await flow.step(() => ownChain.confirm(5)); // paid waits behind it
      clock.set(start + MINUTE);
      // The worker claims the retry and sends it; the process dies before the answer is recorded.
      const delivery = first.kasse.webhooks.delivery;
      const claimed = await delivery.claim(100);
      assert.deepEqual(
        claimed.map((c) => c.eventId),
        [flow.published[0]!.id],
      );
      await Promise.all(claimed.map((c) => delivery.send(c)));

      const second = await restart();
      shop = reconnect(shop, second);
      flow.shop = shop;
      assert.equal(await second.kasse.webhooks.drain(), 0, 'the dead worker’s claim holds until its lease ends');
      clock.set(start + MINUTE + LEASE_MS);
      await second.kasse.webhooks.drain();
      assert.deepEqual(
        shop.receiver.events.map((e) => e.type),
        ['payment.detected', 'payment.detected', 'payment.paid'],
        'the unrecorded delivery is sent again, then its follower',
      );
      await flow.finish(['payment.detected', 'payment.paid']);
    });
  });
});
