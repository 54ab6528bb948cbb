import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ImpossibleState } from '../../src/core/errors.ts';
import type {
  AttemptState,
  DepositState,
  DepositStatus,
  PaymentEventType,
  PaymentState,
  PaymentStatus,
} from '../../src/modules/payments/model.ts';
import {
  creditedCents,
  isFinal,
  moneySeen,
  next,
  paidCredit,
  TransitionError,
  type Transition,
  type Trigger,
} from '../../src/modules/payments/state.ts';
import { confirmationProgress, shownAttempt } from '../../src/modules/payments/payer.ts';
import type { Attempt, Payment } from '../../src/modules/payments/schema.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
/** Minutes after the payment was created. */
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const DAY = 24 * 60;
const PAY = 1_000_000n;
const HALF = PAY / 2n;

let seq = 0;
function dep(amount: bigint, status: DepositStatus = 'confirmed', o: Partial<DepositState> = {}): DepositState {
  return {
    id: `dep_${++seq}`,
    token: 'base:usdc',
    amount,
    status,
    confirmations: status === 'pending' ? 0 : 12,
    seenAt: at(1),
    valueCents: null,
    atLeastTokenMinimum: true,
    ...o,
  };
}
function att(o: Partial<AttemptState> = {}): AttemptState {
  return {
    id: 'att_1',
    token: 'base:usdc',
    status: 'waiting',
    payAmount: PAY,
    rate: '1.00',
    expiresAt: at(10),
    overpaid: false,
    wrongAsset: false,
    deposits: [],
    ...o,
  };
}
/** A one-attempt payment in `status` (its attempt in the matching status) holding `deposits`. */
function pay(
  status: PaymentStatus,
  deposits: DepositState[] = [],
  o: Partial<PaymentState> = {},
  a: Partial<AttemptState> = {},
): PaymentState {
  const paid = status === 'paid';
  return {
    id: 'pay_000000000000000000000000000000000001',
    status,
    createdAt: at(0),
    expiresAt: at(DAY),
    paidAt: paid ? at(5) : null,
    paidAttemptId: paid ? 'att_1' : null,
    paidAmount: paid ? deposits.reduce((s, d) => s + d.amount, 0n) : null,
    attempts: [att({ status: status === 'cancelled' ? 'expired' : status, deposits, ...a })],
    ...o,
  };
}
function step(
  p: PaymentState,
  trigger: Trigger = { kind: 'deposits_changed' },
  now = at(30),
  rates: Record<string, string> = {},
): Transition {
  return next(p, trigger, { now, rates: new Map(Object.entries(rates)) });
}
/** The same payment with the deposits of attempt `i` replaced, as the chain watcher would hand it over. */
function withDeposits(p: PaymentState, deposits: DepositState[], i = 0): PaymentState {
  const q = structuredClone(p);
  q.attempts[i]!.deposits = deposits;
  return q;
}

interface Row {
  name: string;
  given: PaymentState;
  /** New deposits of attempt 0 (the trigger is then deposits_changed unless given). */
  deposits?: DepositState[];
  trigger?: Trigger;
  now?: Date;
  rates?: Record<string, string>;
  status: PaymentStatus;
  events: PaymentEventType[];
  check?: (p: PaymentState) => void;
}
function table(rows: Row[]): void {
  for (const r of rows) {
    it(r.name, () => {
      const input = r.deposits ? withDeposits(r.given, r.deposits) : r.given;
      const { payment, events } = step(input, r.trigger, r.now, r.rates);
      assert.equal(payment.status, r.status);
      assert.deepEqual(events, r.events);
      r.check?.(payment);
    });
  }
}
interface Refusal {
  name: string;
  given: PaymentState;
  trigger: Trigger;
  message: RegExp;
}
function refusals(rows: Refusal[]): void {
  for (const r of rows) {
    it(r.name, () =>
      assert.throws(
        () => step(r.given, r.trigger),
        (e: unknown) => e instanceof TransitionError && r.message.test(e.message),
      ),
    );
  }
}

const attempt =
  (status: string, i = 0) =>
  (p: PaymentState) =>
    assert.equal(p.attempts[i]!.status, status);
const paidNow = (p: PaymentState) => {
  assert.deepEqual(p.paidAt, at(30));
  assert.equal(p.paidAttemptId, 'att_1');
  attempt('paid')(p);
};
const notPaid = (p: PaymentState) => {
  assert.equal(p.paidAt, null);
  assert.equal(p.paidAttemptId, null);
  assert.equal(p.paidAmount, null);
};
const rest = (minute: number, status: DepositStatus = 'confirmed') => dep(HALF, status, { seenAt: at(minute) });
const late = (o: Partial<PaymentState> = {}, a: Partial<AttemptState> = {}) => pay('late', [dep(HALF), rest(20)], o, a);
const tick: Trigger = { kind: 'tick' };
const accept: Trigger = { kind: 'accept' };
const cancel: Trigger = { kind: 'cancel' };
const refund: Trigger = { kind: 'refund_sent', attemptId: null };

