/**
 * Home and Payments.
 *
 *   GET  /dashboard/<mode>                          balances, custody by coin, 30-day paid volume (SVG), recent payments
 *   GET  /dashboard/<mode>/payments                 filters (status, order id, dates, coin) and cursor paging
 *   GET  /dashboard/<mode>/payments.csv             the filtered list as CSV (streamed; the file name names the filter)
 *   GET  /dashboard/<mode>/payments/<id>            fee and net credited, attempts, deposits (explorer links), event
 *                                                   timeline with deliveries
 *   POST /dashboard/<mode>/payments/<id>/accept|cancel|refund
 *
 * Everything goes through the payments and webhooks services with the merchant and mode of the session.
 */
import { Readable } from 'node:stream';
import type { Mode } from '../../../core/mode.ts';
import { invalid } from '../../../core/errors.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import { html, type Html } from '../../../core/html.ts';
import { formatCents, readableAmount } from '../../../core/money.ts';
import {
  type Payment,
  PAYMENT_STATUSES,
  type PaymentSearch,
  type PaymentStatus,
} from '../../../modules/payments/index.ts';
import type { PaymentCreditTotals } from '../../../modules/ledger/index.ts';
import { coinName, coinSymbol, networkName } from '../../../chains/names.ts';
import type { Ctx } from '../context.ts';
import { done, refusal, send, shell, sendShell } from '../layout.ts';
import {
  actionForm,
  csrfField,
  errorBox,
  field,
  select,
  found,
  tell,
  type Told,
  DATE_HINTS,
  PAGE_HINT,
} from '../forms.ts';
import { amount, badge, usd, when } from '../format.ts';
import type { Router } from '../routing.ts';
import { textLength } from '../../../core/text.ts';

const PAGE = 25;

/**
 * Sections other capabilities add to a payment's page, after its facts (the tax invoice). Each is given the error of
 * a failed form and the values typed into it, to show them again.
 */
export const paymentSections: Array<
  (ctx: Ctx, p: Payment, told: Told | null, values: Record<string, string>) => Promise<Html | string>
> = [];

/** The coin a payment was paid in, else its latest choice: "25 USDC on Base Sepolia". */
function coinOf(ctx: Ctx, p: Payment): Html | string {
  const a = p.attempts.find((x) => x.id === p.paid_attempt_id) ?? p.attempts[p.attempts.length - 1];
  return a
    ? amount(
        a.received_amount !== '0' ? a.received_amount_display : a.pay_amount_display,
        coinName(ctx.kasse.chains, ctx.mode, a.token),
      )
    : '—';
}

export function paymentsTable(ctx: Ctx, payments: Payment[]): Html {
  if (payments.length === 0)
    return html`<p class="d-empty">No payments${ctx.mode === 'test' ? ' in test mode yet. Create one with a test key, or through a payment link' : ' yet'}.</p>`;
  return html`<table class="d-table"><thead><tr><th>Created</th><th>Order</th><th>Description</th><th class="d-num">Amount</th><th>Status</th><th>Coin</th></tr></thead><tbody>${payments.map(
    (p) =>
      html`<tr><td data-label="Created">${when(p.created_at)}</td><td data-label="Order"><a href="/dashboard/${ctx.mode}/payments/${p.id}">${p.order_id}</a></td><td data-label="Description">${p.description ?? ''}</td><td data-label="Amount" class="d-num">${usd(p.price_amount)}</td><td data-label="Status">${badge(p.status)}</td><td data-label="Coin">${coinOf(ctx, p)}</td></tr>`,
  )}</tbody></table>`;
}

/**
 * A server-rendered bar chart of paid volume per day. The SVG stretches to the panel's width, so the axis's dates are
 * HTML beside it: text inside a stretched SVG would be drawn stretched.
 */
