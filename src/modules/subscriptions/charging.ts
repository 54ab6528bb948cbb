/**
 * Charging subscriptions under their payers' grants (collection `charge_automatically`, docs/subscriptions.md).
 *
 * The scheduler invoices a period as always (an ordinary payment) and, for a subscription with an active grant,
 * records a charge for it in the same transaction instead of mailing the invoice (`firstCharge`). This worker then
 * drives every charge to its end, one short database transaction between network calls (never one held across
 * them):
 *   scheduled  due: is it still to be charged (subscription not cancelled, not switched to invoices, period unpaid,
 *              grant active and covering the period, its slot on chain still open)? The family checks on chain what
 *              would refuse it (grant revoked or ended, balance, allowance) — so a refused charge costs no gas —
 *              then, in ONE transaction, the charge becomes `submitted` and the family records its transfer (id =
 *              the charge's) in its one transfer queue, which signs, sends and follows it like every hot-wallet
 *              transfer: recorded before signed, followed after a crash, never sent twice.
 *   submitted  followed until the family says it succeeded (the token's transfer found in the receipt, with the
 *              network's confirmations) or failed; never submitted again.
 *   succeeded  in ONE transaction: the charge settles, the period's waiting payment is paid with the charge's
 *              transfer as its deposit (the payments engine credits the ledger and sends `payment.paid`; the
 *              subscriptions hook counts the period and sends `subscription.paid`, which shows the charge), and the
 *              receipt is mailed.
 *   failed     `subscription.charge_failed` with the reason, the customer mailed the period's payment to pay by
 *              hand (once per period), and — for a short balance or a failed transaction — the next attempt
 *              scheduled (model.ts CHARGE_RETRY_AFTER_MS) while it falls before the period's grace ends and before
 *              the next period's slot on chain. A revoked or ended grant ends (`subscription.grant_ended`): the next
 *              periods are invoiced by email.
 * Two workers never submit one charge: a charge is leased (`FOR UPDATE SKIP LOCKED`, `locked_until`) and every
 * transition is guarded by the status it leaves. The chain guards the rest: the collector takes one charge per
 * period at most.
 */
import type { ChargeCheck, ChargeScheme, ChargeState, StoredGrant } from '../../chains/charges.ts';
import type { ChainRegistry } from '../../chains/registry.ts';
import type { TokenConfig } from '../../chains/types.ts';
import { MINUTE } from '../../core/clock.ts';
import { tenantOf } from '../../core/tenant.ts';
import { newId } from '../../core/ids.ts';
import { WorkNotifier } from '../../core/wakers.ts';
import { afterCommit, withTx, type Tx } from '../../db/index.ts';
import { ENDS_GRANT, refusalReason, RETRIED, retryAt, windowEnd } from './charge-rules.ts';
import {
  cancelScheduled,
  chargeById,
  chargeLater,
  grantById,
  insertCharges,
  leaseDueCharges,
  markFailed,
  markSubmitted,
  periodCharges,
  releaseCharge,
  setGrantStatus,
  submittedCharges,
  type ChargeRow,
  type GrantRow,
  type NewCharge,
} from './store/charges.ts';
import { MAIL_KINDS } from './mail.ts';
import {
  CHARGE_FOLLOW_MS,
  CHARGE_NOT_YET_MS,
  INVOICE_LIFETIME_MS,
  type ChargeFailureReason,
  type SubscriptionEventType,
} from './model.ts';
import type { Presenter } from './presenter.ts';
import { settleCharge } from './charge-settlement.ts';
import { simulatedCheck, simulatedState } from './simulated.ts';
import { clockOf, invoicesOf, loadSubscription, type InvoiceRow, type SubscriptionRow } from './store/subscriptions.ts';

/** Charges a pass takes at once, and how long it holds them. */
const CHARGE_BATCH = 50;
const CHARGE_LEASE_MS = 2 * MINUTE;

export interface ChargingDeps {
  chains: ChainRegistry;
  /** The families' recurring-charge schemes (read when used: families load after the modules are built). */
  schemes: () => ChargeScheme[];
}

export interface ChargeResult {
  submitted: number;
  succeeded: number;
  failed: number;
}

export class Charging extends WorkNotifier {
  constructor(
    private readonly p: Presenter,
    private readonly c: ChargingDeps,
  ) {
    super();
  }

  private get deps() {
    return this.p.deps;
  }

