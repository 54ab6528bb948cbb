/**
 * Team and Settings.
 *
 *   GET  /dashboard/<mode>/team                    users and roles (everyone reads; owners manage)
 *   POST /dashboard/<mode>/team/invite             owner: email + role; the set-up link goes by email (outbox)
 *   POST /dashboard/<mode>/team/<usr>/role|remove|resend
 *   GET  /dashboard/<mode>/settings                merchant name, payout coin, disbursement quorum, tax profile
 *   POST /dashboard/<mode>/settings                owner
 *
 * The last owner can be neither removed nor demoted (the users service checks it with the team locked).
 */
import { invalid } from '../../../core/errors.ts';
import { html, type Html } from '../../../core/html.ts';
import { ROLES } from '../../../modules/users/permissions.ts';
import { normalEmail } from '../../../modules/users/service.ts';
import type { Ctx } from '../context.ts';
import { badge, csrfField, done, errorBox, field, select, send, shell, tell, when, type Told } from '../layout.ts';
import type { Form, Router } from '../routing.ts';

const ROLE_TEXT: Record<string, string> = {
  owner: 'Owner — everything, including team, keys, settings and approving disbursements',
  member: 'Member — payments, refunds, links, webhooks; not team, keys or settings',
  viewer: 'Viewer — reads everything, changes nothing',
};

async function teamPage(ctx: Ctx, told: Told | null = null, values: Form = {}, status = 200) {
  const users = await ctx.kasse.users.list(ctx.merchant.id);
  const manage = ctx.can('team.manage');
  const base = `/dashboard/${ctx.mode}/team`;
  const rows = users.map(
    (u) => html`<tr><td data-label="User">${u.email}${u.id === ctx.user.id ? html` <span class="d-muted">(you)</span>` : ''}</td><td data-label="Role">${
      manage
        ? html`<form method="post" action="${base}/${u.id}/role" class="d-inline d-rolefrm">${csrfField(ctx.csrf)}<label class="d-sr" for="role-${u.id}">Role of ${u.email}</label><select id="role-${u.id}" name="role">${ROLES.map(
            (r) => html`<option value="${r}"${r === u.role ? html` selected` : ''}>${r}</option>`,
          )}</select><button type="submit" class="d-btn d-secondary d-small">Save</button></form>`
        : u.role
    }</td><td data-label="Status">${badge(u.status)}${u.totp ? html` ${badge('2fa')}` : ''}</td><td data-label="Last sign-in">${when(u.last_signin_at)}</td><td>${
      manage
        ? html`${
            u.status === 'invited' ? html`<form method="post" action="${base}/${u.id}/resend" class="d-inline">${csrfField(ctx.csrf)}<button type="submit" class="d-btn d-secondary d-small">Resend invitation</button></form> ` : ''
          }<details class="d-confirm"><summary>Remove…</summary><form method="post" action="${base}/${u.id}/remove">${csrfField(ctx.csrf)}<p>Remove ${u.email}? They are signed out at once.</p><button type="submit" class="d-btn d-danger d-small">Remove ${u.email}</button></form></details>`
        : ''
    }</td></tr>`,
  );
  const invite: Html | string = manage
    ? html`<section class="d-panel"><h2>Invite someone</h2><form method="post" action="${base}/invite" class="d-form">${csrfField(ctx.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: values.email ?? '', required: true, told })}
${select({ name: 'role', label: 'Role', value: values.role ?? 'member', told, options: ROLES.map((r) => [r, ROLE_TEXT[r]!] as [string, string]) })}
<p class="d-hint">They get an email with a link to choose a password; it works once, for 24 hours. Owners must set up two-factor authentication at first sign-in.</p>
<button type="submit" class="d-btn">Send invitation</button></form></section>`
    : '';
  const body = html`${errorBox(told)}<section class="d-panel"><table class="d-table"><thead><tr><th>User</th><th>Role</th><th>Status</th><th>Last sign-in</th><th></th></tr></thead><tbody>${rows}</tbody></table>${
    manage ? '' : html`<p class="d-hint">Only owners can invite, change roles and remove users.</p>`
  }</section>${invite}`;
  return send(ctx.reply, status, shell(ctx, { title: 'Team', active: '/team', body, wide: true }));
}

