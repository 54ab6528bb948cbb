/**
 * The subscription scheduler: one due-work pass (`runDue`, what the workers run every few seconds and what tests run
 * after moving the fake clock) selects subscriptions whose `run_at` has come with `FOR UPDATE SKIP LOCKED` — so any
 * number of worker processes share them and none takes one another holds — and, for a batch of them in one
 * transaction, runs the pure plan (policy.ts) and writes what it says: the payments (through the payments module,
 * in this transaction), the invoice rows and subscription rows (through the store, one statement each per batch), the
 * `subscription.*` events and the customer mail (stored by reference, composed when sent: composer.ts).
 * A period is invoiced once because its subscription's row is locked while it is written and `(subscription,
 * period, seq)` is unique; a crash before commit leaves nothing, a crash after leaves the mail in the outbox, which
 * the email worker sends once. Nothing is held in memory between passes.
 *
 * Lock order: a payment's row before its subscription's (the payments hook runs inside the payment's change), so
 * while it holds subscriptions locked the scheduler only creates payments; open payments of a cancelled subscription
 * are withdrawn (cancelled) after the cancellation committed, one transaction each.
 */
import type { Mode } from '../../core/mode.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import { MINUTE } from '../../core/clock.ts';
import { ApiError, invalidState, notFound } from '../../core/errors.ts';
import { withTx, type Tx } from '../../db/index.ts';
import type { MailReference } from '../email/index.ts';
import { systemActor, type Actor } from '../audit/index.ts';
import type { IssuedPaymentInput, Payment, PaymentSummary } from '../payments/index.ts';
import { MAIL_KINDS } from './mail.ts';
import type { SubscriptionEventType } from './model.ts';
import { plan, type Plan, type Step } from './policy.ts';
import {
  auditTarget,
  bySubscription,
  chargeFacts,
  subscriptionJson,
  type Presenter,
  type SubscriptionEvent,
} from './presenter.ts';
import { currentGrants, insertCharges, nextChargeDue, type GrantRow, type NewCharge } from './store/charges.ts';
import type { Charging } from './charging.ts';
import type { Subscription } from './schema.ts';
import {
  claimDue,
  clearChecks,
  clearWithdrawal,
  clockOf,
  insertInvoices,
  lockDue,
  setClockOffset,
  setInvoiceChecks,
  setRunAt,
  writeStates,
  invoicesOf,
  leaseWithdrawals,
  loadSubscription,
  openInvoice,
  openInvoicesOf,
  stateOf,
  type InvoiceRow,
  type SubscriptionRow,
} from './store/subscriptions.ts';

/** Subscriptions planned and written per transaction. */
export const SCHEDULER_BATCH = 200;
/**
 * Batches one pass writes at once, each in its own transaction: while PostgreSQL writes one, the process plans and
 * encodes the other, so a pass keeps both busy.
 */
export const SCHEDULER_LANES = 2;
/** A subscription whose step failed is tried again after this long (logged as an error). */
const DEFER_MS = 5 * MINUTE;
/** How long a worker holds a cancelled subscription while it withdraws its open payments. */
const WITHDRAW_LEASE_MS = 5 * MINUTE;
/** NOTE: an advance stops after this many scheduler steps (a payment with money on its way is looked at hourly). */
const ADVANCE_MAX_STEPS = 2000;

export interface DueResult {
  /** Subscriptions the pass planned. */
  subscriptions: number;
  /** Periods invoiced. */
  invoiced: number;
  /** Fresh payments for overdue periods. */
  reissued: number;
  /** Subscriptions cancelled because grace ended unpaid. */
  cancelled: number;
  /** Open payments of cancelled subscriptions withdrawn. */
  withdrawn: number;
}

const zero = (): DueResult => ({ subscriptions: 0, invoiced: 0, reissued: 0, cancelled: 0, withdrawn: 0 });
function add(a: DueResult, b: DueResult): void {
  a.subscriptions += b.subscriptions;
  a.invoiced += b.invoiced;
  a.reissued += b.reissued;
  a.cancelled += b.cancelled;
  a.withdrawn += b.withdrawn;
}