  /** The first charge of a period invoiced at `now` (the subscription's clock) under `grant`, due at once. */
  firstCharge(row: SubscriptionRow, grant: GrantRow, period: number, now: Date, wall: Date): NewCharge {
    return {
      id: newId('chg', wall.getTime()),
      merchant_id: row.merchant_id,
      mode: row.mode,
      subscription_id: row.id,
      grant_id: grant.id,
      period,
      attempt: 1,
      amount: grant.amount_per_period,
      status: 'scheduled',
      due_at: now,
      created_at: wall,
    };
  }

  /** Wakes this process's worker once `tx` commits. */
  wake(tx: Tx): void {
    afterCommit(tx, () => this.nudge());
  }

  /** One pass: submits or follows every charge due now (only those of `subscriptionId` when given: the test API). */
  async runDue(subscriptionId?: string): Promise<ChargeResult> {
    const result: ChargeResult = { submitted: 0, succeeded: 0, failed: 0 };
    for (;;) {
      const wall = this.deps.clock.now();
      const due = await leaseDueCharges(this.deps.db, wall, CHARGE_LEASE_MS, CHARGE_BATCH, subscriptionId);
      if (due.length === 0) return result;
      for (const charge of due) {
        try {
          await this.drive(charge, result);
        } catch (err) {
          // Its lease is kept: it is looked at again when the lease ends.
          this.deps.log.error(
            { err, chargeId: charge.id, subscriptionId: charge.subscription_id },
            'subscription charge step failed; trying again when its lease ends',
          );
        }
      }
      if (due.length < CHARGE_BATCH) return result;
    }
  }

  private async drive(charge: ChargeRow, result: ChargeResult): Promise<void> {
    if (charge.status === 'scheduled') {
      if (!(await this.submit(charge))) return;
      result.submitted++;
      charge = (await chargeById(this.deps.db, charge.id))!;
    }
    const end = await this.follow(charge);
    if (end === 'succeeded') result.succeeded++;
    else if (end === 'failed') result.failed++;
  }

  // ---- Submitting ----

  /** A scheduled charge: checked, then submitted (true), or ended or put off (false). */
  private async submit(charge: ChargeRow): Promise<boolean> {
    const db = this.deps.db;
    const tenant = tenantOf(charge);
    const sub = (await loadSubscription(db, tenant, charge.subscription_id))!;
    const grant = (await grantById(db, charge.grant_id))!;
    const now = clockOf(sub, this.deps.clock.now());
    const period = await this.periodOf(sub, charge.period);
    const why = this.notToCharge(sub, grant, period, now);
    if (why) {
      await this.dropCharge(charge, sub, grant, why);
      return false;
    }
    if (period.onItsWay) {
      // The customer's hand payment of the period is confirming: charged only if it does not pay the period.
      await chargeLater(db, charge.id, new Date(now.getTime() + CHARGE_NOT_YET_MS));
      return false;
    }
    const scheme = this.schemeOf(grant);
    const stored = this.stored(grant);
    const amount = BigInt(charge.amount);
    const verdict = scheme
      ? await scheme.check(stored, amount, now)
      : simulatedCheck({ ...stored, funded: !!grant.funded }, amount);
    if (!verdict.ok) {
      if (verdict.reason === 'not_started') {
        await chargeLater(db, charge.id, new Date(now.getTime() + CHARGE_NOT_YET_MS));
        return false;
      }
      await this.fail(charge, 'scheduled', refusalReason(verdict), verdict.message, null);
      return false;
    }
    const submitted = await withTx(db, async (tx) => {
      if (!(await markSubmitted(tx, charge.id, this.deps.clock.now(), new Date(now.getTime() + CHARGE_FOLLOW_MS))))
        return false;
      await scheme?.recordCharge(tx, stored, charge.id, amount);
      return true;
    });
    if (!submitted) return false;
    this.deps.log.info(
      {
        chargeId: charge.id,
        subscriptionId: sub.id,
        period: charge.period,
        attempt: charge.attempt,
        chain: grant.chain,
      },
      'subscription charge submitted',
    );
    try {
      await scheme?.push(grant.mode, grant.chain, charge.id);
    } catch (err) {
      // Recorded: the family's sender loop carries it on.
      this.deps.log.warn({ err, chargeId: charge.id }, 'subscription charge could not be sent now');
    }
    return true;
  }

