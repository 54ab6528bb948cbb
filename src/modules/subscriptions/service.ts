/**
 * Subscriptions: scheduled invoices for a customer. Each period an ordinary payment is created through the payments
 * module (`order_id` `<sub id>-<period>`, `metadata.subscription_id` and `metadata.period`) and its checkout link is
 * emailed through the email outbox; `subscription.*` events go through the webhook outbox.
 *
 * This file is the module as the rest of Kasse sees it: create (with Idempotency-Key), read, list and cancel for the
 * API and the dashboard; the customer's side of the signed link; and the payments hook that keeps a subscription's
 * periods true as its payments change (paid, reorged, expired), inside the payment's own transaction. The scheduler
 * (scheduler.ts) does the due work; the rules are in policy.ts and docs/subscriptions.md. A subscription with
 * collection `charge_automatically` is charged each period under its payer's grant (grants.ts: given, revoked,
 * simulated; charging.ts: the charges, through the families' recurring-charge schemes).
 */
import type { Mode } from '../../core/mode.ts';
import { tenantOf, type Tenant } from '../../core/tenant.ts';
import { pageOf } from '../../core/cursor.ts';
import { invalid, invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { afterCommit, withTx, type Tx } from '../../db/index.ts';
import type { Actor } from '../audit/index.ts';
import { idempotent, requestHash, validateKey } from '../idempotency/index.ts';
import { assertHttpUrl } from '../../core/urls.ts';
import { localeParam } from '../../core/i18n/index.ts';
import type { PaymentChange } from '../payments/index.ts';
import type { Interval } from './calendar.ts';
import { customerActor, type LinkCheck } from './customer-link.ts';
import { subscriptionMailComposer } from './composer.ts';
import { MAIL_KINDS } from './mail.ts';
import { LIST_LIMIT_DEFAULT, SUBSCRIPTION_LIMITS, type CancellationReason, type SubscriptionStatus } from './model.ts';
import { ENDED_UNPAID } from './policy.ts';
import { auditTarget, Presenter, type SubscriptionDeps } from './presenter.ts';
import { SubscriptionScheduler, type DueResult } from './scheduler.ts';
import { Charging, type ChargeResult, type ChargingDeps } from './charging.ts';
import { Grants } from './grants.ts';
import { cancelScheduled } from './store/charges.ts';
import type { Collection } from './model.ts';
import type { Subscription } from './schema.ts';
import {
  clearPeriodChecks,
  clockOf,
  countPaid,
  findSubscription,
  hasOverdue,
  insertSubscription,
  invoiceOfPayment,
  listSubscriptionRows,
  loadSubscription,
  markCancelled,
  periodPaidBy,
  reschedule,
  setInvoiceCheck,
  setInvoicePaid,
  setRunAt,
  type SubscriptionRow,
} from './store/subscriptions.ts';
import { WorkNotifier } from '../../core/wakers.ts';

/** NOTE: metadata up to 4 kB as on payments (UTF-8 bytes of its JSON text). */
export const METADATA_MAX_BYTES = 4096;

export interface CreateSubscriptionInput {
  customer_email: string;
  customer_name?: string;
  title: string;
  amount_usd_cents: number;
  interval: Interval;
  interval_count?: number;
  grace_days?: number;
  start_at?: string;
  success_url?: string;
  /** The customer's language of its emails, page and payments: a tag from LOCALES (src/core/i18n). */
  locale?: string;
  metadata?: Record<string, unknown>;
  /** `send_invoice` (default) or `charge_automatically`. */
  collection?: Collection;
}

export interface ListSubscriptionsQuery {
  status?: SubscriptionStatus;
  customer_email?: string;
  cursor?: string;
  limit?: number;
}

/** What the customer's page shows: the subscription, its merchant's name, and the customer's link state. */
export interface CustomerView {
  subscription: Subscription;
  mode: Mode;
  merchantId: string;
  merchantName: string;
}

export class SubscriptionService extends WorkNotifier {
  readonly scheduler: SubscriptionScheduler;
  /** Charges under payers' grants: the worker that submits and follows them. */
  readonly charging: Charging;
  /** Payers' grants (the subscription page, the simulator) and the merchant's switch back to invoices. */
  readonly grants: Grants;
  private readonly p: Presenter;

  constructor(
    private readonly deps: SubscriptionDeps,
    charges: ChargingDeps,
  ) {
    super();
    this.p = new Presenter(deps);
    this.charging = new Charging(this.p, charges);
    this.scheduler = new SubscriptionScheduler(this.p, this.charging);
    this.grants = new Grants(this.p, this.charging, charges);
    this.charging.onWork(() => this.nudge());
    deps.payments.engine.observe((tx, change) => this.onPaymentChange(tx, change));
    deps.email.composeWith(Object.values(MAIL_KINDS), subscriptionMailComposer(this.p));
  }

  /**
   * One due-work pass (what the workers run, and tests after moving the fake clock): the scheduler's, then grants
   * whose relay is on its way, then the charges due (submitted, followed, settled).
   */
  async runDue(): Promise<DueResult & { charges: ChargeResult }> {
    const due = await this.scheduler.runDue();
    await this.grants.followGrants();
    return { ...due, charges: await this.charging.runDue() };
  }

  /**
   * Creates a subscription (201), or replays the first answer for a repeated Idempotency-Key with the same body
   * (200; a different body is 409). When `start_at` is now or absent, the first period is invoiced in the same
   * transaction, so the answer already carries its payment.
   */
  async create(
    tenant: Tenant,
    input: CreateSubscriptionInput,
    idempotencyKey: string | undefined,
    actor: Actor,
  ): Promise<{ status: number; subscription: Subscription }> {
    const { mode, merchantId } = tenant;
    const key = validateKey(idempotencyKey);
    const now = this.deps.clock.now();
    if (input.success_url !== undefined) assertHttpUrl(input.success_url, 'success_url', mode === 'live');
    const locale = input.locale === undefined ? null : localeParam(input.locale);
    const metadata = input.metadata ?? {};
    if (Buffer.byteLength(JSON.stringify(metadata), 'utf8') > METADATA_MAX_BYTES)
      throw invalid(`metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON`, 'metadata');
    let start = now;
    if (input.start_at !== undefined) {
      start = new Date(input.start_at);
      if (start.getTime() < now.getTime() - SUBSCRIPTION_LIMITS.startPastToleranceMs)
        throw invalid('start_at must not be in the past', 'start_at');
      if (start.getTime() > now.getTime() + SUBSCRIPTION_LIMITS.startAheadMaxMs)
        throw invalid('start_at must be within 5 years from now', 'start_at');
      if (start < now) start = now;
    }
    const request = { key, hash: requestHash('POST', '/v1/subscriptions', input) };
    const result = await idempotent(this.deps.db, tenant, request, 201, async (tx) => {
      const row = await insertSubscription(tx, {
        id: newId('sub'),
        merchant_id: merchantId,
        mode,
        customer_email: input.customer_email,
        customer_name: input.customer_name ?? null,
        title: input.title,
        amount_usd_cents: input.amount_usd_cents,
        interval: input.interval,
        interval_count: input.interval_count ?? 1,
        grace_days: input.grace_days ?? 0,
        status: 'active',
        started_at: start,
        next_due_at: start,
        success_url: input.success_url ?? null,
        locale,
        metadata: JSON.stringify(metadata),
        collection: input.collection ?? 'send_invoice',
        run_at: start,
        created_at: now,
        updated_at: now,
      });
      await this.deps.audit.record(tx, tenant, actor, 'subscription.create', auditTarget(row.id), {
        title: input.title,
        amount_usd_cents: input.amount_usd_cents,
        interval: input.interval,
      });
      const [created] = await this.p.present(tx, [row]);
      await this.p.publish(tx, row, created!, ['subscription.created']);
      if (start.getTime() <= now.getTime()) await this.scheduler.apply(tx, [row], now);
      return (await this.p.present(tx, [(await loadSubscription(tx, tenant, row.id))!]))[0]!;
    });
    return { status: result.status, subscription: result.body };
  }

  async get(tenant: Tenant, id: string): Promise<Subscription> {
    const row = await loadSubscription(this.deps.db, tenant, id);
    if (!row) throw notFound('subscription');
    return (await this.p.present(this.deps.db, [row]))[0]!;
  }

  /** Newest first, filtered by status and customer email (any case); `next_cursor` is opaque, null on the last page. */
  async list(tenant: Tenant, q: ListSubscriptionsQuery): Promise<{ data: Subscription[]; next_cursor: string | null }> {
    const limit = q.limit ?? LIST_LIMIT_DEFAULT;
    const rows = await listSubscriptionRows(this.deps.db, tenant, q, limit);
    const { page, next_cursor } = pageOf(rows, limit, (r) => r.id);
    return {
      data: await this.p.present(this.deps.db, page),
      next_cursor,
    };
  }

  /**
   * Cancels a subscription now (final): no more invoices, payments still waiting are withdrawn (cancelled), the
   * customer is told by email. 422 `invalid_state` when it is already cancelled.
   */
  async cancel(
    tenant: Tenant,
    id: string,
    actor: Actor,
    reason: CancellationReason = 'merchant',
  ): Promise<Subscription> {
    const row = await withTx(this.deps.db, async (tx) => {
      const locked = await loadSubscription(tx, tenant, id, true);
      if (!locked) throw notFound('subscription');
      if (locked.status === 'cancelled') throw invalidState('This subscription is already cancelled.');
      const wall = this.deps.clock.now();
      const cancelled = await markCancelled(tx, id, clockOf(locked, wall), reason, wall);
      await cancelScheduled(tx, { subscriptionId: id }, 'The subscription is cancelled.', wall);
      await this.deps.audit.record(tx, tenant, actor, 'subscription.cancel', auditTarget(id), { reason });
      const [json] = await this.p.present(tx, [cancelled]);
      await this.p.publish(tx, cancelled, json!, ['subscription.cancelled']);
      await this.deps.email.enqueue(
        tx,
        this.p.mail(cancelled, MAIL_KINDS.cancelled, id, `subscription:${id}:cancelled`),
      );
      return cancelled;
    });
    // After the cancellation committed (lock order: payments before subscriptions); a worker retries if this fails.
    try {
      await this.scheduler.withdraw(row);
    } catch (err) {
      this.deps.log.error(
        { err, subscriptionId: id },
        'withdrawing the payments of a cancelled subscription failed; a worker will retry',
      );
    }
    return this.get(tenant, id);
  }

  // ---- The customer's signed link ----

  /** The subscription a customer link names, with its merchant's name; null when the link opens nothing. */
  async forCustomer(check: LinkCheck): Promise<CustomerView | null> {
    if (!check.ok) return null;
    const row = await findSubscription(this.deps.db, check.subscriptionId);
    if (!row) return null;
    const [subscription] = await this.p.present(this.deps.db, [row]);
    const names = await this.deps.merchants.names([row.merchant_id]);
    return {
      subscription: subscription!,
      mode: row.mode,
      merchantId: row.merchant_id,
      merchantName: names.get(row.merchant_id) ?? '',
    };
  }

  /** The customer cancels through their link (the audit log records it with the client's address). */
  async cancelByCustomer(check: LinkCheck, ip: string | null): Promise<Subscription> {
    if (!check.ok) throw notFound('subscription');
    const row = await findSubscription(this.deps.db, check.subscriptionId);
    if (!row) throw notFound('subscription');
    return this.cancel(tenantOf(row), row.id, customerActor(ip), 'customer');
  }

  // ---- The payments hook ----

  /**
   * Runs inside every payment change (payment row locked). A subscription's payment that became paid pays its
   * period — once, however many of the period's payments are paid — makes a past-due subscription active again
   * when no other period is overdue, and sends `subscription.paid`; a paid one that a reorg took back un-pays the
   * period (the scheduler looks at it again); a payment that ended unpaid (expired, cancelled, refunded) before its
   * check makes the check due now, so past due, the fresh payment and the reminder (or, with no grace left, the
   * cancellation) follow at once. It is written here, in the payment's transaction, so a process that dies after the
   * change commits leaves the work due for any worker; the wake only makes this process's worker run sooner. Any
   * other change of a payment whose check is due wakes the scheduler too.
   */
  private async onPaymentChange(tx: Tx, change: PaymentChange): Promise<void> {
    if (typeof change.payment.metadata?.subscription_id !== 'string') return;
    // The invoice row, not the metadata (a merchant can write any metadata on its own payments), names the subscription.
    const invoice = await invoiceOfPayment(tx, change.payment.id);
    if (!invoice) return;
    const row = (await loadSubscription(
      tx,
      { mode: change.mode, merchantId: change.merchantId },
      invoice.subscription_id,
      true,
    ))!;
    const wall = this.deps.clock.now();
    const paid = change.payment.status === 'paid';
    if (change.events.includes('payment.paid') && paid && !invoice.paid) {
      await setInvoicePaid(tx, invoice.payment_id, true);
      if (await periodPaidBy(tx, invoice.subscription_id, invoice.period, invoice.payment_id)) return;
      await clearPeriodChecks(tx, row.id, invoice.period);
      const status = row.status === 'past_due' && !(await hasOverdue(tx, row.id)) ? 'active' : row.status;
      const updated = await countPaid(tx, row.id, 1, status, wall);
      await reschedule(tx, row.id);
      const [json] = await this.p.present(tx, [updated]);
      await this.p.publish(tx, updated, json!, ['subscription.paid']);
      return;
    }
    if (change.events.includes('payment.reorged') && !paid && invoice.paid) {
      await setInvoicePaid(tx, invoice.payment_id, false);
      if (await periodPaidBy(tx, invoice.subscription_id, invoice.period, invoice.payment_id)) return;
      await countPaid(tx, row.id, -1, null, wall);
      if (row.status !== 'cancelled') {
        // The period is open again: the scheduler looks at its payment now (money on its way is waited for).
        await setInvoiceCheck(tx, invoice.payment_id, clockOf(row, wall));
        await reschedule(tx, row.id);
      }
      return;
    }
    if (invoice.check_at === null || row.status === 'cancelled') return;
    const now = clockOf(row, wall);
    if (invoice.check_at > now) {
      if (!ENDED_UNPAID.has(change.payment.status)) return;
      // The payment ended unpaid before its check: dunning starts now, not when its 24 hours would have ended.
      await setInvoiceCheck(tx, invoice.payment_id, now);
    }
    await setRunAt(tx, row.id, wall);
    afterCommit(tx, () => this.nudge());
  }
}

export type { SubscriptionRow };