function chart(days: Array<{ day: string; cents: number; count: number }>): Html {
  const W = 600;
  const H = 160;
  const max = Math.max(...days.map((d) => d.cents), 1);
  const bw = W / days.length;
  const total = days.reduce((s, d) => s + d.cents, 0);
  const bars = days.map((d, i) => {
    const h = Math.round((d.cents / max) * (H - 20));
    return html`<rect x="${(i * bw + 1).toFixed(1)}" y="${H - h}" width="${(bw - 2).toFixed(1)}" height="${h}" class="d-bar"><title>${d.day}: ${usd(d.cents)} (${d.count} paid)</title></rect>`;
  });
  return html`<figure class="d-chart"><svg viewBox="0 0 ${W} ${H + 1}" role="img" aria-labelledby="chart-t chart-d" preserveAspectRatio="none"><title id="chart-t">Paid volume, last 30 days</title><desc id="chart-d">${usd(total)} paid from ${days[0]!.day} to ${days[days.length - 1]!.day}; the highest day ${usd(max === 1 ? 0 : max)}.</desc><line x1="0" y1="${H}" x2="${W}" y2="${H}" class="d-axis"/>${bars}</svg><div class="d-ticks" aria-hidden="true"><span>${days[0]!.day.slice(5)}</span><span>${days[days.length - 1]!.day.slice(5)}</span></div><figcaption>${usd(total)} paid in the last 30 days${max > 1 ? html` · best day ${usd(max)}` : ''}</figcaption></figure>`;
}

function parseDay(text: string | undefined, param: string): Date | undefined {
  if (!text) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(`${text}T00:00:00Z`)))
    throw invalid('Use a date like 2026-03-01.', param);
  return new Date(`${text}T00:00:00Z`);
}

interface Filters {
  status: string;
  order_id: string;
  from: string;
  to: string;
  token: string;
  /** `x402`: only payments x402 clients paid. */
  source: string;
}

function filtersOf(q: Record<string, string>): { f: Filters; search: PaymentSearch } {
  const f: Filters = {
    status: q.status ?? '',
    order_id: (q.order_id ?? '').slice(0, 128),
    from: q.from ?? '',
    to: q.to ?? '',
    token: q.token ?? '',
    source: q.source ?? '',
  };
  const search: PaymentSearch = {};
  if (f.status) {
    if (!(PAYMENT_STATUSES as readonly string[]).includes(f.status)) throw invalid('Unknown status.', 'status');
    search.status = f.status as PaymentStatus;
  }
  if (f.order_id) search.order_id = f.order_id;
  search.from = parseDay(f.from, 'from');
  const to = parseDay(f.to, 'to');
  if (to) search.to = new Date(to.getTime() + 86_400_000);
  if (f.token) search.token = f.token.slice(0, 64);
  if (f.source) {
    if (f.source !== 'x402') throw invalid('Unknown source.', 'source');
    search.source = 'x402';
  }
  if (q.cursor) search.cursor = q.cursor;
  return { f, search };
}

function filterQuery(f: Filters, extra: Record<string, string> = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...f, ...extra })) if (v) p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
}

function filterForm(ctx: Ctx, f: Filters, told: Told | null): Html {
  const tokens = ctx.kasse.chains
    .tokens(ctx.mode)
    .map((t) => [t.id, coinName(ctx.kasse.chains, ctx.mode, t.id)] as [string, string]);
  return html`<form method="get" action="/dashboard/${ctx.mode}/payments" class="d-filters">
${select({ name: 'status', label: 'Status', value: f.status, options: [['', 'Any'], ...PAYMENT_STATUSES.map((s) => [s, s] as [string, string])], told })}
${field({ name: 'order_id', label: 'Order id', value: f.order_id, told })}
${field({ name: 'from', label: 'From', type: 'date', value: f.from, told })}
${field({ name: 'to', label: 'To', type: 'date', value: f.to, told })}
${select({ name: 'token', label: 'Coin', value: f.token, options: [['', 'Any'], ...tokens], told })}
${select({
  name: 'source',
  label: 'Paid by',
  value: f.source,
  options: [
    ['', 'Anyone'],
    ['x402', 'x402 clients (agents)'],
  ],
  told,
})}
<div class="d-filter-actions"><button type="submit" class="d-btn">Filter</button> <a href="/dashboard/${ctx.mode}/payments">Clear</a></div>
</form>`;
}

/** CSV field: quoted, and a leading = + - @ (a spreadsheet formula) defused with an apostrophe. */
function csvField(v: string | number | null): string {
  let s = v === null ? '' : String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return `"${s.replace(/"/g, '""')}"`;
}

/**
 * `token` is the coin's id and `coin` its name ("ETH on Base Sepolia"); amounts are exact. `fee_usd`, `swap_fee_usd`
 * and `net_usd` are what the payment's credit took and left (empty when never credited).
 */
