/**
 * What the subscriptions module's services share: the Subscription object rendered from its rows and its payments'
 * state (read through the payments module), `subscription.*` events published into the webhook outbox, and the
 * customer mails put into the email outbox by reference (composer.ts builds them when sent).
 */
import type { Clock } from '../../core/clock.ts';
import type { Logger } from '../../core/log.ts';
import type { Db, DbOrTx, Tx } from '../../db/index.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EmailService, MailReference } from '../email/index.ts';
import type { MerchantService } from '../merchants/index.ts';
import type { PaymentService, PaymentSummary } from '../payments/index.ts';
import type { Simulator } from '../simulator/index.ts';
import type { EventInput, EventPublisher } from '../webhooks/index.ts';
import type { CustomerLinks } from './customer-link.ts';
import { subscriptionMail, type SubscriptionMailKind } from './mail.ts';
import type { SubscriptionEventType } from './model.ts';
import { serializeSubscription, type Subscription } from './schema.ts';
import { invoicesOf, type InvoiceRow, type SubscriptionRow } from './store/subscriptions.ts';
import { chargesOf, grantsOf, type ChargeRow, type GrantRow } from './store/charges.ts';
import type { ChargeStatus, GrantStatus } from './model.ts';

export interface SubscriptionDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  payments: PaymentService;
  /** Ends a test subscription's payments when its clock is advanced past their 24 hours. */
  simulator: Simulator;
  events: EventPublisher;
  email: EmailService;
  audit: AuditLog;
  merchants: MerchantService;
  links: CustomerLinks;
}

/** A `subscription.*` event to publish: the subscription's row and its Subscription after the change. */
export interface SubscriptionEvent {
  row: SubscriptionRow;
  data: Subscription;
  type: SubscriptionEventType;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The subscription `id` as the audit log names what a change was made to. */
export const auditTarget = (id: string) => ({ type: 'subscription', id });

/** What charged subscriptions add to their object: every grant and every charge attempt, by subscription. */
export interface ChargeFacts {
  grants: Map<string, GrantRow[]>;
  charges: Map<string, ChargeRow[]>;
}

export const NO_CHARGES: ChargeFacts = { grants: new Map(), charges: new Map() };

/** The grants and charges of the subscriptions `rows` that have any (two queries; none for invoiced ones). */
export async function chargeFacts(db: DbOrTx, rows: readonly SubscriptionRow[]): Promise<ChargeFacts> {
  // A subscription switched back to invoices keeps showing its grant and charges.
  const ids = rows.map((r) => r.id);
  const [grants, charges] = await Promise.all([grantsOf(db, ids), chargesOf(db, ids)]);
  return { grants: group(grants), charges: group(charges) };
}

function group<T extends { subscription_id: string }>(rows: Iterable<T>): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const list = out.get(r.subscription_id);
    if (list) list.push(r);
    else out.set(r.subscription_id, [r]);
  }
  return out;
}

const CHARGE_STATUS: Record<ChargeRow['status'], ChargeStatus> = {
  scheduled: 'pending',
  submitted: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
};

/** The grant a Subscription shows: the latest that got anywhere (a grant still on its way, or whose relay failed, is `none`). */
function grantJson(r: SubscriptionRow, grants: readonly GrantRow[], charges: readonly ChargeRow[]) {
  const g = [...grants].reverse().find((x) => x.status !== 'failed' && x.status !== 'pending');
  const status: GrantStatus = g ? (g.status as GrantStatus) : 'none';
  let next: Date | null = null;
  if (g && status === 'active' && r.status !== 'cancelled' && r.collection === 'charge_automatically') {
    for (const c of charges)
      if ((c.status === 'scheduled' || c.status === 'submitted') && (!next || c.due_at < next)) next = c.due_at;
    if (!next && r.next_due_at < g.expires_at) next = r.next_due_at;
  }
  return {
    status,
    token: g ? g.token : null,
    payer: g ? g.payer : null,
    amount_per_period: g ? g.amount_per_period : null,
    period_seconds: g ? g.period_seconds : null,
    expires_at: g ? g.expires_at.toISOString() : null,
    granted_at: iso(g ? g.granted_at : null),
    charges: g ? g.charges : 0,
    next_charge_at: iso(next),
  };
}

/** Invoices by subscription, each list in period and seq order. */
export function bySubscription(invoices: Iterable<InvoiceRow>): Map<string, InvoiceRow[]> {
  const out = group(invoices);
  for (const list of out.values()) list.sort((a, b) => a.period - b.period || a.seq - b.seq);
  return out;
}