/** A settings section: the fields it shows and how it saves them (in the settings transaction). */
export interface SettingsSection {
  title: string;
  render(ctx: Ctx, told: Told | null, values: Form): Promise<Html> | Html;
}

/** Token ids of either mode on networks whose chain family pays out disbursements (`ChainFamily.payouts`). */
function payoutTokens(ctx: Ctx): Array<[string, string]> {
  const seen = new Map<string, string>();
  const paying = new Set(ctx.kasse.families.filter((f) => f.family.payouts).map((f) => f.family.name));
  for (const mode of ['live', 'test'] as const) {
    for (const t of ctx.kasse.chains.tokens(mode)) {
      if (paying.has(ctx.kasse.chains.network(mode, t.chain)?.family ?? '') && !seen.has(t.id)) seen.set(t.id, `${t.symbol} on ${ctx.kasse.chains.network(mode, t.chain)?.name ?? t.chain}`);
    }
  }
  return [...seen];
}

/**
 * Sections of the Settings page, in order. The tax profile for invoices is set on `PATCH /account` and gets its
 * section here (marked below) from the invoices capability.
 */
export const settingsSections: SettingsSection[] = [
  {
    title: 'Business',
    render: (ctx, told, values) =>
      field({ name: 'name', label: 'Merchant name (shown to payers)', value: values.name ?? ctx.merchant.name, required: true, told, attrs: html` maxlength="120"${ctx.can('settings.write') ? '' : html` disabled`}` }),
  },
  {
    title: 'Disbursements',
    render: async (ctx, told, values) => {
      const owners = await ctx.kasse.users.ownerCount(ctx.kasse.db, ctx.merchant.id);
      const quorum: Array<[string, string]> = [['', `Automatic: ${owners >= 2 ? 2 : 1} now (2 when there are two or more owners, else 1)`]];
      for (let n = 1; n <= Math.max(owners, ctx.merchant.approvalsRequired ?? 0); n++) quorum.push([String(n), `${n} owner approval${n === 1 ? '' : 's'}`]);
      return html`${select({ name: 'payout_token', label: 'Payout coin', value: values.payout_token ?? ctx.merchant.payoutToken, told, options: payoutTokens(ctx), hint: 'Disbursements pay out in this coin; destinations are addresses of its network.' })}
${select({ name: 'approvals_required', label: 'Approvals a disbursement needs', value: values.approvals_required ?? (ctx.merchant.approvalsRequired === null ? '' : String(ctx.merchant.approvalsRequired)), told, options: quorum, hint: `Owners approve on the dashboard with a fresh two-factor code. The account has ${owners} owner${owners === 1 ? '' : 's'}.` })}`;
    },
  },
];

/**
 * Forms other capabilities add below the settings, each posting to its own action (the tax profile, which is set per
 * mode). Each is given the error of a failed form and the values typed into it.
 */
export const settingsForms: Array<(ctx: Ctx, told: Told | null, values: Form) => Promise<Html> | Html> = [];

/** The Settings page; `told` and `values` show a failed form again (with `status`). */
export async function settingsPage(ctx: Ctx, told: Told | null = null, values: Form = {}, status = 200) {
  const write = ctx.can('settings.write');
  const sections = await Promise.all(settingsSections.map(async (s) => html`<fieldset class="d-panel"><legend>${s.title}</legend>${await s.render(ctx, told, values)}</fieldset>`));
  const body = html`${errorBox(told)}<form method="post" action="/dashboard/${ctx.mode}/settings" class="d-form">${csrfField(ctx.csrf)}${sections}
${write ? html`<button type="submit" class="d-btn">Save settings</button>` : html`<p class="d-hint">Only owners can change settings.</p>`}</form>
${await Promise.all(settingsForms.map((f) => f(ctx, told, values)))}`;
  return send(ctx.reply, status, shell(ctx, { title: 'Settings', active: '/settings', body }));
}

