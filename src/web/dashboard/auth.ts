/**
 * Signing in and out, and the pages a user reaches before (or on the way to) a full session:
 *
 *   GET/POST /dashboard/signin              email and password (throttled; a device cookie marks browsers that signed in)
 *   GET/POST /dashboard/signin/code         the second factor: a TOTP code or a recovery code
 *   GET/POST /dashboard/enrol               TOTP enrolment (QR code of the otpauth URI), then 10 recovery codes once
 *   GET/POST /dashboard/setup/<token>       one-time set-up link: choose a password
 *   GET/POST /dashboard/reset[/<token>]     password reset by emailed link
 *   POST     /dashboard/signout
 *   GET/POST /dashboard/<mode>/account      change password, second factor, new recovery codes
 *
 * Forms before sign-in carry a CSRF token bound to a random cookie of the browser (no login CSRF).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalid } from '../../core/errors.ts';
import { html, type Html } from '../../core/html.ts';
import type { Kasse } from '../../kasse.ts';
import { PASSWORD_MIN, type SessionRow, type UserRow } from '../../modules/users/index.ts';
import { qrSvg } from '../page.ts';
import {
  checkPreCsrf,
  checkSessionCsrf,
  clearCookie,
  clientMeta,
  cookieName,
  currentSession,
  parseCookies,
  pendingStep,
  preCsrf,
  safeNext,
  sessionCsrf,
  setCookie,
} from './context.ts';
import { documentOf, done, flash, send, shell } from './layout.ts';
import { csrfField, errorBox, field, tell, type Told } from './forms.ts';
import { formOf, type Router } from './routing.ts';

const SESSION_COOKIE_SECONDS = 12 * 3600;
const DEVICE_COOKIE_SECONDS = 365 * 24 * 3600;
const ISSUER = 'Kasse';

/** A page outside the signed-in frame: one card. */
function card(title: string, body: Html, opts: { test?: boolean } = {}): string {
  return documentOf({
    title,
    bare: true,
    test: opts.test,
    body: html`<main class="d-card" id="main"><p class="d-brand">Kasse</p><h1>${title}</h1>${body}</main>`,
  });
}

function nextField(next: string | null): Html | string {
  return next ? html`<input type="hidden" name="next" value="${next}">` : '';
}

function nextQuery(next: string | null): string {
  return next ? `?next=${encodeURIComponent(next)}` : '';
}

/** Where a signed-in user lands: the page they asked for, else the mode they used last. */
function landing(kasse: Kasse, req: FastifyRequest, next: string | null): string {
  if (next) return next;
  const mode = parseCookies(req)[cookieName(kasse, 'mode')];
  return `/dashboard/${mode === 'live' ? 'live' : 'test'}`;
}

function startSession(kasse: Kasse, reply: FastifyReply, token: string): void {
  setCookie(reply, kasse, 'session', token, SESSION_COOKIE_SECONDS);
}

function signinPage(
  kasse: Kasse,
  req: FastifyRequest,
  reply: FastifyReply,
  o: { email?: string; next: string | null; told?: Told | null; done?: unknown },
): string {
  const csrf = preCsrf(kasse, req, reply);
  return card(
    'Sign in',
    html`${flash(o.done)}${errorBox(o.told ?? null)}<form method="post" action="/dashboard/signin" class="d-form">${csrfField(csrf)}${nextField(o.next)}
${field({ name: 'email', label: 'Email', type: 'email', value: o.email ?? '', required: true, attrs: html` autocomplete="username" autofocus` })}
${field({ name: 'password', label: 'Password', type: 'password', required: true, told: o.told, attrs: html` autocomplete="current-password"` })}
<button type="submit" class="d-btn">Sign in</button></form>
<p class="d-alt"><a href="/dashboard/reset">Forgot your password?</a></p>`,
  );
}