const EVENT_OF: Partial<Record<Step['kind'], SubscriptionEventType>> = {
  invoice: 'subscription.invoiced',
  reissue: 'subscription.invoiced',
  past_due: 'subscription.past_due',
  cancel: 'subscription.cancelled',
};

/** What a batch knows of its subscriptions' invoices and their payments: those it read, and those it wrote. */
interface Known {
  invoices: InvoiceRow[];
  payments: Map<string, PaymentSummary>;
}

interface Work {
  row: SubscriptionRow;
  now: Date;
  plan: Plan;
  /** The payment each invoice/reissue step created. */
  issued: Map<Step, Payment>;
  /** The grant its periods are charged under (collection `charge_automatically` with an active grant). */
  grant: GrantRow | null;
  /** The invoice steps whose period is charged (no invoice mail: the charge tells, or its fallback mails). */
  charged: Set<Step>;
}

export class SubscriptionScheduler {
  constructor(
    private readonly p: Presenter,
    private readonly charging: Charging,
  ) {}

  private get deps() {
    return this.p.deps;
  }

  /** One pass over everything due now: batches of due subscriptions, then withdrawals for cancelled ones. */
  async runDue(): Promise<DueResult> {
    const total = zero();
    // Both lanes end before the pass does, also when one fails (the next pass starts with nothing of this one running).
    const lanes = await Promise.allSettled(Array.from({ length: SCHEDULER_LANES }, () => this.lane(total)));
    for (const l of lanes) if (l.status === 'rejected') throw l.reason;
    total.withdrawn = await this.withdrawDue();
    return total;
  }

  /** Batch after batch until nothing is due; the pass's lanes claim disjoint batches (SKIP LOCKED). */
  private async lane(total: DueResult): Promise<void> {
    for (;;) {
      const wall = this.deps.clock.now();
      let claimed: string[] = [];
      try {
        const done = await withTx(this.deps.db, async (tx) => {
          const rows = await claimDue(tx, wall, SCHEDULER_BATCH);
          claimed = rows.map((r) => r.id);
          return rows.length === 0 ? null : this.apply(tx, rows, wall);
        });
        if (!done) break;
        add(total, done);
      } catch (err) {
        if (claimed.length === 0) throw err;
        // One bad subscription must not hold back the batch: each is tried on its own.
        this.deps.log.error(
          { err, subscriptions: claimed.length },
          'subscription batch failed; running its subscriptions one by one',
        );
        for (const id of claimed) add(total, await this.one(id, wall));
      }
    }
  }

  private async one(id: string, wall: Date): Promise<DueResult> {
    try {
      return await withTx(this.deps.db, async (tx) => {
        const rows = await lockDue(tx, id, wall);
        return rows.length === 0 ? zero() : this.apply(tx, rows, wall);
      });
    } catch (err) {
      this.deps.log.error({ err, subscriptionId: id }, 'subscription step failed; trying again later');
      await setRunAt(this.deps.db, id, new Date(wall.getTime() + DEFER_MS));
      return zero();
    }
  }

  /**
   * Plans and writes the subscriptions `rows`, which the caller has locked in `tx` (claimed, just inserted, or
   * locked by id), at wall-clock time `wall`.
   */
  async apply(tx: Tx, rows: readonly SubscriptionRow[], wall: Date): Promise<DueResult> {
    // Every invoice of the batch and its payment's state, read once: the plan looks at the open ones, and the events'
    // Subscriptions show them all with what this batch adds.
    const invoices = await invoicesOf(
      tx,
      rows.map((r) => r.id),
    );
    const known: Known = { invoices, payments: await this.p.paymentsOf(tx, rows, invoices) };
    const grants = await currentGrants(
      tx,
      rows.filter((r) => r.collection === 'charge_automatically').map((r) => r.id),
    );
    const bySub = bySubscription(invoices);
    const work: Work[] = rows.map((row) => {
      const now = clockOf(row, wall);
      const open = (bySub.get(row.id) ?? [])
        .filter((i) => i.check_at !== null)
        .map((i) => openInvoice(i, known.payments.get(i.payment_id)!.status));
      const grant = grants.get(row.id);
      return {
        row,
        now,
        plan: plan(stateOf(row), open, now),
        issued: new Map(),
        grant: grant?.status === 'active' ? grant : null,
        charged: new Set(),
      };
    });

    await this.issuePayments(tx, work, known);
    await this.writeInvoices(tx, work, known);
    await this.writeCharges(tx, work, wall);
    const updated = await this.writeSubscriptions(tx, work, wall);
    await this.notify(tx, work, updated, known);

    const result = zero();
    result.subscriptions = rows.length;
    for (const w of work) {
      for (const s of w.plan.steps) {
        if (s.kind === 'invoice') result.invoiced++;
        else if (s.kind === 'reissue') result.reissued++;
        else if (s.kind === 'cancel') result.cancelled++;
      }
    }
    return result;
  }