export function teamPages(r: Router): void {
  const { kasse } = r;
  const base = (ctx: Ctx) => `/dashboard/${ctx.mode}/team`;
  const userId = (id: string | undefined) => {
    if (!id || !/^usr_[0-9A-Z]{26}$/.test(id)) throw invalid('bad user id', 'user');
    return id;
  };
  const HINTS = { email: 'Enter the email address of the person to invite.', role: 'Choose owner, member or viewer.', user: 'There is no such user on your team.' };

  r.page('/team', 'read', async (ctx) => teamPage(ctx));

  r.action('/team/invite', 'team.manage', async (ctx, form) => {
    try {
      const member = (await kasse.users.list(ctx.merchant.id)).find((u) => u.email === normalEmail(form.email ?? ''));
      if (member) {
        const told: Told = { status: 400, code: 'invalid_request', field: 'email', message: `${member.email} is already on your team as ${member.role}${member.status === 'invited' ? ' (invited, not yet signed in: use Resend invitation to send a new link)' : ''}.` };
        return teamPage(ctx, told, form, told.status);
      }
      await kasse.users.create({ merchantId: ctx.merchant.id, email: form.email ?? '', role: form.role ?? '', actor: ctx.actor, invite: true });
      return done(ctx.reply, base(ctx), 'invited');
    } catch (err) {
      const told = tell(err, { role: HINTS.role }, true);
      return teamPage(ctx, told, form, told.status);
    }
  });

  r.action('/team/:id/role', 'team.manage', async (ctx, form, p) => {
    try {
      await kasse.users.changeRole(ctx.merchant.id, userId(p.id), form.role ?? '', ctx.actor);
      return done(ctx.reply, base(ctx), 'role');
    } catch (err) {
      const told = tell(err, HINTS, true);
      return teamPage(ctx, told, {}, told.status);
    }
  });

  r.action('/team/:id/remove', 'team.manage', async (ctx, _f, p) => {
    try {
      await kasse.users.remove(ctx.merchant.id, userId(p.id), ctx.actor);
      if (p.id === ctx.user.id) return ctx.reply.code(303).header('location', '/dashboard/signin').send();
      return done(ctx.reply, base(ctx), 'removed');
    } catch (err) {
      const told = tell(err, HINTS, true);
      return teamPage(ctx, told, {}, told.status);
    }
  });

  r.action('/team/:id/resend', 'team.manage', async (ctx, _f, p) => {
    try {
      await kasse.users.resendInvite(ctx.merchant.id, userId(p.id), ctx.actor);
      return done(ctx.reply, base(ctx), 'resent');
    } catch (err) {
      const told = tell(err, HINTS, true);
      return teamPage(ctx, told, {}, told.status);
    }
  });

  r.page('/settings', 'read', async (ctx) => settingsPage(ctx));

  r.action('/settings', 'settings.write', async (ctx, form) => {
    try {
      const q = form.approvals_required ?? '';
      if (q !== '' && !/^\d{1,2}$/.test(q)) throw invalid('approvals_required must be 1 to 20', 'approvals_required');
      const approvals = q === '' ? null : Number(q);
      const tokens = payoutTokens(ctx).map(([id]) => id);
      await kasse.merchantSettings.save(ctx.merchant.id, { name: form.name, payoutToken: form.payout_token, approvalsRequired: approvals }, tokens, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/settings`, 'settings');
    } catch (err) {
      const told = tell(err, { name: 'Enter a name of 1 to 120 characters.', payout_token: 'Choose a coin from the list.' }, true);
      return settingsPage(ctx, told, form, told.status);
    }
  });
}