const CSV_HEADER = [
  'id',
  'created_at',
  'status',
  'price_usd',
  'price_amount',
  'order_id',
  'description',
  'token',
  'coin',
  'pay_amount',
  'received_amount',
  'paid_at',
  'fee_usd',
  'swap_fee_usd',
  'net_usd',
  'tx_hashes',
];

function csvRow(p: Payment, credit: PaymentCreditTotals | undefined, coin: (token: string) => string): string {
  const a = p.attempts.find((x) => x.id === p.paid_attempt_id) ?? p.attempts[p.attempts.length - 1];
  const hashes = p.attempts.flatMap((x) => x.deposits.map((d) => d.tx_hash)).join(' ');
  const money = (c: bigint | undefined) => (c === undefined ? null : formatCents(c));
  return `${[
    p.id,
    p.created_at,
    p.status,
    formatCents(p.price_amount),
    p.price_amount,
    p.order_id,
    p.description,
    a?.token ?? '',
    a ? coin(a.token) : '',
    a?.pay_amount_display ?? '',
    a?.received_amount_display ?? '',
    p.paid_at,
    money(credit?.feeUsdCents),
    money(credit?.swapFeeUsdCents),
    money(credit?.netUsdCents),
    hashes,
  ]
    .map(csvField)
    .join(',')}\r\n`;
}

/** The export's file name: mode, each filter in use, and the day, e.g. `payments-test-status-paid-from-2026-03-01-2026-03-31.csv`. */
function csvFileName(mode: Mode, f: Filters, today: string): string {
  const parts = ['payments', mode];
  for (const k of ['status', 'order_id', 'token', 'from', 'to'] as const) {
    const v = f[k]
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40);
    if (v) parts.push(k === 'order_id' ? 'order' : k, v);
  }
  return `${parts.join('-')}-${today}.csv`;
}

/** The attempt whose confirmed money a refund would return, and that amount for display. */
function refundable(p: Payment): { amount: string; token: string; chain: string } | null {
  if (p.status === 'refunded' || p.status === 'cancelled') return null;
  for (const a of [...p.attempts].sort((x, y) =>
    x.id === p.paid_attempt_id ? -1 : y.id === p.paid_attempt_id ? 1 : 0,
  )) {
    const confirmed = a.deposits.filter(
      (d) => d.token === a.token && (d.status === 'confirmed' || d.status === 'final'),
    );
    if (confirmed.length > 0) return { amount: a.received_amount_display, token: a.token, chain: a.chain };
  }
  const wrong = p.attempts.flatMap((a) =>
    a.deposits
      .filter((d) => d.token !== a.token && (d.status === 'confirmed' || d.status === 'final'))
      .map((d) => ({ d, a })),
  );
  return wrong[0] ? { amount: wrong[0].d.amount_display, token: wrong[0].d.token, chain: wrong[0].a.chain } : null;
}

const REFUND_HINTS = {
  destination: 'Enter a valid address on the network the money came in on.',
  invalid_state:
    'This payment cannot be refunded now: no confirmed money arrived, it is already refunded, or a refund is pending.',
};

/** The fee and the net credited to the balance, once the payment was credited (a reversed credit shows zeros and says so). */
function creditFacts(c: PaymentCreditTotals | undefined): Html | string {
  if (!c)
    return html`<dt>Fee</dt><dd data-fee>—</dd><dt>Net credited</dt><dd data-net>— <span class="d-muted">not credited</span></dd>`;
  const reversed = c.netUsdCents === 0n && c.feeUsdCents === 0n;
  return html`<dt>Fee</dt><dd data-fee>${usd(c.feeUsdCents)}${c.swapFeeUsdCents > 0n ? html` <span class="d-muted">and ${usd(c.swapFeeUsdCents)} conversion spread</span>` : ''}</dd><dt>Net credited</dt><dd data-net>${usd(c.netUsdCents)}${
    reversed ? html` <span class="d-muted">the credit was reversed (refund or reorg)</span>` : ''
  }</dd>`;
}

