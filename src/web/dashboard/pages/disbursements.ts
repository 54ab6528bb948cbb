/**
 * Disbursements: every role sees the batches; owners create them from a CSV file, approve them with a fresh TOTP
 * code (each owner once, of the digest the page showed), release approved ones (again with a code) and cancel them.
 * A batch the available balance does not cover shows its shortfall on the CSV check and on its page while it waits,
 * so nobody spends a second-factor code on a release that would be refused (the release still checks it).
 *
 *   GET  /dashboard/<mode>/disbursements                  the batches, and (owners) the CSV form
 *   POST /dashboard/<mode>/disbursements/check            (owners) every CSV row with its problems; Create when all good
 *   POST /dashboard/<mode>/disbursements                  (owners) create from a checked CSV
 *   GET  /dashboard/<mode>/disbursements/<id>             title, total, fingerprint, approvals, shortfall, completion, every item
 *   POST /dashboard/<mode>/disbursements/<id>/approve     (owners) code + digest
 *   POST /dashboard/<mode>/disbursements/<id>/release     (owners) code
 *   POST /dashboard/<mode>/disbursements/<id>/cancel      (owners) before release
 */
import { ApiError, invalid } from '../../../core/errors.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import { html, type Html } from '../../../core/html.ts';
import {
  type Disbursement,
  DISBURSEMENT_LIMITS,
  fingerprint,
  type ParsedCsv,
  parseDisbursementCsv,
} from '../../../modules/disbursements/index.ts';
import { coinName } from '../../../chains/names.ts';
import type { Ctx } from '../context.ts';
import { done, refusal, sendShell } from '../layout.ts';
import { csrfField, errorBox, field, found, tell, type Told, codeField } from '../forms.ts';
import { amount, badge, usd, when } from '../format.ts';
import type { Form, Router } from '../routing.ts';
import { textLength } from '../../../core/text.ts';

const HINTS: Record<string, string> = {
  title: `Give the batch a title of 1 to ${DISBURSEMENT_LIMITS.titleMax} characters.`,
  insufficient_balance:
    'The available balance does not cover this batch. Wait for more payments to be credited, or cancel it and send a smaller one.',
  price_unavailable: 'There is no current price for the payout coin. Try again shortly.',
};

const NOT_FOUND = 'There is no such disbursement in this mode of your account.';

function listTable(ctx: Ctx, list: Disbursement[]): Html {
  if (list.length === 0) return html`<p class="d-empty">No disbursements in this mode yet.</p>`;
  return html`<table class="d-table"><thead><tr><th>Title</th><th>Status</th><th class="d-num">Total</th><th class="d-num">Items</th><th>Approvals</th><th>Progress</th><th>Created</th></tr></thead><tbody>${list.map(
    (d) =>
      html`<tr><td data-label="Title"><a href="/dashboard/${ctx.mode}/disbursements/${d.id}">${d.title}</a></td><td data-label="Status">${badge(d.status)}</td><td data-label="Total" class="d-num">${usd(d.total_usd_cents)}</td><td data-label="Items" class="d-num">${d.item_count}</td><td data-label="Approvals">${d.approvals.length} of ${d.approvals_required}</td><td data-label="Progress">${progressText(d)}</td><td data-label="Created">${when(d.created_at)}</td></tr>`,
  )}</tbody></table>`;
}

function progressText(d: Disbursement): string {
  if (d.status !== 'released') return '—';
  if (d.progress.open === 0) return `completed: ${d.progress.sent} sent · ${d.progress.failed} failed`;
  return `${d.progress.sent} sent · ${d.progress.failed} failed · ${d.progress.open} open`;
}

const payouts = (n: number) => `${n} ${n === 1 ? 'payout' : 'payouts'}`;

/** The available balance, in cents, that a release would take a batch's total from. */
async function available(ctx: Ctx): Promise<number> {
  return (await ctx.kasse.payments.balance(ctx.tenant)).available_usd_cents;
}

/** A warning when `total` is more than the available balance (a release would be refused with insufficient_balance). */
function shortfall(total: number, balance: number, later: string): Html | string {
  if (total <= balance) return '';
  return html`<div class="d-warn" role="alert" data-shortfall><p>This batch needs ${usd(total)} but the available balance is ${usd(balance)}: <strong>${usd(total - balance)} short</strong>.</p><p>${later}</p></div>`;
}