function codePage(kasse: Kasse, session: SessionRow, o: { next: string | null; told?: Told | null }): string {
  return card(
    'Two-factor authentication',
    html`${errorBox(o.told ?? null)}<p>Enter the 6-digit code from your authenticator app, or one of your recovery codes.</p>
<form method="post" action="/dashboard/signin/code" class="d-form">${csrfField(sessionCsrf(kasse, session))}${nextField(o.next)}
${field({ name: 'code', label: 'Code', required: true, told: o.told, attrs: html` autocomplete="one-time-code" inputmode="text" autofocus maxlength="20"` })}
<button type="submit" class="d-btn">Continue</button></form>`,
  );
}

async function enrolPage(
  kasse: Kasse,
  session: SessionRow,
  user: UserRow,
  o: { told?: Told | null; next: string | null },
): Promise<string> {
  const t =
    kasse.users.factors.pendingEnrolment(user, ISSUER) ?? (await kasse.users.factors.beginEnrolment(user, ISSUER));
  const grouped = t.secret.replace(/(.{4})/g, '$1 ').trim();
  const intro =
    user.role === 'owner' && session.stage === 'enrol'
      ? 'Owners must protect their account with a second factor before anything else.'
      : 'Protect your account with a second factor.';
  return card(
    'Set up two-factor authentication',
    html`${errorBox(o.told ?? null)}<p>${intro} Scan the QR code with an authenticator app (Google Authenticator, 1Password, Aegis, …), then enter the code it shows.</p>
<div class="d-qr">${await qrSvg(t.uri, 'QR code to add Kasse to an authenticator app')}</div>
<p class="d-hint">Cannot scan? Enter this key in the app: <code class="d-secret" data-totp-secret="${t.secret}">${grouped}</code></p>
<form method="post" action="/dashboard/enrol" class="d-form">${csrfField(sessionCsrf(kasse, session))}${nextField(o.next)}
${field({ name: 'code', label: '6-digit code', required: true, told: o.told, attrs: html` autocomplete="one-time-code" inputmode="numeric" maxlength="7"` })}
<button type="submit" class="d-btn">Turn on</button></form>`,
  );
}

function recoveryCodesPage(codes: string[], continueTo: string): string {
  return card(
    'Save your recovery codes',
    html`<p>If you lose your phone, each of these codes signs you in once instead of a 6-digit code. They are shown only now: store them somewhere safe (a password manager).</p>
<ol class="d-codes" id="recovery-codes">${codes.map((c) => html`<li><code>${c}</code></li>`)}</ol>
<p><button type="button" class="d-btn d-secondary" data-copy="${codes.join('\n')}">Copy codes</button></p>
<p><a class="d-btn" href="${continueTo}">I saved them — continue</a></p>`,
  );
}

function passwordPage(
  kasse: Kasse,
  req: FastifyRequest,
  reply: FastifyReply,
  o: { title: string; action: string; user: UserRow; told?: Told | null; intro: string },
): string {
  const csrf = preCsrf(kasse, req, reply);
  return card(
    o.title,
    html`${errorBox(o.told ?? null)}<p>${o.intro}</p><form method="post" action="${o.action}" class="d-form">${csrfField(csrf)}
<input type="hidden" name="username" value="${o.user.email}" autocomplete="username">
${field({ name: 'password', label: 'New password', type: 'password', required: true, told: o.told, hint: `At least ${PASSWORD_MIN} characters, not a common password.`, attrs: html` autocomplete="new-password" minlength="${PASSWORD_MIN}"` })}
${field({ name: 'confirm', label: 'Repeat the password', type: 'password', required: true, told: o.told, attrs: html` autocomplete="new-password"` })}
<button type="submit" class="d-btn">Save password</button></form>`,
  );
}

const linkGone = () =>
  card(
    'Link not valid',
    html`<p>This link has been used already, has expired, or was replaced by a newer one. Ask an owner of the account for a new invitation, or <a href="/dashboard/reset">reset your password</a>.</p>`,
  );

