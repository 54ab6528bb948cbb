/**
 * Owners' pages: the audit log and, in test mode, the Mail page (the mail catcher: what the email outbox kept
 * because no SMTP server is configured, and what it sent).
 *
 *   GET /dashboard/<mode>/audit             filters: family of action, who, dates; cursor paging; details as
 *                                           labelled values
 *   GET /dashboard/test/mail[/<eml>]        the merchant's mail; a mail carrying a sign-in link shows no body
 *   GET /dashboard/test/mail/<eml>/html     the HTML part alone, under a sandboxing CSP
 */
import { invalid } from '../../../core/errors.ts';
import { html, type Html } from '../../../core/html.ts';
import type { AuditQuery, AuditRecord } from '../../../modules/audit/index.ts';
import { coinName } from '../../../chains/names.ts';
import type { Ctx } from '../context.ts';
import { refusal, send, shell, sendShell } from '../layout.ts';
import { errorBox, field, select, tell, type Told, DATE_HINTS, PAGE_HINT } from '../forms.ts';
import { badge, usd, when, wrapAt } from '../format.ts';
import type { Router } from '../routing.ts';

/**
 * The audit log's filter: every family of action the product records, each as the action prefixes it covers (`*`
 * stands for any characters). Every action written anywhere belongs to at least one family besides Everything (a
 * test reads the code for them).
 */
export const ACTION_FAMILIES: Array<{ value: string; label: string; prefixes: string[] }> = [
  { value: 'signin', label: 'Sign-ins and sign-outs', prefixes: ['signin.', 'signout'] },
  {
    value: 'second_factor',
    label: 'Second factor',
    prefixes: ['second_factor.', 'user.second_factor_', 'user.recovery_codes'],
  },
  { value: 'refused', label: 'Refused and failed', prefixes: ['*refused', '*.failed'] },
  { value: 'payment', label: 'Payments', prefixes: ['payment.'] },
  { value: 'link', label: 'Payment links', prefixes: ['link.'] },
  { value: 'subscription', label: 'Subscriptions', prefixes: ['subscription.'] },
  { value: 'tax_invoice', label: 'Tax invoices', prefixes: ['tax_invoice.', 'settings.tax_profile'] },
  { value: 'disbursement', label: 'Disbursements', prefixes: ['disbursement.'] },
  { value: 'key', label: 'API keys', prefixes: ['key.'] },
  { value: 'webhook', label: 'Webhooks: URL, secret, redeliveries', prefixes: ['webhook_', 'event.'] },
  { value: 'team', label: 'Team and accounts', prefixes: ['user.'] },
  { value: 'settings', label: 'Settings and statement emails', prefixes: ['settings.', 'statement_email.'] },
];

/** Whether `action` is in the family (the same matching as the query's LIKE patterns). */
export function inFamily(action: string, family: { prefixes: string[] }): boolean {
  return family.prefixes.some((p) =>
    new RegExp(
      `^${p
        .split('*')
        .map((x) => x.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}`,
    ).test(action),
  );
}

const ACTIONS: Array<[string, string]> = [
  ['', 'Everything'],
  ...ACTION_FAMILIES.map((f) => [f.value, f.label] as [string, string]),
];

/** Labels of the details' keys; others read as their words ("total_usd_cents" → "Total usd cents"). */
const DETAIL_LABELS: Record<string, string> = {
  from: 'From',
  to: 'To',
  email: 'Email',
  role: 'Role',
  reason: 'Reason',
  purpose: 'For',
  method: 'Method',
  url: 'URL',
  digest: 'Batch digest',
  approvals: 'Approvals',
  required: 'Approvals required',
  items: 'Payouts',
  total_usd_cents: 'Total',
  title: 'Title',
  token: 'Coin',
  payout_token: 'Payout coin',
  permission: 'Permission',
  request: 'Request',
  code: 'Error code',
};

/** Details that hold a token id (a change's `from` and `to` included), shown by the coin's name. */
const COIN_KEYS = new Set(['token', 'payout_token']);

/** A detail's value in words; `coin` names a token id as people read it ("USDC on Base Sepolia"). */
function detailValue(key: string, v: unknown, coin: (token: string) => string): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number' && /(^|_)usd_cents$/.test(key)) return usd(v);
  if (typeof v === 'string' && COIN_KEYS.has(key)) return coin(v);
  if (Array.isArray(v)) return v.map((x) => detailValue(key, x, coin)).join(', ');
  if (typeof v === 'object')
    return Object.entries(v as Record<string, unknown>)
      .map(
        ([k, x]) =>
          `${label(k)}: ${detailValue(COIN_KEYS.has(key) && (k === 'from' || k === 'to') ? key : k, x, coin)}`,
      )
      .join('; ');
  return String(v);
}