describe('spec transition table', () => {
  table([
    {
      name: 'waiting → detected: money seen, not yet confirmed',
      given: pay('waiting'),
      deposits: [dep(PAY, 'pending')],
      status: 'detected',
      events: ['payment.detected'],
      check: attempt('detected'),
    },
    {
      name: 'detected → confirming: confirmations counting',
      given: pay('detected', [dep(PAY, 'pending')]),
      deposits: [dep(PAY, 'pending', { confirmations: 1 })],
      status: 'confirming',
      events: ['payment.confirming'],
      check: attempt('confirming'),
    },
    {
      name: 'detected → paid: confirmed, amount enough; paid_at set',
      given: pay('detected', [dep(PAY, 'pending')]),
      deposits: [dep(PAY)],
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'confirming → paid: confirmed, amount enough',
      given: pay('confirming', [dep(PAY, 'pending', { confirmations: 3 })]),
      deposits: [dep(PAY, 'final')],
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'detected → underpaid: confirmed, amount short',
      given: pay('detected', [dep(HALF, 'pending')]),
      deposits: [dep(HALF)],
      status: 'underpaid',
      events: ['payment.underpaid'],
      check: attempt('underpaid'),
    },
    {
      name: 'confirming → underpaid: confirmed, amount short',
      given: pay('confirming', [dep(HALF, 'pending', { confirmations: 2 })]),
      deposits: [dep(HALF)],
      status: 'underpaid',
      events: ['payment.underpaid'],
    },
    {
      name: 'underpaid → paid: rest arrives within the coin’s 10 minutes',
      given: pay('underpaid', [dep(HALF), rest(9, 'pending')]),
      deposits: [dep(HALF), rest(9)],
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'underpaid → late: rest arrives after the coin’s 10 minutes',
      given: pay('underpaid', [dep(HALF)]),
      deposits: [dep(HALF), rest(11)],
      status: 'late',
      events: ['payment.late'],
      check: (p) => {
        attempt('late')(p);
        notPaid(p);
      },
    },
    {
      name: 'late → paid: automatic acceptance within 24 h, price moved ≤ 3 %',
      given: late(),
      trigger: tick,
      rates: { 'base:usdc': '1.03' },
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'underpaid → paid: POST accept',
      given: pay('underpaid', [dep(HALF)]),
      trigger: accept,
      status: 'paid',
      events: ['payment.paid'],
      check: (p) => {
        paidNow(p);
        assert.equal(p.paidAmount, HALF);
      },
    },
    {
      name: 'late → paid: POST accept (payment.paid emitted: decision)',
      given: late(),
      trigger: accept,
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'late → refunded: refund',
      given: late(),
      trigger: refund,
      status: 'refunded',
      events: ['payment.refunded'],
      check: attempt('refunded'),
    },
    {
      name: 'waiting → expired: 24 hours pass, nothing paid',
      given: pay('waiting', [], {}, { expiresAt: at(DAY + 5) }),
      trigger: tick,
      now: at(DAY),
      status: 'expired',
      events: ['payment.expired'],
      check: attempt('expired'),
    },
    {
      name: 'waiting → cancelled: POST cancel before any money',
      given: pay('waiting'),
      trigger: cancel,
      status: 'cancelled',
      events: ['payment.cancelled'],
      check: attempt('expired'),
    },
    {
      name: 'paid → refunded: refund sent',
      given: pay('paid', [dep(PAY)]),
      trigger: refund,
      status: 'refunded',
      events: ['payment.refunded'],
      check: (p) => {
        attempt('refunded')(p);
        assert.equal(p.paidAttemptId, 'att_1');
      },
    },
    {
      name: 'underpaid → refunded: refund sent (named attempt)',
      given: pay('underpaid', [dep(HALF)]),
      trigger: { kind: 'refund_sent', attemptId: 'att_1' },
      status: 'refunded',
      events: ['payment.refunded'],
    },
    {
      name: 'expired with late money → refunded: refund sent',
      given: pay('expired', [dep(HALF, 'pending', { seenAt: at(DAY + 1) })], {}, { status: 'detected' }),
      trigger: refund,
      status: 'refunded',
      events: ['payment.refunded'],
    },
  ]);
});

describe('rule 1: money after the coin hold is reported late', () => {
  const afterHold = { seenAt: at(15) };
  table([
    {
      name: 'arrives confirmed after the hold on a waiting payment → late',
      given: pay('waiting', [], {}, { status: 'expired' }),
      deposits: [dep(PAY, 'confirmed', afterHold)],
      status: 'late',
      events: ['payment.late'],
      check: attempt('late'),
    },
    {
      name: 'seen after the hold, still pending → detected',
      given: pay('waiting', [], {}, { status: 'expired' }),
      deposits: [dep(PAY, 'pending', afterHold)],
      status: 'detected',
      events: ['payment.detected'],
      check: attempt('detected'),
    },
    {
      name: 'detected after the hold, then confirmed → late',
      given: pay('detected', [dep(PAY, 'pending', afterHold)]),
      deposits: [dep(PAY, 'confirmed', afterHold)],
      status: 'late',
      events: ['payment.late'],
    },
    {
      name: 'on an expired payment, confirmed and enough → late',
      given: pay('expired', [], {}, { status: 'expired' }),
      deposits: [dep(PAY, 'confirmed', { seenAt: at(DAY + 2) })],
      now: at(DAY + 30),
      status: 'late',
      events: ['payment.late'],
      check: attempt('late'),
    },
    {
      name: 'on an expired payment, money seen within the hold is still late (the payment had expired)',
      given: pay('expired', [], { expiresAt: at(5) }),
      deposits: [dep(PAY, 'confirmed', { seenAt: at(6) })],
      status: 'late',
      events: ['payment.late'],
      check: attempt('late'),
    },
    {
      name: 'on an expired payment, pending money updates the attempt only',
      given: pay('expired', [], {}, { status: 'expired' }),
      deposits: [dep(PAY, 'pending', { seenAt: at(DAY + 2) })],
      status: 'expired',
      events: [],
      check: attempt('detected'),
    },
    {
      name: 'on an expired payment, short money updates the attempt only',
      given: pay('expired', [], {}, { status: 'expired' }),
      deposits: [dep(HALF, 'confirmed', { seenAt: at(DAY + 2) })],
      status: 'expired',
      events: [],
      check: attempt('underpaid'),
    },
  ]);
});

describe('rule 2: overpaid', () => {
  table([
    {
      name: 'more than asked → payment.paid then payment.overpaid',
      given: pay('waiting'),
      deposits: [dep(PAY + 1n)],
      status: 'paid',
      events: ['payment.paid', 'payment.overpaid'],
      check: (p) => assert.equal(p.attempts[0]!.overpaid, true),
    },
    {
      name: 'exactly the amount → not overpaid',
      given: pay('waiting'),
      deposits: [dep(PAY)],
      status: 'paid',
      events: ['payment.paid'],
      check: (p) => assert.equal(p.attempts[0]!.overpaid, false),
    },
    {
      name: 'a second deposit to the paid attempt → payment.overpaid alone',
      given: pay('paid', [dep(PAY)]),
      deposits: [dep(PAY), dep(5n, 'confirmed', { seenAt: at(20) })],
      status: 'paid',
      events: ['payment.overpaid'],
    },
    {
      name: 'surplus still pending → nothing yet',
      given: pay('paid', [dep(PAY)]),
      deposits: [dep(PAY), dep(5n, 'pending')],
      status: 'paid',
      events: [],
    },
    {
      name: 'late and overpaid, auto-accepted → payment.paid then payment.overpaid',
      given: pay('late', [dep(HALF), dep(PAY, 'confirmed', { seenAt: at(20) })], {}, { overpaid: true }),
      trigger: tick,
      rates: { 'base:usdc': '1.00' },
      status: 'paid',
      events: ['payment.paid', 'payment.overpaid'],
    },
  ]);
});