  /** Why a scheduled charge is not to be made after all, or null when it is. */
  private notToCharge(
    sub: SubscriptionRow,
    grant: GrantRow,
    period: PeriodView,
    now: Date,
  ): { message: string; grantEnds?: 'exhausted'; mailInvoice: boolean } | null {
    if (sub.status === 'cancelled') return { message: 'The subscription is cancelled.', mailInvoice: false };
    if (period.paid) return { message: 'The period is paid.', mailInvoice: false };
    if (sub.collection !== 'charge_automatically')
      return { message: 'The subscription is invoiced by email now.', mailInvoice: true };
    if (grant.status !== 'active') return { message: 'The grant is no longer active.', mailInvoice: true };
    if (period.dueAt.getTime() >= grant.expires_at.getTime())
      return { message: 'The grant has ended.', grantEnds: 'exhausted', mailInvoice: true };
    if (now.getTime() >= this.windowEnd(sub, grant, period.number).getTime() || now >= period.payableUntil)
      return { message: 'The time to charge this period has passed.', mailInvoice: true };
    return null;
  }

  /** A charge not made after all: cancelled; its period's invoice mailed when nothing else tells the customer. */
  private async dropCharge(
    charge: ChargeRow,
    sub: SubscriptionRow,
    grant: GrantRow,
    why: { message: string; grantEnds?: 'exhausted'; mailInvoice: boolean },
  ): Promise<void> {
    await withTx(this.deps.db, async (tx) => {
      const wall = this.deps.clock.now();
      if ((await cancelScheduled(tx, { chargeId: charge.id }, why.message, wall)).length === 0) return;
      const events: SubscriptionEventType[] = [];
      if (why.grantEnds && (await this.endGrant(tx, grant, why.grantEnds))) events.push('subscription.grant_ended');
      const row = (await loadSubscription(tx, tenantOf(sub), sub.id, true))!;
      if (why.mailInvoice && charge.attempt === 1) await this.mailInvoice(tx, row, charge.period);
      if (events.length > 0) await this.publish(tx, row, events);
    });
  }

  // ---- Following ----

  /** A submitted charge: looked at again later, or settled. */
  private async follow(charge: ChargeRow): Promise<'pending' | 'succeeded' | 'failed' | 'gone'> {
    if (charge.status !== 'submitted') return 'gone';
    const grant = (await grantById(this.deps.db, charge.grant_id))!;
    const scheme = this.schemeOf(grant);
    const stored = this.stored(grant);
    const amount = BigInt(charge.amount);
    let state: ChargeState = scheme
      ? await scheme.chargeState(stored, charge.id, amount)
      : simulatedState(stored, charge.id);
    if (state.status === 'pending' && scheme) {
      // Move its transfer on where it can (signed, broadcast, confirmed), then look again.
      await scheme.push(grant.mode, grant.chain, charge.id).catch(() => {});
      state = await scheme.chargeState(stored, charge.id, amount);
    }
    if (state.status === 'pending') {
      const sub = (await loadSubscription(this.deps.db, tenantOf(charge), charge.subscription_id))!;
      await chargeLater(
        this.deps.db,
        charge.id,
        new Date(clockOf(sub, this.deps.clock.now()).getTime() + CHARGE_FOLLOW_MS),
      );
      return 'pending';
    }
    if (state.status === 'succeeded') {
      await settleCharge(this.p, charge, grant, state);
      return 'succeeded';
    }
    // Why it failed: what the chain says of the grant now (revoked, ended, balance), else the transaction itself.
    let verdict: ChargeCheck = { ok: true };
    if (scheme)
      verdict = await scheme.check(stored, amount, this.deps.clock.now()).catch((): ChargeCheck => ({ ok: true }));
    const reason =
      verdict.ok || verdict.reason === 'not_started' || verdict.reason === 'already_charged'
        ? 'transaction_failed'
        : refusalReason(verdict);
    await this.fail(charge, 'submitted', reason, verdict.ok ? state.message : verdict.message, state.transaction);
    return 'failed';
  }

  // ---- Failing ----

