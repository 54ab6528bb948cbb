/**
 * Team.
 *
 *   GET  /dashboard/<mode>/team                    users and roles (everyone reads; owners manage)
 *   POST /dashboard/<mode>/team/invite             owner: email + role; the set-up link goes by email (outbox)
 *   POST /dashboard/<mode>/team/<usr>/role|remove|resend
 *
 * The last owner can be neither removed nor demoted (the users service checks it with the team locked).
 */
import type { FastifyReply } from 'fastify';
import { invalid } from '../../../core/errors.ts';
import { html, type Html } from '../../../core/html.ts';
import { normalEmail, ROLES } from '../../../modules/users/index.ts';
import type { Ctx } from '../context.ts';
import { done, send, shell } from '../layout.ts';
import { csrfField, errorBox, field, select, tell, type Told } from '../forms.ts';
import { badge, when, wrapAt } from '../format.ts';
import type { Form, Router } from '../routing.ts';

const ROLE_NAME: Record<string, string> = { owner: 'Owner', member: 'Member', viewer: 'Viewer' };
/** What each role may do, below the choice (the options stay short enough for a phone). */
const ROLE_HINT =
  'Owner: everything, including team, keys, settings and approving disbursements. Member: payments, refunds, links, webhooks; not team, keys or settings. Viewer: reads everything, changes nothing.';

async function teamPage(ctx: Ctx, told: Told | null = null, values: Form = {}, status = 200) {
  const users = await ctx.kasse.users.team.list(ctx.merchant.id);
  const manage = ctx.can('team.manage');
  const base = `/dashboard/${ctx.mode}/team`;
  const rows = users.map(
    (u) =>
      html`<tr><td data-label="User">${wrapAt(u.email)}${u.id === ctx.user.id ? html` <span class="d-muted">(you)</span>` : ''}</td><td data-label="Role">${
        manage
          ? html`<form method="post" action="${base}/${u.id}/role" class="d-inline d-rolefrm">${csrfField(ctx.csrf)}<label class="d-sr" for="role-${u.id}">Role of ${u.email}</label><select id="role-${u.id}" name="role">${ROLES.map(
              (r) => html`<option value="${r}"${r === u.role ? html` selected` : ''}>${r}</option>`,
            )}</select><button type="submit" class="d-btn d-secondary d-small">Save</button></form>`
          : u.role
      }</td><td data-label="Status">${badge(u.status)}${u.totp ? html` ${badge('2fa')}` : ''}</td><td data-label="Last sign-in">${when(u.last_signin_at)}</td><td>${
        manage
          ? html`${
              u.status === 'invited'
                ? html`<form method="post" action="${base}/${u.id}/resend" class="d-inline">${csrfField(ctx.csrf)}<button type="submit" class="d-btn d-secondary d-small">Resend invitation</button></form> `
                : ''
            }<details class="d-confirm"><summary>Remove…</summary><form method="post" action="${base}/${u.id}/remove">${csrfField(ctx.csrf)}<p>Remove ${u.email}? They are signed out at once.</p><button type="submit" class="d-btn d-danger d-small">Remove ${u.email}</button></form></details>`
          : ''
      }</td></tr>`,
  );
  const invite: Html | string = manage
    ? html`<section class="d-panel"><h2>Invite someone</h2><form method="post" action="${base}/invite" class="d-form">${csrfField(ctx.csrf)}
${field({ name: 'email', label: 'Email', type: 'email', value: values.email ?? '', required: true, told })}
${select({ name: 'role', label: 'Role', value: values.role ?? 'member', told, hint: ROLE_HINT, options: ROLES.map((r) => [r, ROLE_NAME[r]!] as [string, string]) })}
<p class="d-hint">They get an email with a link to choose a password; it works once, for 24 hours. Owners must set up two-factor authentication at first sign-in.</p>
<button type="submit" class="d-btn">Send invitation</button></form></section>`
    : '';
  const body = html`${errorBox(told)}<section class="d-panel"><table class="d-table"><thead><tr><th>User</th><th>Role</th><th>Status</th><th>Last sign-in</th><th></th></tr></thead><tbody>${rows}</tbody></table>${
    manage ? '' : html`<p class="d-hint">Only owners can invite, change roles and remove users.</p>`
  }</section>${invite}`;
  return send(ctx.reply, status, shell(ctx, { title: 'Team', active: '/team', body, wide: true }));
}

export function teamPages(r: Router): void {
  const { kasse } = r;
  const base = (ctx: Ctx) => `/dashboard/${ctx.mode}/team`;
  const userId = (id: string | undefined) => {
    if (!id || !/^usr_[0-9A-Z]{26}$/.test(id)) throw invalid('bad user id', 'user');
    return id;
  };
  const HINTS = {
    email: 'Enter the email address of the person to invite.',
    role: 'Choose owner, member or viewer.',
    user: 'There is no such user on your team.',
  };
  /** The team page again, with why a change to a member was refused. */
  const refused = (ctx: Ctx, err: unknown) => {
    const told = tell(err, HINTS, true);
    return teamPage(ctx, told, {}, told.status);
  };

  r.page('/team', 'read', async (ctx) => teamPage(ctx));

  r.action('/team/invite', 'team.manage', async (ctx, form) => {
    try {
      const member = (await kasse.users.team.list(ctx.merchant.id)).find(
        (u) => u.email === normalEmail(form.email ?? ''),
      );
      if (member) {
        const told: Told = {
          status: 400,
          code: 'invalid_request',
          field: 'email',
          message: `${member.email} is already on your team as ${member.role}${member.status === 'invited' ? ' (invited, not yet signed in: use Resend invitation to send a new link)' : ''}.`,
        };
        return teamPage(ctx, told, form, told.status);
      }
      await kasse.users.team.create({
        merchantId: ctx.merchant.id,
        email: form.email ?? '',
        role: form.role ?? '',
        actor: ctx.actor,
        invite: true,
      });
      return done(ctx.reply, base(ctx), 'invited');
    } catch (err) {
      const told = tell(err, { role: HINTS.role }, true);
      return teamPage(ctx, told, form, told.status);
    }
  });

  /** An owner's action on a team member `:id`: `run` changes it and says where to go; a refusal shows the Team page. */
  const memberAction = (action: string, run: (ctx: Ctx, form: Form, id: string) => Promise<FastifyReply>): void =>
    r.action(`/team/:id/${action}`, 'team.manage', async (ctx, form, p) => {
      try {
        return await run(ctx, form, p.id);
      } catch (err) {
        return refused(ctx, err);
      }
    });

  memberAction('role', async (ctx, form, id) => {
    await kasse.users.team.changeRole(ctx.merchant.id, userId(id), form.role ?? '', ctx.actor);
    return done(ctx.reply, base(ctx), 'role');
  });

  memberAction('remove', async (ctx, _f, id) => {
    await kasse.users.team.remove(ctx.merchant.id, userId(id), ctx.actor);
    if (id === ctx.user.id) return ctx.reply.code(303).header('location', '/dashboard/signin').send();
    return done(ctx.reply, base(ctx), 'removed');
  });

  memberAction('resend', async (ctx, _f, id) => {
    await kasse.users.team.resendInvite(ctx.merchant.id, userId(id), ctx.actor);
    return done(ctx.reply, base(ctx), 'resent');
  });
}