describe('rule 3: wrong asset', () => {
  const eth = (o: Partial<DepositState> = {}) => dep(10n ** 16n, 'pending', { token: 'base:eth', ...o });
  table([
    {
      name: 'another coin worth at least its minimum → payment.wrong_asset, status unchanged',
      given: pay('waiting'),
      deposits: [eth()],
      status: 'waiting',
      events: ['payment.wrong_asset'],
      check: (p) => {
        assert.equal(p.attempts[0]!.wrongAsset, true);
        attempt('waiting')(p);
      },
    },
    {
      name: 'below that coin’s minimum → nothing',
      given: pay('waiting'),
      deposits: [eth({ atLeastTokenMinimum: false })],
      status: 'waiting',
      events: [],
      check: (p) => assert.equal(p.attempts[0]!.wrongAsset, false),
    },
    {
      name: 'emitted once per attempt',
      given: pay('waiting', [eth()], {}, { wrongAsset: true }),
      deposits: [eth(), eth({ status: 'confirmed' })],
      status: 'waiting',
      events: [],
    },
    {
      name: 'does not count toward the amount',
      given: pay('detected', [dep(HALF, 'pending')]),
      deposits: [dep(HALF), eth({ status: 'confirmed', amount: PAY })],
      status: 'underpaid',
      events: ['payment.wrong_asset', 'payment.underpaid'],
    },
    {
      name: 'an orphaned wrong-asset deposit does not count',
      given: pay('waiting'),
      deposits: [eth({ status: 'orphaned' })],
      status: 'waiting',
      events: [],
    },
  ]);
});

describe('rule 4: reorg', () => {
  table([
    {
      name: 'paid money leaves the chain → payment.reorged, back to waiting',
      given: pay('paid', [dep(PAY)]),
      deposits: [dep(PAY, 'orphaned')],
      status: 'waiting',
      events: ['payment.reorged'],
      check: (p) => {
        notPaid(p);
        attempt('waiting')(p);
      },
    },
    {
      name: 'part of it leaves → reorged, underpaid by the rest',
      given: pay('paid', [dep(HALF), rest(2)]),
      deposits: [dep(HALF), rest(2, 'orphaned')],
      status: 'underpaid',
      events: ['payment.reorged'],
      check: notPaid,
    },
    {
      name: 're-included, pending → reorged, detected',
      given: pay('paid', [dep(PAY)]),
      deposits: [dep(PAY, 'pending')],
      status: 'detected',
      events: ['payment.reorged'],
    },
    {
      name: 're-included with confirmations → reorged, confirming',
      given: pay('paid', [dep(PAY)]),
      deposits: [dep(PAY, 'pending', { confirmations: 1 })],
      status: 'confirming',
      events: ['payment.reorged'],
    },
    {
      name: 'confirmed enough again → payment.paid again',
      given: pay('confirming', [dep(PAY, 'pending', { confirmations: 1 })]),
      deposits: [dep(PAY)],
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'overpaid surplus orphaned, still enough → no reorg',
      given: pay('paid', [dep(PAY), dep(5n)], {}, { overpaid: true }),
      deposits: [dep(PAY), dep(5n, 'orphaned')],
      status: 'paid',
      events: [],
      check: (p) => assert.equal(p.attempts[0]!.overpaid, false),
    },
    {
      name: 'accepted short payment: unrelated change → no reorg',
      given: pay('paid', [dep(HALF)]),
      deposits: [dep(HALF, 'final')],
      status: 'paid',
      events: [],
    },
    {
      name: 'accepted short payment: its money leaves → reorged',
      given: pay('paid', [dep(HALF)]),
      deposits: [dep(HALF, 'orphaned')],
      status: 'waiting',
      events: ['payment.reorged'],
    },
    {
      name: 'orphaned on a non-paid payment: recompute only (detected → waiting)',
      given: pay('detected', [dep(PAY, 'pending')]),
      deposits: [dep(PAY, 'orphaned')],
      status: 'waiting',
      events: [],
      check: attempt('waiting'),
    },
    {
      name: 'orphaned on a non-paid payment: underpaid → detected emits the new status',
      given: pay('underpaid', [dep(HALF), rest(2, 'pending')]),
      deposits: [dep(HALF, 'orphaned'), rest(2, 'pending')],
      status: 'detected',
      events: ['payment.detected'],
    },
  ]);
});

describe('rule 5: up to three attempts; status follows the attempt carrying the money', () => {
  const three = (deposits: DepositState[][], status: PaymentStatus = 'waiting') => ({
    ...pay(status),
    attempts: deposits.map((ds, i) =>
      att({
        id: `att_${i + 1}`,
        token: i === 1 ? 'base:eth' : 'base:usdc',
        payAmount: i === 1 ? 5n * 10n ** 14n : PAY,
        rate: i === 1 ? '2000' : '1.00',
        deposits: ds,
      }),
    ),
  });
  const eth = (amount: bigint, status: DepositStatus = 'confirmed') => dep(amount, status, { token: 'base:eth' });
  table([
    {
      name: 'money on the second of three → paid by that attempt',
      given: three([[], [eth(5n * 10n ** 14n)], []]),
      status: 'paid',
      events: ['payment.paid'],
      check: (p) => {
        assert.equal(p.paidAttemptId, 'att_2');
        attempt('paid', 1)(p);
        attempt('waiting', 2)(p);
      },
    },
    {
      name: 'most confirmed share wins over a larger raw amount',
      given: three([[dep(HALF)], [eth(10n ** 12n)], []]),
      status: 'underpaid',
      events: ['payment.underpaid'],
      check: (p) => {
        attempt('underpaid', 0)(p);
        attempt('underpaid', 1)(p);
      },
    },
    {
      name: 'seen share breaks a tie in confirmed share',
      given: three([[dep(PAY, 'pending', { confirmations: 1 })], [], [dep(HALF, 'pending')]]),
      status: 'confirming',
      events: ['payment.confirming'],
      check: attempt('detected', 2),
    },
    {
      name: 'a full tie goes to the latest attempt',
      given: three([[dep(HALF)], [], [dep(HALF)]], 'underpaid'),
      trigger: accept,
      status: 'paid',
      events: ['payment.paid', 'payment.overpaid'],
      check: (p) => {
        assert.equal(p.paidAttemptId, 'att_3');
        assert.equal(p.attempts[0]!.overpaid, true);
      },
    },
  ]);
});