  /** The payment of every invoice and reissue step, created through the payments module, one statement per mode. */
  private async issuePayments(tx: Tx, work: Work[], known: Known): Promise<void> {
    const wanted: Array<{ w: Work; step: Extract<Step, { kind: 'invoice' | 'reissue' }> }> = [];
    for (const w of work)
      for (const step of w.plan.steps) if (step.kind === 'invoice' || step.kind === 'reissue') wanted.push({ w, step });
    for (const mode of ['test', 'live'] as Mode[]) {
      const mine = wanted.filter((x) => x.w.row.mode === mode);
      const inputs: IssuedPaymentInput[] = mine.map(({ w, step }) => ({
        merchantId: w.row.merchant_id,
        price_amount: w.row.amount_usd_cents,
        order_id: `${w.row.id}-${step.period}`,
        description: `${w.row.title} (period ${step.period})`,
        success_url: w.row.success_url,
        locale: w.row.locale,
        metadata: { subscription_id: w.row.id, period: step.period },
      }));
      const payments = await this.deps.payments.createIn(tx, mode, inputs);
      mine.forEach((x, i) => {
        x.w.issued.set(x.step, payments[i]!);
      });
      for (const p of payments) {
        known.payments.set(p.id, {
          id: p.id,
          status: p.status,
          price_amount: p.price_amount,
          checkout_url: p.checkout_url,
          created_at: new Date(p.created_at),
          expires_at: new Date(p.expires_at),
          paid_at: null,
        });
      }
    }
  }

  /** New invoice rows, and the check times the plans moved, settled or cleared. */
  private async writeInvoices(tx: Tx, work: Work[], known: Known): Promise<void> {
    const inserts: Array<Omit<InvoiceRow, 'paid'>> = [];
    const checks = new Map<string, Date | null>();
    const cancelled: string[] = [];
    for (const w of work) {
      for (const step of w.plan.steps) {
        if (step.kind === 'invoice' || step.kind === 'reissue') {
          inserts.push({
            payment_id: w.issued.get(step)!.id,
            subscription_id: w.row.id,
            period: step.period,
            seq: step.kind === 'invoice' ? 1 : step.seq,
            due_at: step.dueAt,
            grace_ends_at: step.graceEndsAt,
            issued_at: w.now,
            check_at: step.checkAt,
          });
          if (step.kind === 'reissue') checks.set(step.replaces, null);
        } else if (step.kind === 'recheck') checks.set(step.paymentId, step.at);
        else if (step.kind === 'settle') checks.set(step.paymentId, null);
        else if (step.kind === 'cancel') cancelled.push(w.row.id);
      }
    }
    await insertInvoices(tx, inserts);
    for (const i of inserts) known.invoices.push({ ...i, paid: false });
    await setInvoiceChecks(tx, checks);
    await clearChecks(tx, cancelled);
  }

  /**
   * A charge for each invoiced period of a subscription charged under an active grant, due now: the charging
   * worker submits it (charging.ts), or mails the invoice when the grant cannot be charged after all.
   */
  private async writeCharges(tx: Tx, work: Work[], wall: Date): Promise<void> {
    const charges: NewCharge[] = [];
    for (const w of work) {
      if (!w.grant) continue;
      for (const step of w.plan.steps) {
        if (step.kind !== 'invoice') continue;
        w.charged.add(step);
        charges.push(this.charging.firstCharge(w.row, w.grant, step.period, w.now, wall));
      }
    }
    await insertCharges(tx, charges);
    if (charges.length > 0) this.charging.wake(tx);
  }