/** A payment's page; `told` and `values` show a failed form again (with `status`). */
export async function paymentPage(
  ctx: Ctx,
  id: string,
  told: Told | null = null,
  values: Record<string, string> = {},
  status = 200,
) {
  const p = await found(() => ctx.kasse.payments.get(ctx.tenant, id));
  if (!p) return refusal(ctx, 404, 'There is no such payment in this mode of your account.');
  const [events, extra] = await Promise.all([
    ctx.kasse.webhooks.timeline(ctx.tenant, p.id),
    Promise.all(paymentSections.map((s) => s(ctx, p, told, values))),
  ]);
  const base = `/dashboard/${ctx.mode}/payments/${p.id}`;
  const staff = ctx.can('payments.write');
  const money = refundable(p);
  const { chains } = ctx.kasse;
  const credit = (await ctx.kasse.payments.reports.credits(ctx.tenant, [p.id])).get(p.id);
  const actions: Html[] = [];
  if (staff && (p.status === 'underpaid' || p.status === 'late'))
    actions.push(actionForm(ctx, `${base}/accept`, 'Accept as paid'));
  if (staff && p.status === 'waiting' && p.attempts.every((a) => a.deposits.length === 0))
    actions.push(actionForm(ctx, `${base}/cancel`, 'Cancel payment', { danger: true }));
  const refundForm =
    staff && money
      ? html`<section class="d-panel"><h2>Refund</h2><p>Returns <strong>${amount(money.amount, coinName(chains, ctx.mode, money.token))}</strong> to an address on ${networkName(chains, ctx.mode, money.chain)}. It is sent from the hot wallet; the payment becomes refunded when it is.</p>
<form method="post" action="${base}/refund" class="d-form">${csrfField(ctx.csrf)}
${field({ name: 'destination', label: `Destination address on ${networkName(chains, ctx.mode, money.chain)}`, value: values.destination ?? '', required: true, told, attrs: html` autocomplete="off" spellcheck="false"` })}
${field({ name: 'note', label: 'Note (optional)', value: values.note ?? '', told, attrs: html` maxlength="500"` })}
<button type="submit" class="d-btn d-danger" title="Refund exactly ${money.amount} ${coinSymbol(chains, ctx.mode, money.token)}">Refund ${readableAmount(money.amount)} ${coinSymbol(chains, ctx.mode, money.token)}</button></form></section>`
      : '';
  const attempts = p.attempts.length
    ? html`<table class="d-table"><thead><tr><th>Coin</th><th>Address</th><th class="d-num">Asked</th><th class="d-num">Received</th><th>Status</th><th>Deposits</th></tr></thead><tbody>${p.attempts.map(
        (a) =>
          html`<tr><td data-label="Coin">${coinName(chains, ctx.mode, a.token)}</td><td data-label="Address"><code class="d-mono">${a.address}</code></td><td data-label="Asked" class="d-num">${amount(a.pay_amount_display)}</td><td data-label="Received" class="d-num">${amount(a.received_amount_display)}</td><td data-label="Status">${badge(a.status)}${a.overpaid ? html` ${badge('overpaid')}` : ''}${a.wrong_asset ? html` ${badge('wrong_asset')}` : ''}</td><td data-label="Deposits">${
            a.deposits.length
              ? html`<ul class="d-plain">${a.deposits.map(
                  (d) =>
                    html`<li>${amount(d.amount_display, coinSymbol(chains, ctx.mode, d.token))} · ${badge(d.status)} · ${d.confirmations} conf. · ${
                      d.explorer_url
                        ? html`<a href="${d.explorer_url}" rel="noopener noreferrer" target="_blank"><code class="d-mono">${d.tx_hash.slice(0, 18)}…</code></a>`
                        : html`<code class="d-mono">${d.tx_hash.slice(0, 18)}…</code>`
                    }</li>`,
                )}</ul>`
              : '—'
          }</td></tr>`,
      )}</tbody></table>`
    : html`<p class="d-empty">The payer has not chosen a coin yet.</p>`;
  const timeline = events.length
    ? html`<ol class="d-timeline">${events.map(
        (e) =>
          html`<li><p><strong>${e.type}</strong> · ${when(e.created_at)} · <a href="/dashboard/${ctx.mode}/developers/events/${e.id}">${e.id}</a></p>${
            e.deliveries.length
              ? html`<ul class="d-plain">${e.deliveries.map(
                  (d) =>
                    html`<li>${badge(d.status)} to <code class="d-mono">${d.url}</code> · ${d.attempt_count} attempt${d.attempt_count === 1 ? '' : 's'}${d.attempts.length ? html` · last: ${d.attempts[d.attempts.length - 1]!.outcome}${d.attempts[d.attempts.length - 1]!.http_status ? ` ${d.attempts[d.attempts.length - 1]!.http_status}` : ''}` : ''}</li>`,
                )}</ul>`
              : html`<p class="d-muted">Not sent: no webhook URL was set.</p>`
          }</li>`,
      )}</ol>`
    : html`<p class="d-empty">No events yet.</p>`;
  const body = html`${errorBox(told)}
<section class="d-panel"><dl class="d-facts">
<dt>Amount</dt><dd>${usd(p.price_amount)}</dd><dt>Status</dt><dd>${badge(p.status)}</dd>
${creditFacts(credit)}
<dt>Order id</dt><dd>${p.order_id}</dd><dt>Description</dt><dd>${p.description ?? '—'}</dd>
${p.x402 ? html`<dt>Paid by</dt><dd>x402 client <code class="d-mono">${p.x402.payer}</code> for ${p.x402.resource ?? '—'} (${p.x402.amount_usd} USD${p.x402.simulated ? ', simulated' : ''})</dd>` : ''}
<dt>Created</dt><dd>${when(p.created_at)}</dd><dt>Expires</dt><dd>${when(p.expires_at)}</dd><dt>Paid</dt><dd>${when(p.paid_at)}</dd>
<dt>Payment id</dt><dd><code class="d-mono">${p.id}</code> <button type="button" class="d-copy" data-copy="${p.id}">Copy</button></dd>
<dt>Checkout</dt><dd><a href="${p.checkout_url}" target="_blank" rel="noopener noreferrer">${p.checkout_url}</a></dd>
${Object.keys(p.metadata).length > 0 ? html`<dt>Metadata</dt><dd><pre class="d-pre">${JSON.stringify(p.metadata, null, 2)}</pre></dd>` : ''}
</dl>${actions.length ? html`<div class="d-actions">${actions}</div>` : ''}</section>
${refundForm}${extra}
<section class="d-panel"><h2>Coin choices and deposits</h2>${attempts}</section>
<section class="d-panel"><h2>Timeline</h2>${timeline}</section>`;
  return send(ctx.reply, status, shell(ctx, { title: `Payment ${p.order_id}`, active: '/payments', body, wide: true }));
}

