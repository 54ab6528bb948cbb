/**
 * Statements: the mode's monthly statements (UTC months) from the ledger, and the monthly statement by email.
 *
 *   GET  /dashboard/<mode>/statements                 the months since the account began, newest first; email opt-in
 *   GET  /dashboard/<mode>/statements/<YYYY-MM>       one month: the balance line by line, activity, coins, payouts
 *   GET  /dashboard/<mode>/statements/<YYYY-MM>/csv   the same figures as CSV
 *   GET  /dashboard/<mode>/statements/<YYYY-MM>/pdf   … and as an A4 PDF
 *   POST /dashboard/<mode>/statements/email           owner: turn the emailed statement on or off for themselves
 *
 * Every role reads statements; only owners receive them by email (the email carries the account's figures to an
 * inbox, a choice for the people who own the account). Figures are `StatementService.get`, the API's Statement.
 */
import { invalid } from '../../../core/errors.ts';
import { html, type Html } from '../../../core/html.ts';
import {
  balanceLines,
  dollars,
  monthName,
  monthOf,
  monthRange,
  nextMonth,
  signedAmount,
  type Statement,
  statementCsv,
  statementPdf,
} from '../../../modules/statements/index.ts';
import { coinName, networkName } from '../../../chains/names.ts';
import type { Ctx } from '../context.ts';
import { done, send, shell } from '../layout.ts';
import { actionForm, errorBox, tell, type Told } from '../forms.ts';
import { amount, when } from '../format.ts';
import type { Router } from '../routing.ts';

const MONTH_HINTS = { month: 'Choose a month from the list: statements exist for months that have begun.' };

/** The months from the account's first (its creation or first posting, whichever is earlier) to now, newest first. */
async function monthsOf(ctx: Ctx): Promise<string[]> {
  const now = monthOf(ctx.kasse.clock.now());
  const posted = await ctx.kasse.statements.firstPosting(ctx.tenant);
  const first = [monthOf(new Date(ctx.merchant.createdAt)), ...(posted ? [monthOf(posted)] : []), now].sort()[0]!;
  const out: string[] = [];
  for (let m = first; m <= now; m = nextMonth(m)) out.unshift(m);
  return out;
}

function downloads(ctx: Ctx, month: string): Html {
  const base = `/dashboard/${ctx.mode}/statements/${month}`;
  return html`<a href="${base}/csv" download>CSV</a> · <a href="${base}/pdf" download>PDF</a>`;
}

async function emailPanel(ctx: Ctx): Promise<Html> {
  const { statementEmails } = ctx.kasse;
  if (!ctx.can('statements.email')) {
    return html`<section class="d-panel" id="statement-email"><h2>By email</h2><p class="d-hint">Owners can have each month's statement emailed to them on the 1st.</p></section>`;
  }
  const [on, next] = await Promise.all([
    statementEmails.subscribed(ctx.user.id, ctx.mode),
    statementEmails.next(ctx.tenant),
  ]);
  const action = `/dashboard/${ctx.mode}/statements/email`;
  const when_ = next ? html` The next one, for ${monthName(next.month)}, goes out ${when(next.dueAt)}.` : '';
  return html`<section class="d-panel" id="statement-email"><h2>By email</h2>${
    on
      ? html`<p>Each month's ${ctx.mode} statement is emailed to <strong>${ctx.user.email}</strong> on the 1st (UTC), with the PDF attached.${when_}</p>${actionForm(ctx, action, 'Stop emailing me statements', { fields: html`<input type="hidden" name="email" value="off">` })}`
      : html`<p>Get each month's ${ctx.mode} statement by email at <strong>${ctx.user.email}</strong> on the 1st (UTC), with the PDF attached.</p>${actionForm(ctx, action, 'Email me monthly statements', { fields: html`<input type="hidden" name="email" value="on">` })}`
  }</section>`;
}

async function listPage(ctx: Ctx, told: Told | null = null, status = 200) {
  const now = monthOf(ctx.kasse.clock.now());
  const rows = (await monthsOf(ctx)).map(
    (m) =>
      html`<tr><td data-label="Month"><a href="/dashboard/${ctx.mode}/statements/${m}">${monthName(m)}</a></td><td data-label="Period">${m === now ? 'in progress' : 'closed'}</td><td data-label="Download">${downloads(ctx, m)}</td></tr>`,
  );
  const body = html`${errorBox(told)}<p class="d-hint">Each month's movements of the ${ctx.mode} balance, computed from the ledger and checked against the payments, refunds and payouts. Months are UTC.</p>