  /** Every planned subscription's new state in one statement; returns the rows as they now stand, by id. */
  private async writeSubscriptions(tx: Tx, work: Work[], wall: Date): Promise<Map<string, SubscriptionRow>> {
    const out = new Map<string, SubscriptionRow>();
    for (const w of work) {
      const { row, plan: p } = w;
      const cancelled = p.status === 'cancelled';
      const issued = [...w.issued.values()];
      const next: SubscriptionRow = {
        ...row,
        status: p.status,
        next_due_at: p.nextDueAt,
        periods_invoiced: p.periodsInvoiced,
        last_payment_id: issued.length > 0 ? issued[issued.length - 1]!.id : row.last_payment_id,
        cancelled_at: cancelled ? w.now : null,
        cancellation_reason: cancelled ? 'unpaid' : null,
        // A cancelled subscription is due at once: its open payments are to be withdrawn.
        run_at: cancelled ? wall : new Date(p.nextRunAt!.getTime() - Number(row.clock_offset_ms)),
        updated_at: wall,
      };
      out.set(row.id, next);
    }
    await writeStates(tx, [...out.values()], wall);
    return out;
  }

  /** The events and the customer mail of every step that tells someone something. */
  private async notify(tx: Tx, work: Work[], updated: Map<string, SubscriptionRow>, known: Known): Promise<void> {
    const telling = work.filter((w) => w.plan.steps.some((s) => EVENT_OF[s.kind]));
    if (telling.length === 0) return;
    const rows = telling.map((w) => updated.get(w.row.id)!);
    const bySub = bySubscription(known.invoices);
    const facts = await chargeFacts(tx, rows);
    const objects = rows.map((r) => subscriptionJson(r, bySub.get(r.id) ?? [], known.payments, facts));
    const events: SubscriptionEvent[] = [];
    const mails: MailReference[] = [];
    for (let i = 0; i < telling.length; i++) {
      const w = telling[i]!;
      const row = rows[i]!;
      const types = w.plan.steps
        .map((s) => EVENT_OF[s.kind])
        .filter((t): t is SubscriptionEventType => t !== undefined);
      for (const type of types) events.push({ row, data: objects[i]!, type });
      for (const step of w.plan.steps) {
        const key = `subscription:${row.id}`;
        if (step.kind === 'invoice' && !w.charged.has(step))
          mails.push(this.p.mail(row, MAIL_KINDS.invoice, w.issued.get(step)!.id, `${key}:period:${step.period}:1`));
        else if (step.kind === 'reissue')
          mails.push(
            this.p.mail(row, MAIL_KINDS.reminder, w.issued.get(step)!.id, `${key}:period:${step.period}:${step.seq}`),
          );
        else if (step.kind === 'cancel') mails.push(this.p.mail(row, MAIL_KINDS.cancelled, row.id, `${key}:cancelled`));
      }
    }
    // One statement each for the batch's events and mail.
    await this.deps.events.publishMany(tx, this.p.events(events));
    await this.deps.email.enqueueMany(tx, mails);
  }

  // ---- Withdrawing the open payments of cancelled subscriptions ----

  /** Withdraws the open payments of cancelled subscriptions that still have some (leased, so workers share them). */
  async withdrawDue(): Promise<number> {
    let n = 0;
    for (;;) {
      const rows = await leaseWithdrawals(this.deps.db, this.deps.clock.now(), WITHDRAW_LEASE_MS, 50);
      if (rows.length === 0) return n;
      for (const row of rows) {
        try {
          n += await this.withdraw(row);
        } catch (err) {
          this.deps.log.error(
            { err, subscriptionId: row.id },
            'withdrawing the payments of a cancelled subscription failed; trying again later',
          );
        }
      }
    }
  }