describe('decision: jumps emit only the target event', () => {
  table([
    {
      name: 'waiting, deposit arrives confirmed and enough → only payment.paid',
      given: pay('waiting'),
      deposits: [dep(PAY)],
      status: 'paid',
      events: ['payment.paid'],
      check: paidNow,
    },
    {
      name: 'waiting, deposit arrives confirmed and short → only payment.underpaid',
      given: pay('waiting'),
      deposits: [dep(HALF)],
      status: 'underpaid',
      events: ['payment.underpaid'],
    },
    {
      name: 'waiting, deposit arrives with confirmations → only payment.confirming',
      given: pay('waiting'),
      deposits: [dep(PAY, 'pending', { confirmations: 2 })],
      status: 'confirming',
      events: ['payment.confirming'],
    },
    {
      name: 'waiting, short then rest after the hold in one step → only payment.late',
      given: pay('waiting'),
      deposits: [dep(HALF), rest(12)],
      status: 'late',
      events: ['payment.late'],
    },
  ]);
});

describe('decision: late auto-acceptance', () => {
  const eth = (rate: string, seenAt = at(20)) =>
    pay(
      'late',
      [dep(HALF, 'confirmed', { token: 'base:eth' }), dep(HALF, 'confirmed', { token: 'base:eth', seenAt })],
      {},
      { token: 'base:eth', rate },
    );
  table([
    {
      name: 'not in the step that made it late',
      given: pay('underpaid', [dep(HALF)]),
      deposits: [dep(HALF), rest(11)],
      rates: { 'base:usdc': '1.00' },
      status: 'late',
      events: ['payment.late'],
    },
    {
      name: 'price up exactly 3 % → paid',
      given: eth('2000'),
      trigger: tick,
      rates: { 'base:eth': '2060' },
      status: 'paid',
      events: ['payment.paid'],
    },
    {
      name: 'price down exactly 3 % → paid',
      given: eth('2000.00'),
      trigger: tick,
      rates: { 'base:eth': '1940.000' },
      status: 'paid',
      events: ['payment.paid'],
    },
    {
      name: 'price up a hair over 3 % → stays late',
      given: eth('2000'),
      trigger: tick,
      rates: { 'base:eth': '2060.000001' },
      status: 'late',
      events: [],
    },
    {
      name: 'price down a hair over 3 % → stays late',
      given: eth('2000'),
      trigger: tick,
      rates: { 'base:eth': '1939.99' },
      status: 'late',
      events: [],
    },
    { name: 'no fresh price → stays late', given: eth('2000'), trigger: tick, rates: {}, status: 'late', events: [] },
    {
      name: 'completing money seen after the 24 h lifetime → stays late',
      given: eth('2000', at(DAY + 1)),
      trigger: tick,
      now: at(DAY + 30),
      rates: { 'base:eth': '2000' },
      status: 'late',
      events: [],
    },
    {
      name: 'completing money seen exactly at the end of the lifetime → paid',
      given: eth('2000', at(DAY)),
      trigger: tick,
      now: at(DAY + 30),
      rates: { 'base:eth': '2000' },
      status: 'paid',
      events: ['payment.paid'],
    },
  ]);
});

describe('decision: time', () => {
  table([
    {
      name: 'underpaid never expires on its own',
      given: pay('underpaid', [dep(HALF)]),
      trigger: tick,
      now: at(DAY * 3),
      status: 'underpaid',
      events: [],
    },
    {
      name: 'detected does not expire',
      given: pay('detected', [dep(HALF, 'pending')]),
      trigger: tick,
      now: at(DAY * 3),
      status: 'detected',
      events: [],
      check: attempt('detected'),
    },
    {
      name: 'before 24 h a waiting payment waits; its attempt’s hold runs out silently',
      given: pay('waiting'),
      trigger: tick,
      now: at(10),
      status: 'waiting',
      events: [],
      check: attempt('expired'),
    },
    {
      name: 'an attempt hold not yet over stays waiting',
      given: pay('waiting'),
      trigger: tick,
      now: at(9),
      status: 'waiting',
      events: [],
      check: attempt('waiting'),
    },
    {
      name: 'a waiting payment holding only wrong-asset money expires: nothing was paid',
      given: pay('waiting', [dep(5n, 'confirmed', { token: 'base:eth' })], {}, { wrongAsset: true }),
      trigger: tick,
      now: at(DAY + 1),
      status: 'expired',
      events: ['payment.expired'],
    },
    {
      name: 'a waiting payment holding own-coin money does not expire',
      given: pay('waiting', [dep(5n, 'pending')]),
      trigger: tick,
      now: at(DAY + 1),
      status: 'waiting',
      events: [],
    },
    {
      name: 'expiry expires every waiting attempt, even one whose hold still runs',
      given: {
        ...pay('waiting'),
        attempts: [att({ status: 'expired' }), att({ id: 'att_2', expiresAt: at(DAY + 5) })],
      },
      trigger: tick,
      now: at(DAY),
      status: 'expired',
      events: ['payment.expired'],
      check: (p) => {
        attempt('expired', 0)(p);
        attempt('expired', 1)(p);
      },
    },
  ]);
});

describe('decision: holds and recomputation', () => {
  table([
    {
      name: 'underpaid + new pending money stays underpaid, no event',
      given: pay('underpaid', [dep(HALF)]),
      deposits: [dep(HALF), rest(5, 'pending')],
      status: 'underpaid',
      events: [],
      check: attempt('underpaid'),
    },
    {
      name: 'confirmed part plus pending part → confirming, not underpaid',
      given: pay('confirming', [dep(HALF, 'pending', { confirmations: 1 }), rest(2, 'pending')]),
      deposits: [dep(HALF), rest(2, 'pending')],
      status: 'confirming',
      events: [],
    },
    {
      name: 'late does not turn paid on deposits_changed',
      given: late(),
      deposits: [dep(HALF, 'final'), rest(20)],
      status: 'late',
      events: [],
    },
    {
      name: 'a late payment whose money left → underpaid, payment.underpaid',
      given: late(),
      deposits: [dep(HALF), rest(20, 'orphaned')],
      status: 'underpaid',
      events: ['payment.underpaid'],
    },
  ]);
});

