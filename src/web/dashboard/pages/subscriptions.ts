/**
 * Subscriptions.
 *
 *   GET  /dashboard/<mode>/subscriptions              newest first, filtered by status, cursor paging
 *   GET  /dashboard/<mode>/subscriptions/<id>         customer, schedule, counts, every payment issued (its invoices)
 *   POST /dashboard/<mode>/subscriptions/<id>/cancel  cancels it (staff: the `payments.write` permission)
 *   POST /dashboard/<mode>/subscriptions/<id>/invoices  a charged subscription is invoiced by email from now on
 *                                                     (`payments.write`; audited)
 *
 * A charged subscription's page shows how it is collected, the payer's grant (amount per period, next charge, charges
 * so far, until when) and every charge attempt with its outcome (docs/subscriptions.md).
 * Everything goes through the subscriptions service with the merchant and mode of the session.
 */
import { ID_PATTERNS } from '../../../core/ids.ts';
import { formatUnits } from '../../../core/money.ts';
import { html, type Html } from '../../../core/html.ts';
import {
  every,
  type Subscription,
  SUBSCRIPTION_STATUSES,
  type SubscriptionStatus,
} from '../../../modules/subscriptions/index.ts';
import type { Ctx } from '../context.ts';
import { done, refusal, send, shell, sendShell } from '../layout.ts';
import { actionForm, errorBox, tell, type Told } from '../forms.ts';
import { amount, badge, usd, when, wrapAt } from '../format.ts';
import type { Router } from '../routing.ts';

const PAGE = 25;
const NOT_FOUND = 'There is no such subscription in this mode of your account.';

function table(ctx: Ctx, subs: Subscription[]): Html {
  if (subs.length === 0)
    return html`<p class="d-empty">No subscriptions${ctx.mode === 'test' ? ' in test mode yet. Create one with POST /v1/subscriptions and a test key' : ' yet'}.</p>`;
  return html`<table class="d-table"><thead><tr><th>Customer</th><th>Title</th><th class="d-num">Amount</th><th>Status</th><th>Next due</th><th class="d-num">Paid</th></tr></thead><tbody>${subs.map(
    (s) =>
      html`<tr><td data-label="Customer"><a href="/dashboard/${ctx.mode}/subscriptions/${s.id}">${wrapAt(s.customer.email)}</a>${s.customer.name ? html`<br><span class="d-muted">${s.customer.name}</span>` : ''}</td><td data-label="Title">${s.title}</td><td data-label="Amount" class="d-num">${usd(s.amount_usd_cents)} ${every(s.interval, s.interval_count)}</td><td data-label="Status">${badge(s.status)}</td><td data-label="Next due">${s.status === 'cancelled' ? '—' : when(s.next_due_at)}</td><td data-label="Paid" class="d-num">${s.periods_paid} / ${s.periods_invoiced}</td></tr>`,
  )}</tbody></table>`;
}

async function listPage(ctx: Ctx, query: Record<string, string>) {
  const status = (SUBSCRIPTION_STATUSES as readonly string[]).includes(query.status ?? '')
    ? (query.status as SubscriptionStatus)
    : undefined;
  let page: { data: Subscription[]; next_cursor: string | null };
  try {
    page = await ctx.kasse.subscriptions.list(ctx.tenant, { status, cursor: query.cursor || undefined, limit: PAGE });
  } catch (err) {
    tell(err);
    page = await ctx.kasse.subscriptions.list(ctx.tenant, { status, limit: PAGE });
  }
  const base = `/dashboard/${ctx.mode}/subscriptions`;
  const filters = html`<nav class="d-filters" aria-label="Status">${[
    ['', 'All'],
    ...SUBSCRIPTION_STATUSES.map((s) => [s, s.replace('_', ' ')]),
  ].map(
    ([v, label]) =>
      html`<a href="${base}${v ? `?status=${v}` : ''}"${(status ?? '') === v ? html` aria-current="page"` : ''}>${label}</a> `,
  )}</nav>`;
  const next = page.next_cursor
    ? html`<p><a class="d-btn d-secondary" href="${base}?${status ? `status=${status}&` : ''}cursor=${page.next_cursor}">Older</a></p>`
    : '';
  return send(
    ctx.reply,
    200,
    shell(ctx, {
      title: 'Subscriptions',
      active: '/subscriptions',
      body: html`${filters}${table(ctx, page.data)}${next}`,
      wide: true,
    }),
  );
}