<section class="d-panel"><table class="d-table"><thead><tr><th>Month</th><th>Period</th><th>Download</th></tr></thead><tbody>${rows}</tbody></table></section>
${await emailPanel(ctx)}`;
  return send(ctx.reply, status, shell(ctx, { title: 'Statements', active: '/statements', body }));
}

async function statementBody(ctx: Ctx, s: Statement): Promise<Html> {
  const base = `/dashboard/${ctx.mode}/statements`;
  const first = (await monthsOf(ctx)).at(-1)!;
  const current = monthOf(ctx.kasse.clock.now());
  const nav = html`<nav class="d-pager" aria-label="Months">${s.month > first ? html`<a href="${base}/${monthOf(new Date(monthRange(s.month).from.getTime() - 1))}" rel="prev">← Previous month</a>` : ''}${
    s.month < current ? html`<a href="${base}/${nextMonth(s.month)}" rel="next">Next month →</a>` : ''
  }</nav>`;
  const gap = s.reconciliation_gap_usd_cents;
  return html`<div class="d-toolbar"><span>${when(s.from)} to ${when(s.to)}${s.month === current ? ' (in progress)' : ''}</span><a class="d-btn d-secondary" href="${base}/${s.month}/csv" download>Download CSV</a><a class="d-btn d-secondary" href="${base}/${s.month}/pdf" download>Download PDF</a></div>
${gap !== 0 ? html`<div class="d-error" role="alert"><p>The ledger and the payment records disagree by ${dollars(gap)} this month. Tell the operator of your Kasse.</p></div>` : ''}
<section class="d-panel"><h2>Balance</h2><table class="d-table d-statement"><tbody>${balanceLines(s).map(
    (l) =>
      html`<tr${l.kind === 'balance' ? html` class="d-total"` : ''}><th scope="row">${l.label}${l.detail ? html`<span class="d-muted d-block">${l.detail}</span>` : ''}</th><td class="d-num">${signedAmount(l)}</td></tr>`,
  )}</tbody></table></section>