describe('decision: money on another attempt after paid or refunded', () => {
  const two = (status: PaymentStatus, second: DepositState[], o: Partial<AttemptState> = {}) => {
    const p = pay(status, [dep(PAY)]);
    if (status === 'refunded') Object.assign(p, { paidAt: at(5), paidAttemptId: 'att_1', paidAmount: PAY });
    p.attempts[0]!.status = status === 'refunded' ? 'refunded' : 'paid';
    p.attempts.push(att({ id: 'att_2', status: 'expired', deposits: second, ...o }));
    return p;
  };
  const second = (p: PaymentState) => p.attempts[1]!;
  table([
    {
      name: 'paid, confirmed money on another attempt → payment.overpaid once',
      given: two('paid', [dep(HALF, 'confirmed', { seenAt: at(40) })]),
      status: 'paid',
      events: ['payment.overpaid'],
      check: (p) => {
        assert.equal(second(p).status, 'underpaid');
        assert.equal(second(p).overpaid, true);
      },
    },
    {
      name: 'paid, same surplus again → nothing',
      given: two('paid', [dep(HALF, 'final', { seenAt: at(40) })], { status: 'underpaid', overpaid: true }),
      status: 'paid',
      events: [],
    },
    {
      name: 'refunded, confirmed money on another attempt → payment.overpaid',
      given: two('refunded', [dep(PAY, 'confirmed', { seenAt: at(5) })]),
      status: 'refunded',
      events: ['payment.overpaid'],
      check: (p) => {
        assert.equal(second(p).status, 'paid');
        attempt('refunded')(p);
      },
    },
  ]);
  it('pending then confirmed on the other attempt: detected silently, then payment.overpaid', () => {
    const p0 = two('paid', []);
    const a = step(withDeposits(p0, [dep(HALF, 'pending', { seenAt: at(40) })], 1));
    assert.deepEqual(a.events, []);
    assert.equal(second(a.payment).status, 'detected');
    const b = step(withDeposits(a.payment, [dep(HALF, 'confirmed', { seenAt: at(40) })], 1));
    assert.deepEqual(b.events, ['payment.overpaid']);
  });
});

describe('refused triggers', () => {
  refusals([
    {
      name: 'cancel after money was seen',
      given: pay('detected', [dep(PAY, 'pending')]),
      trigger: cancel,
      message: /only a waiting payment/i,
    },
    {
      name: 'cancel with wrong-asset money on a waiting payment',
      given: pay('waiting', [dep(5n, 'pending', { token: 'base:eth' })]),
      trigger: cancel,
      message: /money has already arrived/i,
    },
    { name: 'cancel a paid payment', given: pay('paid', [dep(PAY)]), trigger: cancel, message: /is paid/ },
    { name: 'cancel twice', given: pay('cancelled'), trigger: cancel, message: /is cancelled/ },
    { name: 'accept a waiting payment', given: pay('waiting'), trigger: accept, message: /underpaid or late/ },
    {
      name: 'accept a detected payment',
      given: pay('detected', [dep(PAY, 'pending')]),
      trigger: accept,
      message: /is detected/,
    },
    { name: 'accept a paid payment', given: pay('paid', [dep(PAY)]), trigger: accept, message: /is paid/ },
    { name: 'refund twice', given: pay('refunded', [dep(PAY)]), trigger: refund, message: /already been refunded/ },
    {
      name: 'refund an expired payment without money',
      given: pay('expired'),
      trigger: refund,
      message: /nothing to refund/,
    },
    { name: 'refund a cancelled payment', given: pay('cancelled'), trigger: refund, message: /nothing to refund/ },
    {
      name: 'refund a waiting payment without money',
      given: pay('waiting'),
      trigger: refund,
      message: /nothing to refund/,
    },
    {
      name: 'refund an unknown attempt',
      given: pay('paid', [dep(PAY)]),
      trigger: { kind: 'refund_sent', attemptId: 'att_9' },
      message: /no attempt att_9/,
    },
  ]);
});

describe('impossible states throw with their ids', () => {
  const ID = 'pay_000000000000000000000000000000000001';
  /** Throws ImpossibleState naming the payment and `attempt`, and says `what`. */
  const impossible = (fn: () => unknown, attempt: string, what: RegExp) =>
    assert.throws(fn, (e: unknown) => {
      assert.ok(e instanceof ImpossibleState, String(e));
      assert.match(e.message, what);
      assert.match(e.message, new RegExp(`payment ${ID}, attempt ${attempt}`));
      assert.deepEqual(e.ids, { payment: ID, attempt });
      return true;
    });
  const lateEth = (rate: string) =>
    pay('late', [dep(PAY, 'confirmed', { token: 'base:eth', seenAt: at(20) })], {}, { token: 'base:eth', rate });

  it('a paid payment without the coin choice that paid it, even when a wrong asset arrives first', () =>
    impossible(
      () => step(pay('paid', [dep(PAY), dep(5n, 'confirmed', { token: 'base:eth' })], { paidAttemptId: 'att_9' })),
      'att_9',
      /does not hold the coin choice that paid it/,
    ));
  it('a quoted rate that is not a decimal, met by late auto-acceptance', () =>
    impossible(
      () => step(lateEth('2,000'), tick, at(30), { 'base:eth': '2000' }),
      'att_1',
      /quoted base:eth rate "2,000"/,
    ));
  it('a quoted rate of zero', () =>
    impossible(
      () => step(lateEth('0.00'), tick, at(30), { 'base:eth': '2000' }),
      'att_1',
      /rate "0.00" is not a positive/,
    ));
  it('a current rate that is not a decimal', () =>
    impossible(
      () => step(lateEth('2000'), tick, at(30), { 'base:eth': 'NaN' }),
      'att_1',
      /current base:eth rate "NaN"/,
    ));
  it('accepting a coin choice with nothing confirmed (an underpaid status its deposits do not explain)', () =>
    impossible(() => step(pay('underpaid', [dep(HALF, 'pending')]), accept), 'att_1', /no confirmed money/));
  it('a paid payment whose credit has no paid amount or no paid coin choice', () => {
    const paid = pay('paid', [dep(PAY)]);
    assert.deepEqual(paidCredit(paid), { attempt: paid.attempts[0], amount: PAY });
    impossible(() => paidCredit({ ...paid, paidAmount: null }), 'att_1', /paid amount none/);
    impossible(() => paidCredit({ ...paid, paidAmount: 0n }), 'att_1', /paid amount 0/);
    impossible(() => paidCredit({ ...paid, paidAttemptId: 'att_9' }), 'att_9', /lacks the coin choice/);
  });
});