const REASON: Record<string, string> = {
  merchant: 'by you',
  customer: 'by the customer',
  unpaid: 'unpaid at the end of grace',
};

const COLLECTION: Record<Subscription['collection'], string> = {
  send_invoice: 'Invoiced by email',
  charge_automatically: 'Charged automatically under the payer’s grant',
};

/** The grant and the charge attempts of a subscription charged automatically (or that was). */
function chargesPanel(ctx: Ctx, s: Subscription): Html | string {
  const g = s.grant;
  if (s.collection === 'send_invoice' && g.status === 'none' && s.charges.length === 0) return '';
  const units = (v: string, token: string) => {
    const t = ctx.kasse.chains.token(ctx.mode, token);
    return t ? amount(formatUnits(BigInt(v), t.decimals), t.symbol.toUpperCase()) : html`${v} (${token})`;
  };
  const network = (token: string) => {
    const id = token.split(':')[0]!;
    return ctx.kasse.chains.network(ctx.mode, id)?.name ?? id;
  };
  const grant =
    g.status === 'none'
      ? html`<p class="d-empty">The payer has not granted recurring charges yet: periods are invoiced by email until they do, on the subscription page the emails link to.</p>`
      : html`<dl class="d-facts"><dt>Grant</dt><dd>${badge(g.status)}</dd>
<dt>Amount per period</dt><dd>${units(g.amount_per_period!, g.token!)} on ${network(g.token!)}</dd>
<dt>Payer</dt><dd><code class="d-mono">${wrapAt(g.payer!)}</code></dd>
<dt>Next charge</dt><dd>${g.next_charge_at ? when(g.next_charge_at) : '—'}</dd>
<dt>Charges so far</dt><dd>${g.charges}</dd>
<dt>Granted</dt><dd>${when(g.granted_at)}</dd>
<dt>Allowed until</dt><dd>${when(g.expires_at)}</dd></dl>`;
  const attempts = s.charges.length
    ? html`<table class="d-table"><thead><tr><th>Period</th><th class="d-num">Attempt</th><th class="d-num">Amount</th><th>Outcome</th><th>Transaction</th><th>Tried</th></tr></thead><tbody>${[
        ...s.charges,
      ]
        .reverse()
        .map(
          (c) =>
            html`<tr><td data-label="Period">${c.period}</td><td data-label="Attempt" class="d-num">${c.attempt}</td><td data-label="Amount" class="d-num">${units(c.amount, c.token)}</td><td data-label="Outcome">${badge(c.status)}${c.failure_reason ? html`<br><span class="d-muted">${c.failure_reason.replace(/_/g, ' ')}: ${c.failure_message ?? ''}</span>` : ''}</td><td data-label="Transaction">${c.transaction ? html`<code class="d-mono">${wrapAt(c.transaction)}</code>` : '—'}</td><td data-label="Tried">${when(c.created_at)}</td></tr>`,
        )}</tbody></table>`
    : html`<p class="d-empty">No charge tried yet.</p>`;
  const back =
    s.collection === 'charge_automatically' && s.status !== 'cancelled' && ctx.can('payments.write')
      ? html`<p class="d-muted">Switched back to invoices, no period is charged any more: each is emailed to pay by hand. The payer's grant stays on chain unused until they revoke it.</p>${actionForm(ctx, `/dashboard/${ctx.mode}/subscriptions/${s.id}/invoices`, 'Switch to invoices')}`
      : '';
  return html`<section class="d-panel"><h2>Automatic payment</h2>${grant}${back}<h3>Charge attempts</h3>${attempts}</section>`;
}