export function authRoutes(r: Router): void {
  const { app, kasse } = r;

  app.get('/dashboard', async (req, reply) => {
    const found = await currentSession(kasse, req);
    if (!found) return reply.code(303).header('location', '/dashboard/signin').send();
    return reply
      .code(303)
      .header('location', pendingStep(found.session) ?? landing(kasse, req, null))
      .send();
  });

  app.get<{ Querystring: { next?: string; done?: string } }>('/dashboard/signin', async (req, reply) => {
    const next = safeNext(req.query.next);
    const found = await currentSession(kasse, req);
    if (found)
      return reply
        .code(303)
        .header(
          'location',
          (pendingStep(found.session) ?? landing(kasse, req, next)) +
            (pendingStep(found.session) ? nextQuery(next) : ''),
        )
        .send();
    return send(reply, 200, signinPage(kasse, req, reply, { next, done: req.query.done }));
  });

  app.post('/dashboard/signin', async (req, reply) => {
    const form = formOf(req.body);
    const next = safeNext(form.next);
    try {
      checkPreCsrf(kasse, req, form);
      const { user, session } = await kasse.users.signin.signIn(form.email ?? '', form.password ?? '', {
        ...clientMeta(req),
        device: parseCookies(req)[cookieName(kasse, 'device')],
      });
      startSession(kasse, reply, session.token);
      setCookie(reply, kasse, 'device', kasse.users.signin.deviceCookie(user.id), DEVICE_COOKIE_SECONDS);
      const step = pendingStep(session.session);
      return reply
        .code(303)
        .header('location', step ? step + nextQuery(next) : landing(kasse, req, next))
        .send();
    } catch (err) {
      const told = tell(err, {}, true);
      if (told.code === 'rate_limited')
        reply.header('retry-after', (err as { headers: Record<string, string> }).headers['Retry-After']);
      return send(reply, told.status, signinPage(kasse, req, reply, { email: form.email, next, told }));
    }
  });

  app.get<{ Querystring: { next?: string } }>('/dashboard/signin/code', async (req, reply) => {
    const found = await currentSession(kasse, req);
    if (!found || found.session.stage !== 'password')
      return reply
        .code(303)
        .header('location', found ? landing(kasse, req, null) : '/dashboard/signin')
        .send();
    return send(reply, 200, codePage(kasse, found.session, { next: safeNext(req.query.next) }));
  });

  app.post('/dashboard/signin/code', async (req, reply) => {
    const form = formOf(req.body);
    const next = safeNext(form.next);
    const found = await currentSession(kasse, req);
    if (!found || found.session.stage !== 'password')
      return reply.code(303).header('location', '/dashboard/signin').send();
    try {
      checkSessionCsrf(kasse, req, found.session, form);
      const { recoveryCodesLeft } = await kasse.users.factors.secondFactor(
        found.session,
        found.user,
        form.code ?? '',
        clientMeta(req),
      );
      const to =
        recoveryCodesLeft !== null
          ? `${landing(kasse, req, null)}/account?done=recovery_used`
          : landing(kasse, req, next);
      return reply.code(303).header('location', to).send();
    } catch (err) {
      const told = tell(err, {}, true);
      if (told.code === 'rate_limited')
        reply.header('retry-after', (err as { headers: Record<string, string> }).headers['Retry-After']);
      return send(reply, told.status, codePage(kasse, found.session, { next, told }));
    }
  });

  app.get<{ Querystring: { next?: string } }>('/dashboard/enrol', async (req, reply) => {
    const found = await currentSession(kasse, req);
    if (!found) return reply.code(303).header('location', '/dashboard/signin').send();
    if (found.session.stage === 'password') return reply.code(303).header('location', '/dashboard/signin/code').send();
    if (found.user.totp_enabled_at !== null)
      return reply
        .code(303)
        .header('location', landing(kasse, req, null))
        .send();
    return send(reply, 200, await enrolPage(kasse, found.session, found.user, { next: safeNext(req.query.next) }));
  });

  app.post('/dashboard/enrol', async (req, reply) => {
    const form = formOf(req.body);
    const next = safeNext(form.next);
    const found = await currentSession(kasse, req);
    if (!found || found.session.stage === 'password')
      return reply.code(303).header('location', '/dashboard/signin').send();
    try {
      checkSessionCsrf(kasse, req, found.session, form);
      const codes = await kasse.users.factors.confirmEnrolment(
        found.session,
        found.user,
        form.code ?? '',
        clientMeta(req),
      );
      return send(reply, 200, recoveryCodesPage(codes, landing(kasse, req, next)));
    } catch (err) {
      const told = tell(err, {}, true);
      const fresh = (await currentSession(kasse, req)) ?? found;
      return send(reply, told.status, await enrolPage(kasse, fresh.session, fresh.user, { told, next }));
    }
  });

  for (const purpose of ['setup', 'reset'] as const) {
    const title = purpose === 'setup' ? 'Set up your account' : 'Choose a new password';
    app.get<{ Params: { token: string } }>(`/dashboard/${purpose}/:token`, async (req, reply) => {
      const user = await kasse.users.links.checkToken(req.params.token, purpose);
      if (!user) return send(reply, 404, linkGone());
      const intro =
        purpose === 'setup'
          ? `Choose a password for ${user.email}.`
          : `Choose a new password for ${user.email}. Every session of the account will be signed out.`;
      return send(
        reply,
        200,
        passwordPage(kasse, req, reply, { title, action: `/dashboard/${purpose}/${req.params.token}`, user, intro }),
      );
    });
    app.post<{ Params: { token: string } }>(`/dashboard/${purpose}/:token`, async (req, reply) => {
      const form = formOf(req.body);
      const user = await kasse.users.links.checkToken(req.params.token, purpose);
      if (!user) return send(reply, 404, linkGone());
      try {
        checkPreCsrf(kasse, req, form);
        if ((form.password ?? '') !== (form.confirm ?? '')) {
          throw invalid('The two passwords are not the same.', 'confirm');
        }
        const { session } = await kasse.users.links.redeemToken(
          req.params.token,
          purpose,
          form.password ?? '',
          clientMeta(req),
        );
        startSession(kasse, reply, session.token);
        const step = pendingStep(session.session);
        return reply
          .code(303)
          .header('location', step ?? `${landing(kasse, req, null)}?done=password_set`)
          .send();
      } catch (err) {
        const told = tell(err, {}, true);
        const intro =
          purpose === 'setup' ? `Choose a password for ${user.email}.` : `Choose a new password for ${user.email}.`;
        return send(
          reply,
          told.status,
          passwordPage(kasse, req, reply, {
            title,
            action: `/dashboard/${purpose}/${req.params.token}`,
            user,
            told,
            intro,
          }),
        );
      }
    });
  }

  const resetForm = (req: FastifyRequest, reply: FastifyReply, told: Told | null, email = '') =>
    card(
      'Reset your password',
      html`${errorBox(told)}<p>Enter the email of your account. If it has one, we send a link to choose a new password.</p>
<form method="post" action="/dashboard/reset" class="d-form">${csrfField(preCsrf(kasse, req, reply))}
${field({ name: 'email', label: 'Email', type: 'email', value: email, required: true, told, attrs: html` autocomplete="username"` })}
<button type="submit" class="d-btn">Send the link</button></form><p class="d-alt"><a href="/dashboard/signin">Back to sign in</a></p>`,
    );

  app.get('/dashboard/reset', async (req, reply) => send(reply, 200, resetForm(req, reply, null)));

  app.post('/dashboard/reset', async (req, reply) => {
    const form = formOf(req.body);
    try {
      checkPreCsrf(kasse, req, form);
      await kasse.users.links.requestReset(form.email ?? '', clientMeta(req));
      return reply.code(303).header('location', '/dashboard/signin?done=reset_sent').send();
    } catch (err) {
      const told = tell(err, {}, true);
      return send(reply, told.status, resetForm(req, reply, told, form.email));
    }
  });

  app.post('/dashboard/signout', async (req, reply) => {
    const form = formOf(req.body);
    const found = await currentSession(kasse, req);
    if (found) {
      try {
        checkSessionCsrf(kasse, req, found.session, form);
      } catch (err) {
        return send(reply, 403, card('Form refused', html`${errorBox(tell(err, {}, true))}`));
      }
      await kasse.users.sessions.signOut(found.session, found.user, clientMeta(req));
    }
    clearCookie(reply, kasse, 'session');
    return reply.code(303).header('location', '/dashboard/signin?done=signed_out').send();
  });

  // ---- account ----------------------------------------------------------------------------------------------------

  const accountBody = (
    ctx: Parameters<Parameters<Router['page']>[2]>[0],
    o: { told?: Told | null; codes?: string[] } = {},
  ) =>
    html`${errorBox(o.told ?? null)}
<section class="d-panel"><h2>Password</h2><form method="post" action="/dashboard/${ctx.mode}/account/password" class="d-form">${csrfField(ctx.csrf)}
<input type="hidden" name="username" value="${ctx.user.email}" autocomplete="username">
${field({ name: 'current_password', label: 'Current password', type: 'password', required: true, told: o.told, attrs: html` autocomplete="current-password"` })}
${field({ name: 'new_password', label: 'New password', type: 'password', required: true, told: o.told, hint: `At least ${PASSWORD_MIN} characters, not a common password. Every other session is signed out.`, attrs: html` autocomplete="new-password"` })}
<button type="submit" class="d-btn">Change password</button></form></section>
<section class="d-panel"><h2>Two-factor authentication</h2>${
      ctx.user.totp_enabled_at
        ? html`<p>On since ${ctx.user.totp_enabled_at.toISOString().slice(0, 10)}.</p>${
            o.codes
              ? html`<p>Your new recovery codes (the old ones no longer work):</p><ol class="d-codes" id="recovery-codes">${o.codes.map((c) => html`<li><code>${c}</code></li>`)}</ol>`
              : html`<form method="post" action="/dashboard/${ctx.mode}/account/recovery-codes" class="d-form">${csrfField(ctx.csrf)}
${field({ name: 'code', label: 'Current 6-digit code', required: true, told: o.told, attrs: html` autocomplete="one-time-code" inputmode="numeric" maxlength="7"` })}
<button type="submit" class="d-btn d-secondary">New recovery codes</button></form>`
          }`
        : html`<p>Off. <a href="/dashboard/enrol">Set it up</a> to protect your account.</p>`
    }</section>
<section class="d-panel"><h2>Your access</h2><p>${ctx.user.email} · ${ctx.user.role} of ${ctx.merchant.name}</p></section>`;

  const accountPage = (ctx: Parameters<typeof accountBody>[0], status: number, o?: Parameters<typeof accountBody>[1]) =>
    send(ctx.reply, status, shell(ctx, { title: 'Account', active: '/account', body: accountBody(ctx, o) }));

  r.page('/account', 'read', async (ctx) => accountPage(ctx, 200));

  r.action('/account/password', 'read', async (ctx, form) => {
    try {
      const s = await kasse.users.signin.changePassword(
        ctx.session,
        ctx.user,
        form.current_password ?? '',
        form.new_password ?? '',
        ctx.meta,
      );
      startSession(kasse, ctx.reply, s.token);
      return done(ctx.reply, `/dashboard/${ctx.mode}/account`, 'password');
    } catch (err) {
      const told = tell(err, {}, true);
      return accountPage(ctx, told.status, { told });
    }
  });

  r.action('/account/recovery-codes', 'read', async (ctx, form) => {
    try {
      const codes = await kasse.users.factors.regenerateRecoveryCodes(ctx.session, ctx.user, form.code ?? '', ctx.meta);
      return accountPage(ctx, 200, { codes });
    } catch (err) {
      const told = tell(err, {}, true);
      return accountPage(ctx, told.status, { told });
    }
  });
}