const label = (key: string) => DETAIL_LABELS[key] ?? `${key.charAt(0).toUpperCase()}${key.slice(1).replace(/_/g, ' ')}`;

/** An entry's details as labelled values; token ids named in `mode` (the entry's, else the page's). */
function details(ctx: Ctx, a: AuditRecord, d: Record<string, unknown>): Html {
  const coin = (token: string) => coinName(ctx.kasse.chains, a.mode ?? ctx.mode, token);
  return html`<dl class="d-details">${Object.entries(d).map(([k, v]) => html`<dt>${label(k)}</dt><dd>${long(detailValue(k, v, coin))}</dd>`)}</dl>`;
}

/** A value without spaces too long for a narrow column (an email, a URL) may wrap at its punctuation. */
const long = (text: string) => (text.length > 24 && !/\s/.test(text) ? wrapAt(text) : text);

function who(a: AuditRecord): Html | string {
  if (a.actor.type === 'key') return html`API key <code class="d-mono">${a.actor.id ?? ''}</code>`;
  if (a.actor.type === 'operator') return 'operator (CLI)';
  return wrapAt(a.actor.label ?? a.actor.id ?? 'unknown');
}

function day(text: string | undefined, param: string): Date | undefined {
  if (!text) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(`${text}T00:00:00Z`))) throw invalid('date', param);
  return new Date(`${text}T00:00:00Z`);
}