  /**
   * A charge that failed: `subscription.charge_failed`, the pay-by-hand mail on the period's first failure, the
   * next attempt when one may cure it, and the grant's end when it is revoked or used up.
   */
  private async fail(
    charge: ChargeRow,
    from: 'scheduled' | 'submitted',
    reason: ChargeFailureReason,
    message: string,
    txHash: string | null,
  ): Promise<void> {
    const tenant = tenantOf(charge);
    await withTx(this.deps.db, async (tx) => {
      const wall = this.deps.clock.now();
      if (!(await markFailed(tx, charge.id, from, reason, message, txHash, wall))) return;
      const sub = (await loadSubscription(tx, tenant, charge.subscription_id, true))!;
      const grant = (await grantById(tx, charge.grant_id, true))!;
      const events: SubscriptionEventType[] = ['subscription.charge_failed'];
      const ends = ENDS_GRANT[reason];
      if (ends && (await this.endGrant(tx, grant, ends))) events.push('subscription.grant_ended');
      const earlier = await periodCharges(tx, sub.id, charge.period);
      if (RETRIED.has(reason) && sub.status !== 'cancelled') {
        const view = await this.periodOf(sub, charge.period, tx);
        const next = retryAt(
          { ...view, windowEnd: this.windowEnd(sub, grant, charge.period) },
          earlier.length,
          clockOf(sub, wall),
        );
        if (next)
          await insertCharges(tx, [
            { ...this.firstCharge(sub, grant, charge.period, next, wall), attempt: charge.attempt + 1 },
          ]);
      }
      // The customer hears of the first failure of the period, with the payment to pay by hand.
      if (!earlier.some((c) => c.id !== charge.id && c.status === 'failed') && sub.status !== 'cancelled') {
        const open = await this.openPayment(tx, sub, charge.period);
        if (open)
          await this.deps.email.enqueue(
            tx,
            this.p.mail(
              sub,
              MAIL_KINDS.chargeFailed,
              open,
              `subscription:${sub.id}:period:${charge.period}:charge_failed`,
            ),
          );
      }
      await this.publish(tx, sub, events);
      this.wake(tx);
    });
    this.deps.log.warn(
      { chargeId: charge.id, subscriptionId: charge.subscription_id, period: charge.period, reason, message },
      'subscription charge failed',
    );
  }

  /** The end of the time a period of `sub` may be charged in under `grant` (charge-rules.ts). */
  windowEnd(sub: SubscriptionRow, grant: GrantRow, period: number): Date {
    return windowEnd(
      { startedAt: sub.started_at, interval: sub.interval, intervalCount: sub.interval_count },
      { startsAt: grant.starts_at, periodSeconds: grant.period_seconds, expiresAt: grant.expires_at },
      period,
    );
  }

  /**
   * Ends an active grant (revoked, or used up): its scheduled charges will not be made, and on a revoke a charge
   * handed to the transfer queue but not signed yet (the hot wallet short of gas, say) is withdrawn from the queue
   * and fails `grant_revoked` with nothing sent (one already signed may land and is followed as usual; a grant used
   * up still pays what it covered). Each period that falls back to invoices this way, its charge untried, gets its
   * invoice mailed. False when it had ended.
   */
  async endGrant(tx: Tx, grant: GrantRow, to: 'revoked' | 'exhausted'): Promise<boolean> {
    const wall = this.deps.clock.now();
    const ended = await setGrantStatus(tx, grant.id, ['active', 'pending'], to, wall);
    if (!ended) return false;
    const why = to === 'revoked' ? 'The grant was revoked.' : 'The grant has ended.';
    const sub = (await loadSubscription(tx, tenantOf(grant), grant.subscription_id))!;
    await this.stopCharges(tx, sub, { grantId: grant.id }, why);
    const scheme = to === 'revoked' ? this.schemeOf(grant) : null;
    const withdrawn: ChargeRow[] = [];
    for (const c of scheme ? await submittedCharges(tx, grant.id) : []) {
      if (!(await scheme!.withdrawCharge(tx, this.stored(grant), c.id, why))) continue;
      await markFailed(tx, c.id, 'submitted', 'grant_revoked', `${why} The charge was not sent.`, null, wall);
      withdrawn.push(c);
    }
    await this.mailUntried(tx, sub, withdrawn);
    this.deps.log.info(
      { grantId: grant.id, subscriptionId: grant.subscription_id, status: to },
      'subscription grant ended',
    );
    return true;
  }

  // ---- Shared ----

  /** The family scheme of a grant's network; null for a simulated grant. */
  schemeOf(grant: Pick<GrantRow, 'enforcement' | 'mode' | 'chain'>): ChargeScheme | null {
    if (grant.enforcement === 'simulated') return null;
    const scheme = this.c.schemes().find((s) => s.kinds(grant.mode).some((k) => k.chain === grant.chain));
    if (!scheme) throw new Error(`no family takes grants on ${grant.chain} in ${grant.mode} mode now`);
    return scheme;
  }