<section class="d-panel"><h2>Activity</h2><dl class="d-facts">
<dt>Payments credited</dt><dd>${s.payments.count} · ${dollars(s.payments.gross_usd_cents)}</dd>
<dt>Held at the end</dt><dd>${s.held.count} · ${dollars(s.held.value_usd_cents)} <span class="d-muted">received, not credited (underpaid, late, wrong coin)</span></dd>
<dt>Payouts sent</dt><dd>${s.payouts.count} · ${dollars(s.payouts.usd_cents)}</dd>
<dt>Below zero</dt><dd>${dollars(s.clawback_change_usd_cents)} <span class="d-muted">change of the part of the balance below zero</span></dd>
<dt>Reconciliation gap</dt><dd>${dollars(gap)}</dd>
</dl></section>
${
  s.by_coin.length
    ? html`<section class="d-panel"><h2>By coin</h2><table class="d-table"><thead><tr><th>Coin</th><th>Network</th><th class="d-num">Payments</th><th class="d-num">Received</th><th class="d-num">Value</th></tr></thead><tbody>${s.by_coin.map(
        (c) =>
          html`<tr><td data-label="Coin">${c.symbol}</td><td data-label="Network">${networkName(ctx.kasse.chains, ctx.mode, c.chain)}</td><td data-label="Payments" class="d-num">${c.payments}</td><td data-label="Received" class="d-num">${amount(c.received_display)}</td><td data-label="Value" class="d-num">${dollars(c.value_usd_cents)}</td></tr>`,
      )}</tbody></table></section>`
    : ''
}${
  s.payouts.items.length
    ? html`<section class="d-panel"><h2>Payouts sent</h2><table class="d-table"><thead><tr><th>Sent</th><th>Amount</th><th>Destination</th><th class="d-num">USD</th></tr></thead><tbody>${s.payouts.items.map(
        (p) =>
          html`<tr><td data-label="Sent">${when(p.sent_at)}</td><td data-label="Amount">${amount(p.amount_display, coinName(ctx.kasse.chains, ctx.mode, p.token))}</td><td data-label="Destination"><code class="d-mono">${p.destination}</code></td><td data-label="USD" class="d-num">${dollars(p.usd_cents)}</td></tr>`,
      )}</tbody></table></section>`
    : ''
}${nav}`;
}

export function statementPages(r: Router): void {
  const { kasse } = r;

  /** The month's statement, or the list page with the reason (400 for a malformed or future month). */
  const statementOf = async (ctx: Ctx, month: string): Promise<Statement | Told> => {
    try {
      if (!/^\d{4}-\d{2}$/.test(month)) throw invalid('bad month', 'month');
      return await kasse.statements.get(ctx.tenant, month);
    } catch (err) {
      return tell(err, MONTH_HINTS);
    }
  };
  const isTold = (x: Statement | Told): x is Told => 'code' in x && 'status' in x;

  r.page('/statements', 'read', async (ctx) => listPage(ctx));

  r.page('/statements/:month', 'read', async (ctx, p) => {
    const s = await statementOf(ctx, p.month!);
    if (isTold(s)) return listPage(ctx, s, s.status);
    return send(
      ctx.reply,
      200,
      shell(ctx, {
        title: `Statement — ${monthName(s.month)}`,
        active: '/statements',
        body: await statementBody(ctx, s),
        wide: true,
      }),
    );
  });

  for (const kind of ['csv', 'pdf'] as const) {
    r.page(`/statements/:month/${kind}`, 'read', async (ctx, p) => {
      const s = await statementOf(ctx, p.month!);
      if (isTold(s))
        return ctx.reply
          .code(s.status)
          .header('content-type', 'text/plain; charset=utf-8')
          .send(`${s.message} (${s.code})\n`);
      const body =
        kind === 'csv'
          ? statementCsv(s, { chains: kasse.chains, mode: ctx.mode })
          : await statementPdf(s, {
              merchantName: ctx.merchant.name,
              mode: ctx.mode,
              chains: kasse.chains,
              brand: await kasse.merchants.brands.pdf(ctx.merchant.id),
            });
      return ctx.reply
        .header('content-type', kind === 'csv' ? 'text/csv; charset=utf-8' : 'application/pdf')
        .header('content-disposition', `attachment; filename="statement-${s.month}-${ctx.mode}.${kind}"`)
        .header('cache-control', 'no-store')
        .send(body);
    });
  }

  r.action('/statements/email', 'statements.email', async (ctx, form) => {
    try {
      if (form.email === 'on') await kasse.statementEmails.subscribe(ctx.user, ctx.mode, ctx.actor);
      else if (form.email === 'off') await kasse.statementEmails.unsubscribe(ctx.user, ctx.mode, ctx.actor);
      else throw invalid('email must be on or off', 'email');
      return done(
        ctx.reply,
        `/dashboard/${ctx.mode}/statements`,
        form.email === 'on' ? 'statement_email_on' : 'statement_email_off',
      );
    } catch (err) {
      const told = tell(err, { email: 'Use the button on this page.' });
      return listPage(ctx, told, told.status);
    }
  });
}