/** A row's amount in dollars when it is a whole number of cents, else as typed (the row's problem says why). */
const rowAmount = (cents: string) => (/^\d{1,9}$/.test(cents) ? usd(Number(cents)) : cents);

function csvForm(ctx: Ctx, values: Form, told: Told | null, checked: ParsedCsv | null, balance: number | null): Html {
  const rows = checked?.rows ?? [];
  const ok = checked?.items != null;
  const preview = checked
    ? html`<div class="d-csvcheck" data-csv-check>${checked.errors.map((e) => html`<p class="d-error" role="alert">${e}</p>`)}
<p>${rows.length} ${rows.length === 1 ? 'row' : 'rows'}, ${rows.filter((r) => r.errors.length > 0).length} with problems. Total <strong data-csv-total>${usd(checked.totalUsdCents)}</strong> in ${coinName(ctx.kasse.chains, ctx.mode, ctx.merchant.payoutToken)}.</p>
${ok && balance !== null ? shortfall(checked.totalUsdCents, balance, 'You can still create it and have it approved, but it cannot be released until the balance covers it.') : ''}
<table class="d-table"><thead><tr><th class="d-num">Line</th><th>Destination</th><th class="d-num">Amount</th><th>Label</th><th>Problems</th></tr></thead><tbody>${rows.map(
        (r) =>
          html`<tr${r.errors.length ? html` class="d-badrow"` : ''}><td data-label="Line" class="d-num">${r.line}</td><td data-label="Destination"><code class="d-mono">${r.destination}</code></td><td data-label="Amount" class="d-num">${rowAmount(r.usdCents)}</td><td data-label="Label">${r.label}</td><td data-label="Problems">${r.errors.length ? r.errors.join('; ') : 'OK'}</td></tr>`,
      )}</tbody></table></div>`
    : '';
  const base = `/dashboard/${ctx.mode}/disbursements`;
  return html`<section class="d-panel" id="new"><h2>New disbursement from a CSV file</h2>${errorBox(told)}
<p class="d-hint">One payout per row: <code>destination,usd_cents,label</code> (label optional; a header row is skipped). At most ${DISBURSEMENT_LIMITS.itemsMax} rows, each ${usd(DISBURSEMENT_LIMITS.centsMin)} to ${usd(DISBURSEMENT_LIMITS.centsMax)} written in cents (2500 is $25.00), paid in ${coinName(ctx.kasse.chains, ctx.mode, ctx.merchant.payoutToken)}.</p>
<form method="post" action="${ok ? base : `${base}/check`}" class="d-form">${csrfField(ctx.csrf)}
${field({ name: 'title', label: 'Title', value: values.title ?? '', required: true, told, attrs: html` maxlength="${DISBURSEMENT_LIMITS.titleMax}"` })}
<div class="d-field"><label for="f-csv">Payouts (CSV)</label><input type="file" accept=".csv,text/csv" data-csv-file aria-label="CSV file"><textarea id="f-csv" name="csv" rows="8"${ok ? html` readonly` : ''}>${values.csv ?? ''}</textarea></div>
${preview}
<button type="submit" class="d-btn">${ok ? `Create disbursement of ${payouts(rows.length)}` : 'Check rows'}</button>${ok ? html` <a href="${base}#new">Start over</a>` : ''}
</form></section>`;
}

async function listPage(ctx: Ctx, values: Form = {}, told: Told | null = null, checked: ParsedCsv | null = null) {
  const { data } = await ctx.kasse.disbursements.list(ctx.tenant, { limit: 100 });
  const balance = checked?.items ? await available(ctx) : null;
  const body = html`${listTable(ctx, data)}${ctx.can('disbursements.approve') ? csvForm(ctx, values, told, checked, balance) : html`<p class="d-hint">Owners create, approve and release disbursements.</p>`}`;
  return sendShell(ctx, told, { title: 'Disbursements', active: '/disbursements', body, wide: true });
}