/** The API's Subscription object, fields in the spec's order, every field present. */
export function subscriptionJson(
  r: SubscriptionRow,
  invoices: readonly InvoiceRow[],
  payments: ReadonlyMap<string, PaymentSummary>,
  facts: ChargeFacts,
): Subscription {
  const grants = facts.grants.get(r.id) ?? [];
  const charges = facts.charges.get(r.id) ?? [];
  const tokenOf = new Map(grants.map((g) => [g.id, g.token]));
  return {
    id: r.id,
    merchant_id: r.merchant_id,
    customer: { email: r.customer_email, name: r.customer_name },
    title: r.title,
    amount_usd_cents: r.amount_usd_cents,
    interval: r.interval,
    interval_count: r.interval_count,
    grace_days: r.grace_days,
    status: r.status,
    started_at: r.started_at.toISOString(),
    next_due_at: r.next_due_at.toISOString(),
    periods_invoiced: r.periods_invoiced,
    periods_paid: r.periods_paid,
    last_payment_id: r.last_payment_id,
    success_url: r.success_url,
    ...(r.locale ? { locale: r.locale } : {}),
    metadata: (r.metadata ?? {}) as Record<string, unknown>,
    cancelled_at: iso(r.cancelled_at),
    cancellation_reason: r.cancellation_reason,
    created_at: r.created_at.toISOString(),
    collection: r.collection,
    grant: grantJson(r, grants, charges),
    charges: charges.map((c) => ({
      id: c.id,
      period: c.period,
      attempt: c.attempt,
      status: CHARGE_STATUS[c.status],
      amount: c.amount,
      token: tokenOf.get(c.grant_id)!,
      payment_id: c.payment_id,
      transaction: c.tx_hash,
      failure_reason: c.failure_reason,
      failure_message: c.failure_message,
      created_at: c.created_at.toISOString(),
      settled_at: iso(c.settled_at),
    })),
    invoices: invoices.map((i) => {
      const p = payments.get(i.payment_id);
      if (!p) throw new Error(`payment ${i.payment_id} of subscription ${r.id} not found`);
      return {
        payment_id: i.payment_id,
        period: i.period,
        status: p.status,
        amount_usd_cents: p.price_amount,
        checkout_url: p.checkout_url,
        created_at: p.created_at.toISOString(),
        expires_at: p.expires_at.toISOString(),
        paid_at: iso(p.paid_at),
      };
    }),
  };
}

export class Presenter {
  constructor(readonly deps: SubscriptionDeps) {}

  /** The Subscription objects of `rows` (any mix of merchants and modes): two queries per mode, whatever their number. */
  async present(db: DbOrTx, rows: readonly SubscriptionRow[]): Promise<Subscription[]> {
    if (rows.length === 0) return [];
    const invoices = await invoicesOf(
      db,
      rows.map((r) => r.id),
    );
    const [payments, facts] = await Promise.all([this.paymentsOf(db, rows, invoices), chargeFacts(db, rows)]);
    const bySub = bySubscription(invoices);
    return rows.map((r) => subscriptionJson(r, bySub.get(r.id) ?? [], payments, facts));
  }

  /** The state of the payments of `invoices`, whose subscriptions are among `subs` (any mix of modes): one query per mode. */
  async paymentsOf(
    db: DbOrTx,
    subs: Iterable<Pick<SubscriptionRow, 'id' | 'mode'>>,
    invoices: Iterable<InvoiceRow>,
  ): Promise<Map<string, PaymentSummary>> {
    const modeOf = new Map([...subs].map((s) => [s.id, s.mode]));
    const ids: Record<'test' | 'live', string[]> = { test: [], live: [] };
    for (const i of invoices) {
      const mode = modeOf.get(i.subscription_id);
      if (mode) ids[mode].push(i.payment_id);
    }
    const payments = new Map<string, PaymentSummary>();
    for (const mode of ['test', 'live'] as const)
      for (const [id, s] of await this.deps.payments.summaries(db, mode, ids[mode])) payments.set(id, s);
    return payments;
  }

  /** Publishes `types` for the subscription, each with `data` (its state after the change), in the caller's transaction. */
  async publish(
    tx: Tx,
    row: SubscriptionRow,
    data: Subscription,
    types: readonly SubscriptionEventType[],
  ): Promise<void> {
    await this.deps.events.publishMany(tx, this.events(types.map((type) => ({ row, data, type }))));
  }

  /** The webhook outbox's inputs for subscription events (`data`: the Subscription after the change). */
  events(list: readonly SubscriptionEvent[]): EventInput<Subscription>[] {
    return list.map(({ row, data, type }) => ({
      mode: row.mode,
      merchantId: row.merchant_id,
      type,
      orderingKey: row.id,
      data,
      serialize: serializeSubscription,
      destination: null,
    }));
  }

  /**
   * A subscription mail to enqueue, about `about` (the payment of an invoice or reminder, or the subscription): the
   * customer's link it carries lasts from now as `CustomerLinks.expiry` says (wall clock).
   */
  mail(row: SubscriptionRow, kind: SubscriptionMailKind, about: string, dedupeKey: string): MailReference {
    const nextDueWall = new Date(row.next_due_at.getTime() - Number(row.clock_offset_ms));
    return subscriptionMail(row, kind, about, this.deps.links.expiry(this.deps.clock.now(), nextDueWall), dedupeKey);
  }
}