describe('no event twice', () => {
  const scenarios: Array<[string, PaymentState, Trigger, Date, Record<string, string>?]> = [
    ['detected', pay('waiting', [dep(PAY, 'pending')]), { kind: 'deposits_changed' }, at(30)],
    ['confirming', pay('waiting', [dep(PAY, 'pending', { confirmations: 1 })]), { kind: 'deposits_changed' }, at(30)],
    ['paid + overpaid', pay('waiting', [dep(PAY * 2n)]), { kind: 'deposits_changed' }, at(30)],
    ['underpaid', pay('waiting', [dep(HALF)]), { kind: 'deposits_changed' }, at(30)],
    ['late', pay('underpaid', [dep(HALF), rest(11)]), { kind: 'deposits_changed' }, at(30)],
    ['wrong asset', pay('waiting', [dep(5n, 'pending', { token: 'base:eth' })]), { kind: 'deposits_changed' }, at(30)],
    ['reorged', pay('paid', [dep(PAY, 'orphaned')]), { kind: 'deposits_changed' }, at(30)],
    ['expired', pay('waiting'), tick, at(DAY)],
    [
      'late on an expired payment, money seen within the hold',
      pay('expired', [dep(PAY, 'confirmed', { seenAt: at(6) })], { expiresAt: at(5) }, { status: 'expired' }),
      { kind: 'deposits_changed' },
      at(30),
    ],
    ['auto-accepted', late(), tick, at(30), { 'base:usdc': '1.00' }],
  ];
  for (const [name, given, trigger, now, rates] of scenarios) {
    it(`${name}: the same trigger again, a deposits_changed or a tick emit nothing`, () => {
      const first = step(given, trigger, now, rates);
      assert.notDeepEqual(first.events, []);
      const later = new Date(now.getTime() + 60_000);
      assert.deepEqual(step(first.payment, trigger, later, rates).payment, first.payment);
      for (const t of [trigger, { kind: 'deposits_changed' } as const, tick]) {
        assert.deepEqual(step(first.payment, t, later, rates).events, [], `${t.kind} after ${name}`);
      }
    });
  }
  it('every table fixture is a steady state (a bare deposits_changed emits nothing)', () => {
    for (const p of [
      pay('detected', [dep(PAY, 'pending')]),
      pay('underpaid', [dep(HALF)]),
      late(),
      pay('paid', [dep(PAY)]),
      pay('paid', [dep(HALF)]),
    ]) {
      assert.deepEqual(step(p).events, [], p.status);
    }
  });
});

describe('purity', () => {
  const deepFreeze = <T>(o: T): T => {
    if (o && typeof o === 'object' && !(o instanceof Date)) {
      Object.values(o).forEach(deepFreeze);
      Object.freeze(o);
    }
    return o;
  };
  const inputs: Array<[PaymentState, Trigger]> = [
    [
      withDeposits(pay('waiting'), [dep(PAY * 2n), dep(5n, 'pending', { token: 'base:eth' })]),
      { kind: 'deposits_changed' },
    ],
    [pay('paid', [dep(PAY, 'orphaned')]), { kind: 'deposits_changed' }],
    [pay('waiting'), tick],
    [pay('waiting'), cancel],
    [pay('underpaid', [dep(HALF)]), accept],
    [pay('paid', [dep(PAY)]), refund],
  ];
  for (const [p, trigger] of inputs) {
    it(`input not mutated (${p.status}, ${trigger.kind})`, () => {
      const snapshot = structuredClone(p);
      const result = step(deepFreeze(p), trigger, at(DAY + 1), { 'base:usdc': '1' });
      assert.deepEqual(p, snapshot);
      assert.notEqual(result.payment, p);
      assert.notEqual(result.payment.attempts[0], p.attempts[0]);
    });
  }
});

describe('helpers', () => {
  it('isFinal: paid, expired, refunded, cancelled', () => {
    const final = (
      ['waiting', 'detected', 'confirming', 'paid', 'underpaid', 'expired', 'late', 'refunded', 'cancelled'] as const
    ).filter(isFinal);
    assert.deepEqual(final, ['paid', 'expired', 'refunded', 'cancelled']);
  });
  it('moneySeen: a non-orphaned deposit of the own coin, or of another coin worth at least its minimum', () => {
    assert.equal(moneySeen(pay('waiting')), false);
    assert.equal(moneySeen(pay('waiting', [dep(PAY, 'orphaned')])), false);
    assert.equal(
      moneySeen(pay('waiting', [dep(1n, 'pending', { token: 'base:eth', atLeastTokenMinimum: false })])),
      false,
      'dust of another coin',
    );
    assert.equal(
      moneySeen(pay('waiting', [dep(1n, 'pending', { token: 'base:eth', atLeastTokenMinimum: true })])),
      true,
    );
    assert.equal(moneySeen(pay('detected', [dep(PAY, 'pending')])), true);
  });
});