async function detailPage(ctx: Ctx, id: string, told: Told | null = null) {
  const { kasse } = ctx;
  const shown = await found(async () => ({
    d: await kasse.disbursements.get(ctx.tenant, id),
    digest: await kasse.disbursements.digest(ctx.tenant, id),
    completedAt: await kasse.disbursements.completedAt(ctx.tenant, id),
  }));
  if (!shown) return refusal(ctx, 404, NOT_FOUND);
  const { d, digest, completedAt } = shown;
  const users = new Map((await kasse.users.team.list(ctx.merchant.id)).map((u) => [u.id, u.email]));
  const base = `/dashboard/${ctx.mode}/disbursements/${d.id}`;
  const owner = ctx.can('disbursements.approve');
  const mine = d.approvals.some((a) => a.user_id === ctx.user.id);
  const coin = coinName(kasse.chains, ctx.mode, d.token);
  const waiting = d.status === 'pending_approval' || d.status === 'approved';
  const short = waiting
    ? shortfall(
        d.total_usd_cents,
        await available(ctx),
        d.status === 'approved'
          ? 'Releasing it will be refused until more payments are credited. Wait for them, or cancel it and send a smaller batch.'
          : 'It can still be approved, but releasing it will be refused until more payments are credited. Wait for them, or cancel it and send a smaller batch.',
      )
    : '';
  const left = d.approvals_required - d.approvals.length;
  // Cancelling needs no code: beside Approve or Release it posts their form to its own action, unchecked.
  const cancellable = owner && waiting;
  const cancel = html`<button type="submit" class="d-btn d-danger" formaction="${base}/cancel" formnovalidate>Cancel batch</button>`;
  let actions: Html | string = cancellable
    ? html`<form method="post" action="${base}/cancel" class="d-actions">${csrfField(ctx.csrf)}${cancel}</form>`
    : '';
  if (owner && d.status === 'pending_approval' && !mine) {
    actions = html`<form method="post" action="${base}/approve" class="d-form" data-approve>${csrfField(ctx.csrf)}<input type="hidden" name="digest" value="${digest}">
<p>You approve the batch with fingerprint <strong class="d-mono">${fingerprint(digest)}</strong>: ${payouts(d.item_count)}, ${usd(d.total_usd_cents)} in ${coin}.</p>${codeField(told, 'code')}<div class="d-actions"><button type="submit" class="d-btn">Approve</button>${cancel}</div></form>`;
  } else if (owner && d.status === 'pending_approval') {
    actions = html`<p class="d-hint">You approved this batch. It needs ${left} more owner ${left === 1 ? 'approval' : 'approvals'}.</p>${actions}`;
  } else if (owner && d.status === 'approved') {
    actions = html`<form method="post" action="${base}/release" class="d-form" data-release>${csrfField(ctx.csrf)}<p>Releasing takes ${usd(d.total_usd_cents)} from the available balance and sends every payout.</p>${codeField(told, 'release_code')}<div class="d-actions"><button type="submit" class="d-btn">Release</button>${cancel}</div></form>`;
  }
  const complete = d.status === 'released' && completedAt !== null;
  const body = html`${errorBox(told)}${short}
<section class="d-panel"><dl class="d-facts">
<dt>Status</dt><dd>${badge(d.status)}${complete ? html` ${badge('completed')}` : ''}</dd><dt>Total</dt><dd>${usd(d.total_usd_cents)} in ${coin}</dd><dt>Items</dt><dd>${d.item_count}</dd>
<dt>Fingerprint</dt><dd><code class="d-mono" data-fingerprint>${fingerprint(digest)}</code></dd>
<dt>Approvals</dt><dd>${d.approvals.length} of ${d.approvals_required}${d.approvals.map((a) => html`<br>${users.get(a.user_id) ?? a.user_id} · ${when(a.approved_at)}`)}</dd>
<dt>Created</dt><dd>${when(d.created_at)} by ${users.get(d.created_by) ?? d.created_by}</dd>
${
  d.released_at
    ? html`<dt>Released</dt><dd>${when(d.released_at)} by ${users.get(d.released_by ?? '') ?? d.released_by}</dd>${
        complete ? html`<dt>Completed</dt><dd data-completed>${when(completedAt)}: every payout settled</dd>` : ''
      }<dt>Progress</dt><dd data-progress>${progressText(d)}</dd>`
    : ''
}
${d.cancelled_at ? html`<dt>Cancelled</dt><dd>${when(d.cancelled_at)}</dd>` : ''}
</dl>${actions}</section>
<section class="d-panel"><h2>Payouts</h2><table class="d-table"><thead><tr><th class="d-num">#</th><th>Destination</th><th>Label</th><th class="d-num">USD</th><th class="d-num">${d.symbol}</th><th>Payout</th></tr></thead><tbody>${d.items.map(
    (i) =>
      html`<tr><td data-label="#" class="d-num">${i.item_no}</td><td data-label="Destination"><code class="d-mono">${i.destination}</code></td><td data-label="Label">${i.label ?? ''}</td><td data-label="USD" class="d-num">${usd(i.usd_cents)}</td><td data-label="${d.symbol}" class="d-num">${amount(i.amount_display)}</td><td data-label="Payout">${
        i.payout
          ? html`${badge(i.payout.status)}${i.payout.tx_hash ? html` <code class="d-mono">${i.payout.tx_hash.slice(0, 12)}…</code>` : ''}${i.payout.error ? html`<br><span class="d-hint">${i.payout.error}</span>` : ''}`
          : '—'
      }</td></tr>`,
  )}</tbody></table></section>`;
  return sendShell(ctx, told, { title: d.title, active: '/disbursements', body, wide: true });
}

