import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AttemptState, DepositState, DepositStatus, PaymentEventType, PaymentState, PaymentStatus } from '../../src/modules/payments/model.ts';
import { isFinal, moneySeen, next, TransitionError, type Transition, type Trigger } from '../../src/modules/payments/state.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
/** Minutes after the payment was created. */
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const DAY = 24 * 60;
const PAY = 1_000_000n;

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
  return { id: 'att_1', token: 'base:usdc', status: 'waiting', payAmount: PAY, rate: '1.00', expiresAt: at(10), overpaid: false, wrongAsset: false, deposits: [], ...o };
}
/** A payment whose single attempt has `status` (the attempt's status defaults to the payment's) and `deposits`. */
function pay(status: PaymentStatus, deposits: DepositState[] = [], o: Partial<PaymentState> = {}, a: Partial<AttemptState> = {}): PaymentState {
  const attemptStatus = status === 'cancelled' ? 'expired' : status;
  const paid = status === 'paid' || (status === 'refunded' && a.status !== undefined);
  return {
    id: 'pay_000000000000000000000000000000000001',
    status,
    createdAt: at(0),
    expiresAt: at(DAY),
    paidAt: paid ? at(5) : null,
    paidAttemptId: paid ? 'att_1' : null,
    attempts: [att({ status: attemptStatus, deposits, ...a })],
    ...o,
  };
}
function step(p: PaymentState, trigger: Trigger = { kind: 'deposits_changed' }, now = at(30), rates: Record<string, string> = {}): Transition {
  return next(p, trigger, { now, rates: new Map(Object.entries(rates)) });
}
/** The same payment with its first attempt's deposits replaced. */
function withDeposits(p: PaymentState, deposits: DepositState[], attempt = 0): PaymentState {
  const q = structuredClone(p);
  q.attempts[attempt]!.deposits = deposits;
  return q;
}

interface Row {
  name: string;
  given: PaymentState;
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
      const { payment, events } = step(r.given, r.trigger, r.now, r.rates);
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
    it(r.name, () => assert.throws(() => step(r.given, r.trigger), (e: unknown) => e instanceof TransitionError && r.message.test(e.message)));
  }
}

const paidAt30 = (p: PaymentState) => {
  assert.deepEqual(p.paidAt, at(30));
  assert.equal(p.paidAttemptId, 'att_1');
  assert.equal(p.attempts[0]!.status, 'paid');
};
const attemptIs = (status: string) => (p: PaymentState) => assert.equal(p.attempts[0]!.status, status);

const half = () => dep(PAY / 2n);
const rest = (minute: number, status: DepositStatus = 'confirmed') => dep(PAY / 2n, status, { seenAt: at(minute) });
const late = (o: Partial<PaymentState> = {}, a: Partial<AttemptState> = {}) => pay('late', [half(), rest(20)], o, a);

describe('spec transition table', () => {
  table([
    { name: 'waiting → detected when money is seen, not yet confirmed', given: pay('waiting'), ...deposits([dep(PAY, 'pending')]), status: 'detected', events: ['payment.detected'], check: attemptIs('detected') },
    { name: 'detected → confirming when confirmations count', given: pay('detected', [dep(PAY, 'pending')]), ...deposits([dep(PAY, 'pending', { confirmations: 1 })]), status: 'confirming', events: ['payment.confirming'], check: attemptIs('confirming') },
    { name: 'detected → paid when confirmed and enough (paid_at set)', given: pay('detected', [dep(PAY, 'confirmed')]), status: 'paid', events: ['payment.paid'], check: paidAt30 },
    { name: 'confirming → paid when confirmed and enough', given: pay('confirming', [dep(PAY, 'final')]), status: 'paid', events: ['payment.paid'], check: paidAt30 },
    { name: 'detected → underpaid when confirmed but short', given: pay('detected', [half()]), status: 'underpaid', events: ['payment.underpaid'], check: attemptIs('underpaid') },
    { name: 'confirming → underpaid when confirmed but short', given: pay('confirming', [half()]), status: 'underpaid', events: ['payment.underpaid'] },
    { name: 'underpaid → paid when the rest arrives within the coin hold', given: pay('underpaid', [half(), rest(9, 'pending')]), ...deposits([half(), rest(9)]), status: 'paid', events: ['payment.paid'], check: paidAt30 },
    { name: 'underpaid → late when the rest arrives after the coin hold', given: pay('underpaid', [half()]), ...deposits([half(), rest(11)]), status: 'late', events: ['payment.late'], check: (p) => { attemptIs('late')(p); assert.equal(p.paidAt, null); } },
    { name: 'late → paid by automatic acceptance (within 24 h, price moved ≤ 3 %)', given: late(), trigger: { kind: 'tick' }, rates: { 'base:usdc': '1.02' }, status: 'paid', events: ['payment.paid'], check: paidAt30 },
    { name: 'underpaid → paid on accept', given: pay('underpaid', [half()]), trigger: { kind: 'accept' }, status: 'paid', events: ['payment.paid'], check: (p) => { paidAt30(p); assert.equal(p.paidAmount, PAY / 2n); } },
    { name: 'late → paid on accept (emits payment.paid: decision)', given: late(), trigger: { kind: 'accept' }, status: 'paid', events: ['payment.paid'], check: paidAt30 },
    { name: 'late → refunded on refund', given: late(), trigger: { kind: 'refund_sent', attemptId: null }, status: 'refunded', events: ['payment.refunded'], check: attemptIs('refunded') },
    { name: 'waiting → expired after 24 hours with nothing paid', given: pay('waiting', [], {}, { expiresAt: at(DAY + 5) }), trigger: { kind: 'tick' }, now: at(DAY), status: 'expired', events: ['payment.expired'], check: attemptIs('expired') },
    { name: 'waiting → cancelled on cancel before any money', given: pay('waiting'), trigger: { kind: 'cancel' }, status: 'cancelled', events: ['payment.cancelled'], check: attemptIs('expired') },
    { name: 'paid → refunded when a refund is sent', given: pay('paid', [dep(PAY)]), trigger: { kind: 'refund_sent', attemptId: null }, status: 'refunded', events: ['payment.refunded'], check: (p) => { attemptIs('refunded')(p); assert.equal(p.paidAttemptId, 'att_1'); } },
    { name: 'underpaid → refunded when a refund is sent', given: pay('underpaid', [half()]), trigger: { kind: 'refund_sent', attemptId: 'att_1' }, status: 'refunded', events: ['payment.refunded'] },
    { name: 'detected → refunded when a refund is sent', given: pay('detected', [dep(PAY, 'pending')]), trigger: { kind: 'refund_sent', attemptId: null }, status: 'refunded', events: ['payment.refunded'] },
  ]);
});

/** Row fields for a deposits_changed whose new deposits replace the given payment's. */
function deposits(ds: DepositState[]): { trigger: Trigger } {
  pendingDeposits = ds;
  return { trigger: { kind: 'deposits_changed' } };
}
let pendingDeposits: DepositState[] | null = null;