  /** A grant as its family reads it. */
  stored(g: GrantRow): StoredGrant {
    return {
      mode: g.mode,
      chain: g.chain,
      token: this.token(g),
      payer: g.payer,
      receiver: g.receiver,
      amountPerPeriod: BigInt(g.amount_per_period),
      periodSeconds: g.period_seconds,
      start: Math.floor(g.starts_at.getTime() / 1000),
      end: Math.floor(g.expires_at.getTime() / 1000),
      total: BigInt(g.total),
      salt: String((g.terms as Record<string, unknown>).salt ?? ''),
      key: g.key,
      data: g.terms as Record<string, unknown>,
    };
  }

  private token(g: GrantRow): TokenConfig {
    const token = this.c.chains.token(g.mode, g.token);
    if (!token) throw new Error(`grant ${g.id}: ${g.token} is not configured in ${g.mode} mode`);
    return token;
  }

  /**
   * What the worker needs of a period: its due time, end of grace, whether any of its payments is paid, and whether
   * money paying one by hand is on its way.
   */
  async periodOf(sub: SubscriptionRow, period: number, tx?: Tx): Promise<PeriodView> {
    const db = tx ?? this.deps.db;
    const invoices = (await invoicesOf(db, [sub.id])).filter((i) => i.period === period);
    const first = invoices[0];
    if (!first) throw new Error(`subscription ${sub.id} has no invoice for period ${period}`);
    const states = await this.deps.payments.summaries(
      db,
      sub.mode,
      invoices.map((i) => i.payment_id),
    );
    return {
      onItsWay: [...states.values()].some((p) => p.status === 'detected' || p.status === 'confirming'),
      number: period,
      dueAt: first.due_at,
      payableUntil: new Date(Math.max(first.grace_ends_at.getTime(), first.issued_at.getTime() + INVOICE_LIFETIME_MS)),
      paid: invoices.some((i) => i.paid),
    };
  }

  /** The period's payment still open to pay by hand (its latest, while waiting), or null. */
  private async openPayment(tx: Tx, sub: SubscriptionRow, period: number): Promise<string | null> {
    const latest = (await invoicesOf(tx, [sub.id])).filter((i: InvoiceRow) => i.period === period).at(-1);
    if (!latest) return null;
    const states = await this.deps.payments.summaries(tx, sub.mode, [latest.payment_id]);
    return states.get(latest.payment_id)?.status === 'waiting' ? latest.payment_id : null;
  }

  /** Cancels the scheduled charges `where` names; the periods whose first charge was never tried get their invoice. */
  async stopCharges(
    tx: Tx,
    sub: SubscriptionRow,
    where: { grantId?: string; subscriptionId?: string },
    why: string,
  ): Promise<void> {
    await this.mailUntried(tx, sub, await cancelScheduled(tx, where, why, this.deps.clock.now()));
  }

  /** The invoice mail of each period among `stopped` whose first charge was never tried: it falls back to invoices. */
  private async mailUntried(tx: Tx, sub: SubscriptionRow, stopped: readonly ChargeRow[]): Promise<void> {
    for (const c of stopped) if (c.attempt === 1) await this.mailInvoice(tx, sub, c.period);
  }

  /**
   * The period's invoice mail, as the scheduler would have sent it (once: its dedupe key is the scheduler's), while
   * its first payment is still the one open to pay (after that the fresh payments' reminders tell the customer).
   */
  private async mailInvoice(tx: Tx, sub: SubscriptionRow, period: number): Promise<void> {
    if (sub.status === 'cancelled') return;
    const first = (await invoicesOf(tx, [sub.id])).find((i) => i.period === period && i.seq === 1);
    if (!first || (await this.openPayment(tx, sub, period)) !== first.payment_id) return;
    await this.deps.email.enqueue(
      tx,
      this.p.mail(sub, MAIL_KINDS.invoice, first.payment_id, `subscription:${sub.id}:period:${period}:1`),
    );
  }

  async publish(tx: Tx, row: SubscriptionRow, types: readonly SubscriptionEventType[]): Promise<void> {
    if (types.length === 0) return;
    const fresh = (await loadSubscription(tx, tenantOf(row), row.id))!;
    const [json] = await this.p.present(tx, [fresh]);
    await this.p.publish(tx, fresh, json!, types);
  }

  /** Gives a charge this worker leased back at once (tests stop between steps). */
  release(id: string): Promise<void> {
    return releaseCharge(this.deps.db, id);
  }
}

export interface PeriodView {
  number: number;
  dueAt: Date;
  /** Until the period may still be paid: the end of its grace, and at least its first payment's 24 hours. */
  payableUntil: Date;
  paid: boolean;
  /** A payment of the period has money on its way (`detected`, `confirming`): not charged while it may pay it. */
  onItsWay: boolean;
}