  /**
   * Cancels the payments of a cancelled subscription that are still waiting (nothing seen), so its customer cannot
   * pay for it any more; a payment with money on its way is left to finish. Each in its own transaction.
   */
  async withdraw(row: SubscriptionRow): Promise<number> {
    const open = (await invoicesOf(this.deps.db, [row.id])).filter((i) => !i.paid);
    const summaries = await this.deps.payments.summaries(
      this.deps.db,
      row.mode,
      open.map((i) => i.payment_id),
    );
    let n = 0;
    for (const i of open) {
      if (summaries.get(i.payment_id)?.status !== 'waiting') continue;
      try {
        await this.deps.payments.cancel(tenantOf(row), i.payment_id, systemActor('subscription cancelled'));
        n++;
      } catch (err) {
        // Money was seen (or it ended) since it was read: it is no longer ours to cancel.
        if (!(err instanceof ApiError && err.code === 'invalid_state')) throw err;
      }
    }
    await clearWithdrawal(this.deps.db, row.id);
    return n;
  }

  // ---- Test mode: advance ----

  /**
   * Moves a test subscription's clock to its next due time and runs the scheduler through everything that falls due
   * on the way, in order — payments whose 24 hours end are expired (the simulator's `expired`, real events), unpaid
   * periods get their daily fresh payments, charges and their retries are made, grace ends — up to and including the
   * invoice (and charge) of that next period. The mail and webhooks are the real ones. 422 `invalid_state` for a
   * cancelled subscription.
   */
  async advance(tenant: Tenant, id: string, actor: Actor): Promise<Subscription> {
    if (tenant.mode !== 'test') throw new Error(`subscription ${id} of ${tenant.merchantId}: advance is for test mode`);
    const first = await loadSubscription(this.deps.db, tenant, id);
    if (!first) throw notFound('subscription');
    if (first.status === 'cancelled')
      throw invalidState('This subscription is cancelled; there is nothing to advance to.');
    const target = first.next_due_at;
    for (let i = 0; i < ADVANCE_MAX_STEPS; i++) {
      const row = (await loadSubscription(this.deps.db, tenant, id))!;
      if (row.status === 'cancelled') break;
      const open = await openInvoicesOf(this.deps.db, [id]);
      let at = row.next_due_at;
      for (const o of open) if (o.check_at! < at) at = o.check_at!;
      const charge = await nextChargeDue(this.deps.db, id);
      if (charge && charge < at) at = charge;
      if (at > target) break;
      // Payments whose 24 hours are over on the subscription's clock end as they would have (real `payment.expired`).
      const due = open.filter((o) => o.check_at! <= at);
      const states = await this.deps.payments.summaries(
        this.deps.db,
        'test',
        due.map((o) => o.payment_id),
      );
      for (const o of due) {
        if (states.get(o.payment_id)?.status !== 'waiting') continue;
        try {
          await this.deps.simulator.simulate(tenant, o.payment_id, 'expired', systemActor('subscription advanced'));
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 'invalid_state')) throw err;
        }
      }
      await withTx(this.deps.db, async (tx) => {
        const locked = (await loadSubscription(tx, tenant, id, true))!;
        const wall = this.deps.clock.now();
        const offset = BigInt(Math.max(Number(locked.clock_offset_ms), at.getTime() - wall.getTime()));
        await setClockOffset(tx, id, offset);
        await this.apply(tx, [{ ...locked, clock_offset_ms: offset }], wall);
        if (i === 0) {
          const details = { from: clockOf(locked, wall).toISOString(), to: target.toISOString() };
          await this.deps.audit.record(tx, tenant, actor, 'subscription.advance', auditTarget(id), details);
        }
      });
      // The charges due by then, on the simulator settled at once (a chain's take their blocks).
      await this.charging.runDue(id);
    }
    const after = (await loadSubscription(this.deps.db, tenant, id))!;
    if (after.status === 'cancelled' && after.run_at !== null) await this.withdraw(after);
    const [json] = await this.p.present(this.deps.db, [(await loadSubscription(this.deps.db, tenant, id))!]);
    return json!;
  }
}
