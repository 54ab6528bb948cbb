/**
 * The dashboard's page frame and shared pieces: the document (one stylesheet, one deferred script, both from this
 * host; the checkout's escaping template and CSP), the header with the test/live switch, the navigation (a registry
 * other capabilities add their pages to), and flash messages (forms and errors: forms.ts; values as they read: format.ts).
 */
import type { FastifyReply } from 'fastify';
import type { Mode } from '../../core/mode.ts';
import { html, type Html } from '../../core/html.ts';
import type { Permission } from '../../modules/users/index.ts';
import { assetUrl } from '../assets.ts';
import { PAGE_HEAD, sendPage } from '../page.ts';
import type { Ctx } from './context.ts';
import { csrfField, type Told } from './forms.ts';

/** A page in the navigation. Capabilities add theirs here (e.g. Disbursements), in the order shown. */
export interface NavEntry {
  /** Path under `/dashboard/<mode>`, '' for Home. */
  path: string;
  label: string;
  permission: Permission;
  /** Shown only in these modes (the Mail page is test mode only). */
  modes?: Mode[];
}

export const navigation: NavEntry[] = [
  { path: '', label: 'Home', permission: 'read' },
  { path: '/payments', label: 'Payments', permission: 'read' },
  { path: '/links', label: 'Links', permission: 'read' },
  { path: '/statements', label: 'Statements', permission: 'read' },
  { path: '/subscriptions', label: 'Subscriptions', permission: 'read' },
  { path: '/disbursements', label: 'Disbursements', permission: 'read' },
  { path: '/developers', label: 'Developers', permission: 'read' },
  { path: '/team', label: 'Team', permission: 'read' },
  { path: '/settings', label: 'Settings', permission: 'read' },
  { path: '/audit', label: 'Audit log', permission: 'audit.read' },
  { path: '/mail', label: 'Mail', permission: 'audit.read', modes: ['test'] },
];

/** Messages shown after an action redirected back (`?done=<key>`); the URL never carries free text. */
const DONE: Record<string, string> = {
  accepted: 'The payment was accepted as paid.',
  cancelled: 'The payment was cancelled.',
  captured: 'The capture was asked for. The money moves once it is confirmed on chain.',
  voided: 'The void was asked for. What was not captured goes back to the payer once it is confirmed on chain.',
  refund: 'The refund was requested. It is sent from the hot wallet and the payment becomes refunded when it is.',
  link_created: 'The payment link was created.',
  link_saved: 'The link was saved.',
  link_off: 'The link was turned off; its page takes no more payments.',
  link_on: 'The link was turned back on.',
  webhook_saved: 'The webhook URL was saved.',
  redelivered: 'A new delivery of the event was queued.',
  key_rolled:
    'The key was rolled: the previous keys of this mode stopped working. The new key is shown only once, right after rolling.',
  key_revoked: 'The key was revoked. Requests with it now get 401.',
  invited: 'The invitation was sent.',
  resent: 'A new invitation was sent; the earlier link no longer works.',
  role: 'The role was changed.',
  removed: 'The user was removed and signed out everywhere.',
  settings: 'Settings were saved.',
  logo: 'The logo was saved.',
  logo_removed: 'The logo was removed.',
  password: 'Your password was changed. Every other session was signed out.',
  signed_out: 'You are signed out.',
  reset_sent: 'If that email belongs to an account, a link to reset its password is on its way. It works for an hour.',
  password_set: 'Your password is set.',
  recovery_used:
    'You signed in with a recovery code; it cannot be used again. Make new codes below if you are running low.',
  secret_rolled: 'The webhook secret was rolled.',
  statement_email_on: 'Monthly statements will be emailed to you on the 1st of each month.',
  statement_email_off: 'Monthly statements will no longer be emailed to you.',
  tax_profile: 'The tax profile was saved.',
  invoiced: 'The tax invoice was issued.',
  subscription_cancelled: 'The subscription was cancelled; its open payments were withdrawn and the customer was told.',
  dsb_created: 'The disbursement was created. The owners were emailed to approve it.',
  dsb_approved: 'Your approval was recorded.',
  dsb_released: 'The disbursement was released: its total left the available balance and the payouts are being sent.',
  dsb_cancelled: 'The disbursement was cancelled.',
};

export function flash(key: unknown): Html | string {
  const text = typeof key === 'string' ? DONE[key] : undefined;
  return text ? html`<p class="d-flash" role="status">${text}</p>` : '';
}

/** A whole dashboard document. */
export function documentOf(o: { title: string; body: Html; test?: boolean; bare?: boolean }): string {
  return html`<!doctype html>
<html lang="en">
<head>
${PAGE_HEAD}
<title>${o.title} · Kasse</title>
<link rel="stylesheet" href="${assetUrl('dashboard.css')}">
<script src="${assetUrl('dashboard.js')}" defer></script>
</head>
<body class="${o.test ? 'd-testmode' : ''}${o.bare ? ' d-bare' : ''}">
${o.body}
</body>
</html>
`.value;
}

/** Where the dashboard shows the README's "Going live" section (pages/going-live.ts). */
export const GOING_LIVE_PATH = '/dashboard/live/going-live';