describe('decision: underpayment tolerance', () => {
  describe('creditedCents: the price in proportion to what arrived, rounded down', () => {
    it('at the bound (100 bps short) a $10.00 price credits $9.90', () => {
      assert.equal(creditedCents(1000n, PAY - 10_000n, PAY), 990n);
    });
    it('rounds down: $10.00 for 999 999 of 1 000 000 credits $9.99', () => {
      assert.equal(creditedCents(1000n, PAY - 1n, PAY), 999n);
    });
    it('an exact (or larger) payment credits the price', () => {
      assert.equal(creditedCents(1000n, PAY, PAY), 1000n);
      assert.equal(creditedCents(1000n, PAY + 5n, PAY), 1000n);
    });
    it('exact in bigint for amounts beyond 2^53', () => {
      const due = 10n ** 24n;
      assert.equal(creditedCents(123_456_789n, due - 1n, due), 123_456_788n);
    });
  });
  const within = (p: PaymentState, bps: number, trigger: Trigger = { kind: 'deposits_changed' }, now = at(30)) =>
    next(p, trigger, { now, rates: new Map([['base:usdc', '1.00']]), toleranceBps: bps });
  // 100 bps of 1 000 000 allows floor(10 000) smallest units short.
  it('a confirmed amount short by exactly the allowed shortfall is paid, within tolerance', () => {
    const { payment, events } = within(pay('waiting', [dep(PAY - 10_000n)]), 100);
    assert.equal(payment.status, 'paid');
    assert.deepEqual(events, ['payment.paid']);
    assert.equal(payment.paidAmount, PAY - 10_000n);
    assert.equal(payment.paidWithinTolerance, true);
    assert.equal(payment.attempts[0]!.status, 'paid');
    assert.equal(payment.attempts[0]!.overpaid, false);
  });
  it('one smallest unit more short is underpaid', () => {
    const { payment, events } = within(pay('waiting', [dep(PAY - 10_001n)]), 100);
    assert.equal(payment.status, 'underpaid');
    assert.deepEqual(events, ['payment.underpaid']);
    assert.equal(payment.paidWithinTolerance, undefined);
  });
  it('the allowed shortfall is rounded down: 100 bps of 999 allows 9', () => {
    const a = { payAmount: 999n };
    assert.equal(within(pay('waiting', [dep(990n)], {}, a), 100).payment.status, 'paid');
    assert.equal(within(pay('waiting', [dep(989n)], {}, a), 100).payment.status, 'underpaid');
  });
  it('with tolerance 0 (the default) the spec rules hold: one unit short is underpaid', () => {
    assert.equal(within(pay('waiting', [dep(PAY - 1n)]), 0).payment.status, 'underpaid');
    assert.equal(step(withDeposits(pay('waiting'), [dep(PAY - 1n)])).payment.status, 'underpaid');
  });
  it('money still pending is waited for: a short confirmed part is not paid early', () => {
    const { payment } = within(pay('waiting', [dep(PAY - 10_000n), dep(5_000n, 'pending')]), 100);
    assert.equal(payment.status, 'confirming');
  });
  it('an underpaid payment whose rest arrives within tolerance becomes paid', () => {
    const { payment, events } = within(pay('underpaid', [dep(HALF), dep(HALF - 10_000n)]), 100);
    assert.equal(payment.status, 'paid');
    assert.deepEqual(events, ['payment.paid']);
    assert.equal(payment.paidWithinTolerance, true);
  });
  it('short within tolerance after the coin hold is late, and auto-accepted within tolerance', () => {
    const short = [dep(PAY - 10_000n, 'confirmed', { seenAt: at(20) })];
    const { payment, events } = within(pay('waiting', short), 100);
    assert.equal(payment.status, 'late');
    assert.deepEqual(events, ['payment.late']);
    const accepted = within(payment, 100, tick, at(40));
    assert.equal(accepted.payment.status, 'paid');
    assert.equal(accepted.payment.paidWithinTolerance, true);
  });
  it('an underpayment the merchant accepts is not within tolerance', () => {
    const { payment } = within(pay('underpaid', [dep(HALF)]), 100, accept);
    assert.equal(payment.status, 'paid');
    assert.equal(payment.paidWithinTolerance, false);
  });
  it('a reorg below the amount it was paid with undoes it, and clears the flag', () => {
    const paid = within(pay('waiting', [dep(PAY - 20_000n), dep(10_000n)]), 100).payment;
    assert.equal(paid.status, 'paid');
    const orphaned = withDeposits(paid, [
      paid.attempts[0]!.deposits[0]!,
      { ...paid.attempts[0]!.deposits[1]!, status: 'orphaned' },
    ]);
    const { payment, events } = within(orphaned, 100);
    assert.deepEqual(events, ['payment.reorged']);
    assert.equal(payment.status, 'underpaid');
    assert.equal(payment.paidWithinTolerance, false);
  });
});

describe('the coin choice the payer sees', () => {
  type Dep = { token?: string; amount: bigint; status: DepositStatus; confirmations: number };
  /** A coin choice as the API shows it: USDC unless named, 1 000 000 units due, 3 confirmations required. */
  const choice = (id: string, deposits: Dep[] = [], o: Partial<Attempt> = {}): Attempt =>
    ({
      id,
      chain: 'base',
      token: 'base:usdc',
      pay_amount: PAY.toString(),
      confirmations_required: 3,
      deposits: deposits.map((d) => ({
        tx_hash: `0x${id}`,
        token: d.token ?? o.token ?? 'base:usdc',
        amount: d.amount.toString(),
        status: d.status,
        confirmations: d.confirmations,
      })),
      ...o,
    }) as Attempt;
  const payment = (attempts: Attempt[], paid: string | null = null) =>
    ({ id: 'pay_1', attempts, paid_attempt_id: paid }) as Payment;
  const eth = (id: string, deposits: Dep[] = []) =>
    choice(id, deposits, { token: 'base:eth', pay_amount: (5n * 10n ** 14n).toString() });
  const shown = (p: Payment) => shownAttempt(p)?.id;

  it('no choice yet: nothing to show, no confirmations', () => {
    assert.equal(shownAttempt(payment([])), undefined);
    assert.equal(confirmationProgress(undefined), null);
  });
  it('while no choice holds money of its coin, the last one chosen', () => {
    assert.equal(shown(payment([choice('a'), eth('b')])), 'b');
    const orphaned = choice('a', [{ amount: PAY, status: 'orphaned', confirmations: 0 }]);
    assert.equal(shown(payment([orphaned, eth('b')])), 'b', 'money that left the chain holds nothing');
    const wrongCoin = choice('a', [{ token: 'base:eth', amount: 10n ** 15n, status: 'pending', confirmations: 1 }]);
    assert.equal(shown(payment([wrongCoin, eth('b')])), 'b', 'another coin on its address pays nothing');
  });
  it('the choice holding the money, though another was chosen after it', () => {
    const usdc = choice('a', [{ amount: PAY, status: 'pending', confirmations: 1 }]);
    assert.equal(shown(payment([usdc, eth('b')])), 'a');
    assert.deepEqual(confirmationProgress(usdc), { have: 1, need: 3 });
    assert.equal(confirmationProgress(eth('b')), null, 'no money, no count: never "3 of 3"');
  });
  it("the engine's order: confirmed share, then seen share, ties to the latest", () => {
    const half = (id: string, status: DepositStatus) =>
      choice(id, [{ amount: PAY / 2n, status, confirmations: status === 'pending' ? 0 : 3 }]);
    assert.equal(shown(payment([half('a', 'confirmed'), half('b', 'pending')])), 'a');
    assert.equal(shown(payment([half('a', 'pending'), half('b', 'pending')])), 'b');
  });
  it('a paid payment shows the choice it was paid with, whatever arrived elsewhere after', () => {
    const first = choice('a', [{ amount: PAY, status: 'confirmed', confirmations: 3 }]);
    const more = choice('b', [{ amount: 2n * PAY, status: 'confirmed', confirmations: 9 }]);
    assert.equal(shown(payment([first, more], 'a')), 'a');
  });
  it("confirmations: the least-confirmed of the choice's own coin still on chain, at most the number required", () => {
    const a = choice('a', [
      { amount: 1n, status: 'confirmed', confirmations: 7 },
      { amount: 1n, status: 'pending', confirmations: 2 },
      { amount: 1n, status: 'orphaned', confirmations: 0 },
      { token: 'base:eth', amount: 1n, status: 'pending', confirmations: 0 },
    ]);
    assert.deepEqual(confirmationProgress(a), { have: 2, need: 3 });
    const done = choice('a', [{ amount: PAY, status: 'confirmed', confirmations: 40 }]);
    assert.deepEqual(confirmationProgress(done), { have: 3, need: 3 });
  });
});