export function paymentPages(r: Router): void {
  const { kasse } = r;

  r.page('', 'read', async (ctx) => {
    const [balance, days, recent] = await Promise.all([
      kasse.payments.balance(ctx.tenant),
      kasse.payments.reports.paidVolumeByDay(ctx.tenant, 30, kasse.clock.now()),
      kasse.payments.list(ctx.tenant, { limit: 8 }),
    ]);
    const body = html`<div class="d-cards">
<section class="d-stat"><h2>Available</h2><p class="d-big">${usd(balance.available_usd_cents)}</p><p class="d-muted">credited, after fees</p></section>
<section class="d-stat"><h2>Pending</h2><p class="d-big">${usd(balance.pending_usd_cents)}</p><p class="d-muted">seen on chain, confirming</p></section>
</div>
<section class="d-panel"><h2>Paid volume</h2>${chart(days)}</section>
<section class="d-panel"><h2>Custody by coin</h2>${
      balance.custody.length
        ? html`<table class="d-table"><thead><tr><th>Coin</th><th>Network</th><th class="d-num">Held</th></tr></thead><tbody>${balance.custody.map(
            (c) =>
              html`<tr><td data-label="Coin">${c.symbol}</td><td data-label="Network">${networkName(kasse.chains, ctx.mode, c.chain)}</td><td data-label="Held" class="d-num">${amount(c.amount_display)}</td></tr>`,
          )}</tbody></table>`
        : html`<p class="d-empty">No coins held yet.</p>`
    }</section>
<section class="d-panel"><h2>Recent payments</h2>${paymentsTable(ctx, recent.data)}<p><a href="/dashboard/${ctx.mode}/payments">All payments →</a></p></section>`;
    return send(ctx.reply, 200, shell(ctx, { title: 'Home', active: '', body, wide: true }));
  });

  r.page('/payments', 'read', async (ctx, _p, q) => {
    let told: Told | null = null;
    let f: Filters = { status: '', order_id: '', from: '', to: '', token: '', source: '' };
    let list: { data: Payment[]; next_cursor: string | null } = { data: [], next_cursor: null };
    try {
      const parsed = filtersOf(q);
      f = parsed.f;
      list = await kasse.payments.reports.search(ctx.tenant, { ...parsed.search, limit: PAGE });
    } catch (err) {
      told = tell(err, {
        status: 'Choose a status from the list.',
        source: 'Choose who paid from the list.',
        ...PAGE_HINT,
        ...DATE_HINTS,
      });
    }
    const body = html`${errorBox(told)}${filterForm(ctx, f, told)}
<p class="d-toolbar"><a class="d-btn d-secondary" href="/dashboard/${ctx.mode}/payments.csv${filterQuery(f)}" download>Export CSV</a></p>
${paymentsTable(ctx, list.data)}
<nav class="d-pager" aria-label="Pages">${q.cursor ? html`<a href="/dashboard/${ctx.mode}/payments${filterQuery(f)}">First page</a>` : ''}${
      list.next_cursor
        ? html`<a href="/dashboard/${ctx.mode}/payments${filterQuery(f, { cursor: list.next_cursor })}" rel="next">Older payments →</a>`
        : ''
    }</nav>`;
    return sendShell(ctx, told, { title: 'Payments', active: '/payments', body, wide: true });
  });

  r.page('/payments.csv', 'read', async (ctx, _p, q) => {
    let search: PaymentSearch;
    let f: Filters;
    try {
      ({ search, f } = filtersOf(q));
    } catch (err) {
      const told = tell(err);
      return ctx.reply
        .code(told.status)
        .header('content-type', 'text/plain; charset=utf-8')
        .send(`${told.message} (${told.code})\n`);
    }
    const { tenant, mode } = ctx;
    async function* rows() {
      yield `${CSV_HEADER.join(',')}\r\n`;
      let cursor: string | undefined;
      do {
        const page = await kasse.payments.reports.search(tenant, { ...search, cursor, limit: 500 });
        const credits = await kasse.payments.reports.credits(
          tenant,
          page.data.map((p) => p.id),
        );
        yield page.data.map((p) => csvRow(p, credits.get(p.id), (t) => coinName(kasse.chains, mode, t))).join('');
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
    }
    return ctx.reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header(
        'content-disposition',
        `attachment; filename="${csvFileName(mode, f, kasse.clock.now().toISOString().slice(0, 10))}"`,
      )
      .header('cache-control', 'no-store')
      .send(Readable.from(rows()));
  });

  const idOk = (id: string) => new RegExp(ID_PATTERNS.pay).test(id);

  r.page('/payments/:id', 'read', async (ctx, p) =>
    idOk(p.id!) ? paymentPage(ctx, p.id!) : refusal(ctx, 404, 'There is no such payment in this mode of your account.'),
  );

  for (const act of ['accept', 'cancel'] as const) {
    r.action(`/payments/:id/${act}`, 'payments.write', async (ctx, _form, p) => {
      try {
        if (!idOk(p.id!)) throw invalid('bad id', 'id');
        await (act === 'accept'
          ? kasse.payments.accept(ctx.tenant, p.id!, ctx.actor)
          : kasse.payments.cancel(ctx.tenant, p.id!, ctx.actor));
        return done(ctx.reply, `/dashboard/${ctx.mode}/payments/${p.id}`, act === 'accept' ? 'accepted' : 'cancelled');
      } catch (err) {
        const told = tell(err, {
          invalid_state:
            act === 'accept'
              ? 'Only an underpaid or late payment can be accepted.'
              : 'Only a waiting payment with no money seen can be cancelled.',
        });
        return paymentPage(ctx, p.id!, told, {}, told.status);
      }
    });
  }

  r.action('/payments/:id/refund', 'payments.write', async (ctx, form, p) => {
    try {
      const destination = (form.destination ?? '').trim();
      if (!destination) throw invalid('destination is required', 'destination');
      const note = (form.note ?? '').trim();
      if (textLength(note) > 500) throw invalid('note is too long', 'note');
      await kasse.refunds.create(ctx.tenant, p.id!, { destination, ...(note ? { note } : {}) }, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/payments/${p.id}`, 'refund');
    } catch (err) {
      const told = tell(err, { ...REFUND_HINTS, note: 'Keep the note under 500 characters.' });
      return paymentPage(ctx, p.id!, told, form, told.status);
    }
  });
}