async function subscriptionPage(ctx: Ctx, id: string, told: Told | null = null) {
  let s: Subscription;
  try {
    s = await ctx.kasse.subscriptions.get(ctx.tenant, id);
  } catch (err) {
    tell(err);
    return refusal(ctx, 404, NOT_FOUND);
  }
  const invoices = s.invoices.length
    ? html`<table class="d-table"><thead><tr><th>Period</th><th>Payment</th><th class="d-num">Amount</th><th>Status</th><th>Issued</th><th>Paid</th></tr></thead><tbody>${[
        ...s.invoices,
      ]
        .reverse()
        .map(
          (i) =>
            html`<tr><td data-label="Period">${i.period}</td><td data-label="Payment"><a href="/dashboard/${ctx.mode}/payments/${i.payment_id}"><code class="d-mono">${i.payment_id}</code></a></td><td data-label="Amount" class="d-num">${usd(i.amount_usd_cents)}</td><td data-label="Status">${badge(i.status)}</td><td data-label="Issued">${when(i.created_at)}</td><td data-label="Paid">${when(i.paid_at)}</td></tr>`,
        )}</tbody></table>`
    : html`<p class="d-empty">Nothing invoiced yet: the first period is due ${when(s.next_due_at)}.</p>`;
  const cancel =
    s.status !== 'cancelled' && ctx.can('payments.write')
      ? actionForm(ctx, `/dashboard/${ctx.mode}/subscriptions/${s.id}/cancel`, 'Cancel subscription', { danger: true })
      : '';
  const body = html`${errorBox(told)}<section class="d-panel"><dl class="d-facts">
<dt>Customer</dt><dd>${s.customer.name ? `${s.customer.name} · ` : ''}${s.customer.email}</dd>
<dt>Amount</dt><dd>${usd(s.amount_usd_cents)} ${every(s.interval, s.interval_count)}</dd>
<dt>Status</dt><dd>${badge(s.status)}${s.cancellation_reason ? ` (${REASON[s.cancellation_reason]})` : ''}</dd>
<dt>Collection</dt><dd>${COLLECTION[s.collection]}</dd>
<dt>Grace</dt><dd>${s.grace_days} day${s.grace_days === 1 ? '' : 's'}</dd>
<dt>Started</dt><dd>${when(s.started_at)}</dd>
${s.status === 'cancelled' ? html`<dt>Cancelled</dt><dd>${when(s.cancelled_at)}</dd>` : html`<dt>Next due</dt><dd>${when(s.next_due_at)}</dd>`}
<dt>Periods paid</dt><dd>${s.periods_paid} of ${s.periods_invoiced} invoiced</dd>
<dt>Id</dt><dd><code class="d-mono">${s.id}</code></dd>
</dl>${cancel}</section>
${chargesPanel(ctx, s)}<section class="d-panel"><h2>Invoices</h2>${invoices}</section>`;
  return sendShell(ctx, told, { title: s.title, active: '/subscriptions', body, wide: true });
}

export function subscriptionPages(r: Router): void {
  const { kasse } = r;
  const idOk = (id: string) => new RegExp(ID_PATTERNS.sub).test(id);

  r.page('/subscriptions', 'read', async (ctx, _p, query) => listPage(ctx, query));

  r.page('/subscriptions/:id', 'read', async (ctx, p) =>
    idOk(p.id!) ? subscriptionPage(ctx, p.id!) : refusal(ctx, 404, NOT_FOUND),
  );

  r.action('/subscriptions/:id/cancel', 'payments.write', async (ctx, _form, p) => {
    if (!idOk(p.id!)) return refusal(ctx, 404, NOT_FOUND);
    try {
      await kasse.subscriptions.cancel(ctx.tenant, p.id!, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/subscriptions/${p.id}`, 'subscription_cancelled');
    } catch (err) {
      return subscriptionPage(ctx, p.id!, tell(err));
    }
  });

  r.action('/subscriptions/:id/invoices', 'payments.write', async (ctx, _form, p) => {
    if (!idOk(p.id!)) return refusal(ctx, 404, NOT_FOUND);
    try {
      await kasse.subscriptions.grants.switchToInvoices(ctx.tenant, p.id!, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/subscriptions/${p.id}`, 'subscription_invoiced');
    } catch (err) {
      return subscriptionPage(ctx, p.id!, tell(err));
    }
  });
}