describe('hold and capture (capture_method manual)', () => {
  const manual = (status: PaymentStatus, deposits: DepositState[] = [], o: Partial<PaymentState> = {}) =>
    pay(status, deposits, { captureMethod: 'manual', ...o }, status === 'authorized' ? { status: 'authorized' } : {});
  const authorized: Trigger = { kind: 'authorized', attemptId: 'att_1' };
  const release: Trigger = { kind: 'hold_released' };
  /** The payment with a capture deposit of `amount` on its held coin choice, and the trigger reporting it. */
  const capture = (p: PaymentState, amount: bigint): [PaymentState, Trigger] => {
    const d = dep(amount, 'confirmed', { seenAt: at(40) });
    return [withDeposits(p, [...p.attempts[0]!.deposits, d]), { kind: 'captured', depositId: d.id }];
  };

  table([
    {
      name: 'waiting → authorized: the hold is locked in escrow',
      given: manual('waiting'),
      trigger: authorized,
      status: 'authorized',
      events: ['payment.authorized'],
      check: attempt('authorized'),
    },
    {
      name: 'expired → authorized: the authorization was confirmed after the 24 hours',
      given: manual('expired', [], {}),
      trigger: authorized,
      status: 'authorized',
      events: ['payment.authorized'],
    },
    {
      name: 'authorized → cancelled: the hold released before any capture',
      given: manual('authorized'),
      trigger: release,
      status: 'cancelled',
      events: ['payment.cancelled'],
      check: (p) => {
        attempt('expired')(p);
        assert.equal(p.holdReleased, true);
      },
    },
    {
      name: 'paid stays paid when the rest of the hold is released, silently',
      given: manual('paid', [dep(HALF)]),
      trigger: release,
      status: 'paid',
      events: [],
      check: (p) => assert.equal(p.holdReleased, true),
    },
    {
      name: 'refunded stays refunded when the rest is released',
      given: manual('refunded', [dep(HALF)], { paidAttemptId: 'att_1' }),
      trigger: release,
      status: 'refunded',
      events: [],
    },
    {
      name: 'a released hold released again changes nothing',
      given: manual('cancelled', [], { holdReleased: true }),
      trigger: release,
      status: 'cancelled',
      events: [],
    },
    {
      name: 'a waiting manual payment ignores deposits: its money comes only by captures',
      given: manual('waiting'),
      deposits: [dep(PAY)],
      status: 'waiting',
      events: [],
    },
  ]);

  it('the first capture makes it paid (paid, then captured); a second adds to what was paid', () => {
    const [p1, c1] = capture(step(manual('waiting'), authorized).payment, 300_000n);
    const first = step(p1, c1, at(40));
    assert.equal(first.payment.status, 'paid');
    assert.deepEqual(first.events, ['payment.paid', 'payment.captured']);
    assert.equal(first.payment.paidAmount, 300_000n);
    assert.equal(first.payment.paidWithinTolerance, false, 'a partial capture is not a shortfall');
    assert.equal(first.payment.paidAttemptId, 'att_1');
    assert.equal(first.payment.attempts[0]!.status, 'paid');
    const [p2, c2] = capture(first.payment, 200_000n);
    const second = step(p2, c2, at(50));
    assert.equal(second.payment.status, 'paid');
    assert.deepEqual(second.events, ['payment.captured']);
    assert.equal(second.payment.paidAmount, 500_000n);
    assert.deepEqual(second.payment.paidAt, at(40), 'paid when first captured');
    // Nothing else moves it: a tick and a deposits_changed send nothing.
    assert.deepEqual(step(second.payment, tick, at(DAY * 30)).events, []);
    assert.deepEqual(step(second.payment).events, []);
    // A refund returns the captures; the rest of the hold is released later without an event.
    const refunded = step(second.payment, refund);
    assert.equal(refunded.payment.status, 'refunded');
    assert.deepEqual(step(refunded.payment, release).events, []);
  });

  it('an authorized payment never expires and keeps its coin choice authorized', () => {
    const p = step(manual('waiting'), authorized).payment;
    const later = step(p, tick, at(DAY * 8));
    assert.equal(later.payment.status, 'authorized');
    assert.equal(later.payment.attempts[0]!.status, 'authorized');
    assert.deepEqual(later.events, []);
  });

  refusals([
    {
      name: 'authorize an automatic payment',
      given: pay('waiting'),
      trigger: authorized,
      message: /capture_method manual/,
    },
    {
      name: 'authorize twice',
      given: manual('authorized'),
      trigger: authorized,
      message: /is authorized/,
    },
    {
      name: 'authorize an unknown coin choice',
      given: manual('waiting'),
      trigger: { kind: 'authorized', attemptId: 'att_9' },
      message: /no coin choice att_9/,
    },
    {
      name: 'capture a waiting payment',
      given: manual('waiting', [dep(HALF, 'confirmed', { id: 'dep_cap' })]),
      trigger: { kind: 'captured', depositId: 'dep_cap' },
      message: /is waiting/,
    },
    {
      name: 'capture an automatic payment',
      given: pay('paid', [dep(PAY, 'confirmed', { id: 'dep_auto' })]),
      trigger: { kind: 'captured', depositId: 'dep_auto' },
      message: /capture_method manual/,
    },
    {
      name: 'release the hold of an automatic payment',
      given: pay('paid', [dep(PAY)]),
      trigger: release,
      message: /capture_method manual/,
    },
    {
      name: 'release a waiting hold (nothing is held)',
      given: manual('waiting'),
      trigger: release,
      message: /holds nothing/,
    },
    {
      name: 'refund an authorized payment before any capture',
      given: manual('authorized'),
      trigger: refund,
      message: /nothing to refund/,
    },
    {
      name: 'cancel an authorized payment (void releases it)',
      given: manual('authorized'),
      trigger: cancel,
      message: /only a waiting payment/i,
    },
  ]);
});