export function disbursementPages(r: Router): void {
  const { kasse } = r;
  const idOk = (id: string) => new RegExp(ID_PATTERNS.dsb).test(id);
  const withId =
    (handler: (ctx: Ctx, form: Form, id: string) => Promise<unknown>) =>
    async (ctx: Ctx, form: Form, p: Record<string, string>) =>
      idOk(p.id!) ? handler(ctx, form, p.id!) : refusal(ctx, 404, NOT_FOUND);

  r.page('/disbursements', 'read', async (ctx) => listPage(ctx));

  r.action('/disbursements/check', 'disbursements.approve', async (ctx, form) =>
    listPage(ctx, form, null, parseDisbursementCsv(form.csv ?? '')),
  );

  r.action('/disbursements', 'disbursements.approve', async (ctx, form) => {
    const checked = parseDisbursementCsv(form.csv ?? '');
    try {
      const title = (form.title ?? '').trim();
      if (!title || textLength(title) > DISBURSEMENT_LIMITS.titleMax) throw invalid('title', 'title');
      if (!checked.items) return listPage(ctx, form, null, checked);
      const { disbursement } = await kasse.disbursements.create(
        ctx.tenant,
        { title, items: checked.items },
        undefined,
        ctx.actor,
      );
      return done(ctx.reply, `/dashboard/${ctx.mode}/disbursements/${disbursement.id}`, 'dsb_created');
    } catch (err) {
      return listPage(ctx, form, tell(err, HINTS), checked);
    }
  });

  r.page('/disbursements/:id', 'read', async (ctx, p) =>
    idOk(p.id!) ? detailPage(ctx, p.id!) : refusal(ctx, 404, NOT_FOUND),
  );

  /** A step that needs the user's current second-factor code from `codeField`; a wrong code is shown there. */
  const withCode = (
    codeField: 'code' | 'release_code',
    purpose: string,
    step: (ctx: Ctx, form: Form, id: string) => Promise<unknown>,
    flash: string,
  ) =>
    withId(async (ctx, form, id) => {
      try {
        await kasse.users.factors.confirmSecondFactor(ctx.session, ctx.user, form[codeField] ?? '', ctx.meta, purpose);
        await step(ctx, form, id);
        return done(ctx.reply, `/dashboard/${ctx.mode}/disbursements/${id}`, flash);
      } catch (err) {
        const told = tell(err, HINTS, true);
        return detailPage(
          ctx,
          id,
          err instanceof ApiError && err.param === 'code' ? { ...told, field: codeField } : told,
        );
      }
    });

  r.action(
    '/disbursements/:id/approve',
    'disbursements.approve',
    withCode(
      'code',
      'disbursement.approve',
      (ctx, form, id) => kasse.disbursements.approve(ctx.tenant, id, ctx.user.id, form.digest ?? '', ctx.actor),
      'dsb_approved',
    ),
  );

  r.action(
    '/disbursements/:id/release',
    'disbursements.approve',
    withCode(
      'release_code',
      'disbursement.release',
      (ctx, _form, id) => kasse.disbursements.release(ctx.tenant, id, ctx.user.id, ctx.actor),
      'dsb_released',
    ),
  );

  r.action(
    '/disbursements/:id/cancel',
    'disbursements.approve',
    withId(async (ctx, _form, id) => {
      try {
        await kasse.disbursements.cancel(ctx.tenant, id, ctx.actor);
        return done(ctx.reply, `/dashboard/${ctx.mode}/disbursements/${id}`, 'dsb_cancelled');
      } catch (err) {
        return detailPage(ctx, id, tell(err, HINTS, true));
      }
    }),
  );
}