/**
 * Live mode's warning when a live network takes no payments: each such network with why in plain words
 * (`NetworkStatus.plain`: no settings or commands, which the merchant cannot act on), what to do, and a link to
 * "Going live", which gives the operator's reasons and steps.
 */
export function liveBanner(ctx: Pick<Ctx, 'kasse' | 'mode'>): Html | string {
  if (ctx.mode !== 'live') return '';
  const { chains } = ctx.kasse;
  const reasons = new Map<string, string[]>();
  for (const n of chains.networks('live')) {
    const s = chains.status('live', n.id);
    if (s.state === 'running') continue;
    const why = s.plain ?? s.state;
    reasons.set(why, [...(reasons.get(why) ?? []), n.name]);
  }
  if (reasons.size === 0) return '';
  const none = !chains.anyAvailable('live');
  const lead = none
    ? 'Live mode cannot take payments: no network is running. Payments and payment links made now cannot be paid.'
    : 'Some networks take no live payments; payers cannot choose their coins.';
  return html`<div class="d-livebar" role="note" data-live-banner><p><strong>${lead}</strong></p><ul>${[...reasons].map(
    ([why, names]) => html`<li>${names.join(', ')}: ${why}</li>`,
  )}</ul><p>Whoever runs this Kasse finishes the set-up; you can go on in test mode meanwhile. <a href="${GOING_LIVE_PATH}">Going live: what is missing and the steps →</a></p></div>`;
}

/**
 * A signed-in page: header (merchant, mode switch, user), navigation, then the content. `active` is the navigation
 * entry to mark (its path), or null for pages that belong to none (not found, refused).
 */
export function shell(ctx: Ctx, o: { title: string; active: string | null; body: Html; wide?: boolean }): string {
  const base = `/dashboard/${ctx.mode}`;
  const entries = navigation.filter((n) => ctx.can(n.permission) && (!n.modes || n.modes.includes(ctx.mode)));
  // The switch keeps the page when it exists in the other mode (the Mail page does not), else goes Home.
  const pageIn = (m: Mode) =>
    o.active === null || navigation.find((n) => n.path === o.active)?.modes?.includes(m) === false ? '' : o.active;
  const body = html`<a class="d-skip" href="#main">Skip to content</a>
${ctx.mode === 'test' ? html`<div class="d-testbar" role="note">Test mode: test data only, no real money moves</div>` : liveBanner(ctx)}
<header class="d-top">
<a class="d-brand" href="${base}">Kasse</a>
<span class="d-merchant">${ctx.merchant.name}</span>
<nav class="d-modes" aria-label="Mode"><a href="/dashboard/test${pageIn('test')}"${ctx.mode === 'test' ? html` aria-current="page"` : ''} class="d-mode-test">Test</a><a href="/dashboard/live${pageIn('live')}"${ctx.mode === 'live' ? html` aria-current="page"` : ''} class="d-mode-live">Live</a></nav>
<details class="d-user"><summary>${ctx.user.email}</summary><div class="d-menu"><p class="d-role">${ctx.user.role}</p><a href="${base}/account">Account</a><form method="post" action="/dashboard/signout">${csrfField(ctx.csrf)}<button type="submit" class="d-linkbtn">Sign out</button></form></div></details>
</header>
<nav class="d-nav" aria-label="Dashboard">${entries.map(
    (n) => html`<a href="${base}${n.path}"${n.path === o.active ? html` aria-current="page"` : ''}>${n.label}</a>`,
  )}</nav>
<main class="d-main${o.wide ? ' d-wide' : ''}" id="main" tabindex="-1">
<h1>${o.title}</h1>
${flash((ctx.req.query as Record<string, unknown>)?.done)}${o.body}
</main>`;
  return documentOf({ title: o.title, body, test: ctx.mode === 'test' });
}

export function send(reply: FastifyReply, status: number, doc: string): FastifyReply {
  return sendPage(reply, status, doc, 'none');
}

/** A page in the shell: 200, or the status of what went wrong (`told`, shown on the page). */
export function sendShell(ctx: Ctx, told: Told | null | undefined, o: Parameters<typeof shell>[1]): FastifyReply {
  return send(ctx.reply, told ? told.status : 200, shell(ctx, o));
}

/** Redirect after a successful action (303 See Other), with a flash key. */
export function done(reply: FastifyReply, path: string, key?: string): FastifyReply {
  const sep = path.includes('?') ? '&' : '?';
  return reply
    .code(303)
    .header('location', key ? `${path}${sep}done=${key}` : path)
    .send();
}

/** A page for a refusal (403) or a missing object (404). */
export function refusal(ctx: Ctx, status: 403 | 404, message: string): FastifyReply {
  const home = html`<p><a href="/dashboard/${ctx.mode}">Back to Home</a></p>`;
  return send(
    ctx.reply,
    status,
    shell(ctx, {
      title: status === 403 ? 'Not allowed' : 'Not found',
      active: null,
      body: html`<p class="d-empty">${message}</p>${home}`,
    }),
  );
}