export function auditPages(r: Router): void {
  const { kasse } = r;

  r.page('/audit', 'audit.read', async (ctx, _p, q) => {
    let told: Told | null = null;
    let page: Awaited<ReturnType<typeof kasse.audit.list>> = { data: [], next_cursor: null };
    const users = await kasse.users.team.list(ctx.merchant.id);
    const f = { action: q.action ?? '', actor: q.actor ?? '', from: q.from ?? '', to: q.to ?? '' };
    try {
      const query: AuditQuery = { limit: 50 };
      if (f.action) {
        const family = ACTION_FAMILIES.find((x) => x.value === f.action);
        if (!family) throw invalid('action', 'action');
        query.actions = family.prefixes;
      }
      if (f.actor) query.actorId = f.actor.slice(0, 40);
      query.from = day(f.from, 'from');
      const to = day(f.to, 'to');
      if (to) query.to = new Date(to.getTime() + 86_400_000);
      if (q.cursor) query.cursor = q.cursor;
      page = await kasse.audit.list(ctx.merchant.id, query);
    } catch (err) {
      told = tell(err, { ...DATE_HINTS, action: 'Choose from the list.', ...PAGE_HINT });
    }
    const qs = (extra: Record<string, string>) => {
      const p = new URLSearchParams();
      for (const [k, v] of Object.entries({ ...f, ...extra })) if (v) p.set(k, v);
      return p.toString() ? `?${p}` : '';
    };
    const base = `/dashboard/${ctx.mode}/audit`;
    const body = html`${errorBox(told)}<form method="get" action="${base}" class="d-filters">
${select({ name: 'action', label: 'What', value: f.action, options: ACTIONS, told })}
${select({ name: 'actor', label: 'Who', value: f.actor, told, options: [['', 'Anyone'], ...users.map((u) => [u.id, u.email] as [string, string])] })}
${field({ name: 'from', label: 'From', type: 'date', value: f.from, told })}
${field({ name: 'to', label: 'To', type: 'date', value: f.to, told })}
<div class="d-filter-actions"><button type="submit" class="d-btn">Filter</button> <a href="${base}">Clear</a></div></form>
${
  page.data.length
    ? html`<table class="d-table d-audit"><thead><tr><th>When</th><th>Who</th><th>What</th><th>Object</th><th>Mode</th><th>From</th></tr></thead><tbody>${page.data.map(
        (a) =>
          html`<tr><td data-label="When">${when(a.at)}</td><td data-label="Who">${who(a)}</td><td data-label="What"><code>${a.action}</code>${a.details ? details(ctx, a, a.details) : ''}</td><td data-label="Object">${a.target ? html`<code class="d-mono">${a.target.id ?? a.target.type}</code>` : '—'}</td><td data-label="Mode">${a.mode ?? '—'}</td><td data-label="From">${a.actor.ip ?? '—'}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="d-empty">Nothing recorded for these filters.</p>`
}<nav class="d-pager">${q.cursor ? html`<a href="${base}${qs({})}">First page</a>` : ''}${page.next_cursor ? html`<a href="${base}${qs({ cursor: page.next_cursor })}" rel="next">Older entries →</a>` : ''}</nav>`;
    return sendShell(ctx, told, { title: 'Audit log', active: '/audit', body, wide: true });
  });

  const testOnly = (ctx: Ctx) =>
    ctx.mode === 'test' ? null : refusal(ctx, 404, 'The Mail page is part of test mode.');

  r.page('/mail', 'audit.read', async (ctx, _p, q) => {
    const gone = testOnly(ctx);
    if (gone) return gone;
    let told: Told | null = null;
    let page: Awaited<ReturnType<typeof kasse.email.list>> = { data: [], next_cursor: null };
    try {
      page = await kasse.email.list(ctx.merchant.id, { cursor: q.cursor });
    } catch (err) {
      told = tell(err, { cursor: 'That page link is not valid; start from the first page.' });
    }
    const intro = kasse.email.sending
      ? 'Mail is sent through the configured SMTP server; this is the record of what your account sent.'
      : 'No SMTP server is configured (KASSE_SMTP_URL), so mail is kept here instead of being sent, like a mail catcher.';
    const body = html`${errorBox(told)}<p class="d-hint">${intro}</p>${
      page.data.length
        ? html`<table class="d-table"><thead><tr><th>When</th><th>To</th><th>Subject</th><th>Kind</th><th>Status</th></tr></thead><tbody>${page.data.map(
            (m) =>
              html`<tr><td data-label="When">${when(m.created_at)}</td><td data-label="To">${m.to}</td><td data-label="Subject"><a href="/dashboard/test/mail/${m.id}">${m.subject}</a></td><td data-label="Kind"><code>${m.kind}</code></td><td data-label="Status">${badge(m.status)}</td></tr>`,
          )}</tbody></table>`
        : html`<p class="d-empty">No mail yet.</p>`
    }<nav class="d-pager">${page.next_cursor ? html`<a href="/dashboard/test/mail?cursor=${page.next_cursor}" rel="next">Older mail →</a>` : ''}</nav>`;
    return sendShell(ctx, told, { title: 'Mail', active: '/mail', body, wide: true });
  });

  const findMail = async (ctx: Ctx, id: string) => {
    if (!/^eml_[0-9A-Z]{26}$/.test(id)) return null;
    return kasse.email.get(id, ctx.merchant.id).catch(() => null);
  };

  r.page('/mail/:id', 'audit.read', async (ctx, p) => {
    const gone = testOnly(ctx);
    if (gone) return gone;
    const m = await findMail(ctx, p.id!);
    if (!m) return refusal(ctx, 404, 'There is no such mail for your account.');
    const body = html`<section class="d-panel"><dl class="d-facts"><dt>To</dt><dd>${m.to_name ? `${m.to_name} <${m.to}>` : m.to}</dd><dt>Subject</dt><dd>${m.subject}</dd><dt>Kind</dt><dd><code>${m.kind}</code></dd><dt>Status</dt><dd>${badge(m.status)}${m.last_error ? html` <span class="d-muted">${m.last_error}</span>` : ''}</dd><dt>Written</dt><dd>${when(m.created_at)}</dd><dt>Sent</dt><dd>${when(m.sent_at)}</dd><dt>Message-ID</dt><dd><code class="d-mono">${m.message_id}</code></dd>${
      m.attachments.length
        ? html`<dt>Attachments</dt><dd>${m.attachments.map((a) => html`<span class="d-block">${a.filename} <span class="d-muted">${a.content_type}, ${a.bytes.toLocaleString('en')} bytes</span></span>`)}</dd>`
        : ''
    }</dl></section>${
      m.sensitive
        ? html`<section class="d-panel"><p class="d-hint">This mail carries a sign-in link for its recipient, so its body is not shown here. The operator can print it with <code>kasse mail show ${m.id}</code>.</p></section>`
        : html`<section class="d-panel"><h2>Text</h2><pre class="d-pre d-mailtext">${m.text}</pre>${m.html ? html`<p><a href="/dashboard/test/mail/${m.id}/html" target="_blank" rel="noopener">View the HTML part</a></p>` : ''}</section>`
    }`;
    return send(ctx.reply, 200, shell(ctx, { title: m.subject, active: '/mail', body, wide: true }));
  });

  r.page('/mail/:id/html', 'audit.read', async (ctx, p) => {
    const gone = testOnly(ctx);
    if (gone) return gone;
    const m = await findMail(ctx, p.id!);
    if (!m || m.sensitive || !m.html) return refusal(ctx, 404, 'There is no HTML part to show for this mail.');
    // The mail's own markup, rendered as a sandboxed document that can run nothing and load nothing.
    return ctx.reply
      .code(200)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:")
      .header('cache-control', 'no-store')
      .send(m.html);
  });
}
