/**
 * Developers: API keys, the webhook URL and secret, and the event log — per mode.
 *
 *   GET  /dashboard/<mode>/developers                    keys (a new one shown once), webhook URL, secret controls
 *   GET  /dashboard/<mode>/developers/keys/roll          owner: what rolling does, and the form (live: with a code)
 *   POST /dashboard/<mode>/developers/keys/roll          owner: a new key, the mode's old keys revoked; redirects to
 *                                                        the Developers page, which shows the key once (kept sealed
 *                                                        as a session note until then), so a reload rolls nothing
 *   GET  /dashboard/<mode>/developers/keys/<id>/revoke   owner: what revoking does, and the form (live: with a code)
 *   POST /dashboard/<mode>/developers/keys/<id>/revoke   owner
 *
 * Live keys are rolled and revoked only after a confirmation page and the owner's current TOTP code.
 *   POST /dashboard/<mode>/developers/webhook-url        owner, member
 *   POST /dashboard/<mode>/developers/secret/reveal      owner, with a fresh TOTP code
 *   POST /dashboard/<mode>/developers/secret/roll        owner, with a fresh TOTP code: deliveries carry two `v1`
 *                                                        signatures (new and old secret) for 24 hours
 *   GET  /dashboard/<mode>/developers/events[/<id>]      the event log, each delivery and attempt
 *   POST /dashboard/<mode>/developers/events/<id>/redeliver
 *
 * The webhook secret signs both modes' deliveries (one per merchant, as the spec gives it with the keys).
 */
import { invalid } from '../../../core/errors.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import { html, type Html } from '../../../core/html.ts';
import { crossSite, type Ctx } from '../context.ts';
import { done, refusal, send, shell, sendShell } from '../layout.ts';
import { csrfField, errorBox, field, found, tell, type Told, codeField, PAGE_HINT } from '../forms.ts';
import { badge, when } from '../format.ts';
import type { Router } from '../routing.ts';
import { textLength } from '../../../core/text.ts';

interface Shown {
  /** A new API key, shown once. */
  key?: string;
  /** Secrets revealed or rolled. */
  secrets?: { current: string; previous: string | null; previousUntil: string | null; rolled: boolean };
}

/** Whether rolling and revoking keys of `mode` asks for a confirmation page and a TOTP code (live money). */
const confirmed = (mode: Ctx['mode']) => mode === 'live';

/**
 * The page that confirms rolling (`keyId` null) or revoking a key: what happens, and the form — with the owner's
 * current code in live mode.
 */
function keyConfirmPage(ctx: Ctx, keyId: string | null, told: Told | null = null, status = 200) {
  const base = `/dashboard/${ctx.mode}/developers`;
  const roll = keyId === null;
  const what = roll
    ? html`<p>Rolling issues a new ${ctx.mode} key, shown once on the next page, and <strong>revokes every current ${ctx.mode} key at once</strong>: requests with them get 401 from then on. Put the new key where your integration reads it right after.</p>`
    : html`<p>Revoking the ${ctx.mode} key <code class="d-mono">${keyId}</code> stops it at once: requests with it get 401 from then on.</p>`;
  const body = html`${errorBox(told)}<section class="d-panel">${what}<form method="post" action="${roll ? `${base}/keys/roll` : `${base}/keys/${keyId}/revoke`}" class="d-form">${csrfField(ctx.csrf)}${
    confirmed(ctx.mode) ? codeField(told) : ''
  }<button type="submit" class="d-btn d-danger">${roll ? `Roll ${ctx.mode} key` : 'Revoke key'}</button> <a href="${base}">Cancel</a></form></section>`;
  ctx.reply.header('cache-control', 'no-store');
  return send(
    ctx.reply,
    status,
    shell(ctx, { title: roll ? `Roll the ${ctx.mode} key` : `Revoke a ${ctx.mode} key`, active: '/developers', body }),
  );
}

async function developersPage(ctx: Ctx, shown: Shown = {}, told: Told | null = null, status = 200) {
  const { kasse, mode } = ctx;
  const keys = (await kasse.merchants.listKeys(ctx.merchant.id)).filter((k) => k.mode === mode);
  const base = `/dashboard/${mode}/developers`;
  const owner = ctx.can('keys.manage');
  const webhookUrl = ctx.merchant.webhookUrl[mode];
  const keyPanel = html`<section class="d-panel"><h2>API keys (${mode})</h2>${
    shown.key
      ? html`<div class="d-reveal" role="status"><p><strong>Your new ${mode} key.</strong> Copy it now: it is shown only once. The previous ${mode} keys stopped working.</p><p><code class="d-mono d-secretval" id="new-key">${shown.key}</code> <button type="button" class="d-copy" data-copy="${shown.key}">Copy</button></p></div>`
      : ''
  }<table class="d-table"><thead><tr><th>Key</th><th>Created</th><th>Status</th><th></th></tr></thead><tbody>${keys.map(
    (k) =>
      html`<tr><td data-label="Key"><code class="d-mono">kasse_${mode}_…${k.key_hint}</code></td><td data-label="Created">${when(k.created_at)}</td><td data-label="Status">${badge(k.revoked_at ? 'revoked' : 'active')}</td><td>${
        owner && !k.revoked_at
          ? confirmed(mode)
            ? html`<a class="d-btn d-danger d-small" href="${base}/keys/${k.id}/revoke">Revoke</a>`
            : html`<form method="post" action="${base}/keys/${k.id}/revoke" class="d-inline">${csrfField(ctx.csrf)}<button type="submit" class="d-btn d-danger d-small">Revoke</button></form>`
          : ''
      }</td></tr>`,
  )}</tbody></table>${
    owner
      ? confirmed(mode)
        ? html`<p class="d-hint">Rolling issues a new key and revokes this mode's current keys at once. You confirm it with your current 6-digit code.</p><p><a class="d-btn" href="${base}/keys/roll">Roll ${mode} key</a></p>`
        : html`<form method="post" action="${base}/keys/roll" class="d-form">${csrfField(ctx.csrf)}<p class="d-hint">Rolling issues a new key and revokes this mode's current keys at once.</p><button type="submit" class="d-btn">Roll ${mode} key</button></form>`
      : html`<p class="d-hint">Only owners can roll or revoke keys.</p>`
  }</section>`;
  const urlPanel = html`<section class="d-panel"><h2>Webhook URL (${mode})</h2>${
    ctx.can('webhooks.write')
      ? html`<form method="post" action="${base}/webhook-url" class="d-form">${csrfField(ctx.csrf)}${field({
          name: 'webhook_url',
          label: 'Events are POSTed here',
          type: 'url',
          value: webhookUrl ?? '',
          told,
          hint:
            mode === 'live'
              ? 'https:// only. Empty removes it (no webhooks are sent).'
              : 'http:// or https://. Empty removes it.',
        })}<button type="submit" class="d-btn">Save URL</button></form>`
      : html`<p>${webhookUrl ? html`<code class="d-mono">${webhookUrl}</code>` : 'Not set.'}</p>`
  }</section>`;
  const s = shown.secrets;
  const secretPanel = html`<section class="d-panel"><h2>Webhook signing secret</h2><p class="d-hint">Deliveries carry <code>Service-Signature: t=…,v1=…</code>, an HMAC-SHA256 with this secret. Both modes use the same secret.</p>${
    s
      ? html`<div class="d-reveal" role="status">${s.rolled ? html`<p><strong>New secret.</strong> Copy it now. Until ${when(s.previousUntil)} deliveries carry a second <code>v1</code> signature made with the previous secret, so your endpoint can switch without refusing any.</p>` : ''}<p><code class="d-mono d-secretval" id="webhook-secret">${s.current}</code> <button type="button" class="d-copy" data-copy="${s.current}">Copy</button></p>${
          s.previous && !s.rolled
            ? html`<p class="d-hint">The previous secret is still accepted until ${when(s.previousUntil)}.</p>`
            : ''
        }</div>`
      : ''
  }${
    owner
      ? html`<form method="post" action="${base}/secret/reveal" class="d-form" data-secret>${csrfField(ctx.csrf)}${codeField(told)}<div class="d-actions"><button type="submit" class="d-btn d-secondary">Reveal secret</button><button type="submit" class="d-btn d-danger" formaction="${base}/secret/roll">Roll secret</button></div></form>`
      : html`<p class="d-hint">Only owners can reveal or roll the secret.</p>`
  }</section>`;
  const body = html`${errorBox(told)}${keyPanel}${urlPanel}${secretPanel}<section class="d-panel"><h2>Events</h2><p><a href="${base}/events">Event log with every delivery attempt →</a></p></section>`;
  ctx.reply.header('cache-control', 'no-store');
  return send(ctx.reply, status, shell(ctx, { title: 'Developers', active: '/developers', body, wide: true }));
}

function deliveries(e: Awaited<ReturnType<Ctx['kasse']['webhooks']['get']>>): Html {
  if (e.deliveries.length === 0)
    return html`<p class="d-muted">No delivery: no webhook URL was set when it happened.</p>`;
  return html`${e.deliveries.map(
    (d) =>
      html`<div class="d-delivery"><p>${badge(d.status)} <code class="d-mono">${d.url}</code> · created ${when(d.created_at)}${d.next_attempt_at ? html` · next attempt ${when(d.next_attempt_at)}` : ''}</p>${
        d.attempts.length
          ? html`<table class="d-table"><thead><tr><th>#</th><th>When</th><th>Outcome</th><th>HTTP</th><th class="d-num">ms</th><th>Response</th></tr></thead><tbody>${d.attempts.map(
              (a) =>
                html`<tr><td data-label="#">${a.attempt}</td><td data-label="When">${when(a.started_at)}</td><td data-label="Outcome">${badge(a.outcome)}</td><td data-label="HTTP">${a.http_status ?? '—'}</td><td data-label="ms" class="d-num">${a.duration_ms}</td><td data-label="Response"><code class="d-mono d-clip">${a.error ?? a.response_body ?? ''}</code></td></tr>`,
            )}</tbody></table>`
          : html`<p class="d-muted">Not attempted yet.</p>`
      }</div>`,
  )}`;
}

export function developerPages(r: Router): void {
  const { kasse } = r;

  r.page('/developers', 'read', async (ctx) => {
    const key = !crossSite(ctx.req) ? await kasse.users.notes.takeKey(ctx.session.id, ctx.mode) : null;
    return developersPage(ctx, key ? { key } : {});
  });

  /** The mode's active key `id`, or null. */
  const activeKey = async (ctx: Ctx, id: string) =>
    /^key_[0-9A-Z]{26}$/.test(id)
      ? ((await kasse.merchants.listKeys(ctx.merchant.id)).find(
          (k) => k.id === id && k.mode === ctx.mode && !k.revoked_at,
        ) ?? null)
      : null;
  const NO_KEY = 'That key is not an active key of this mode of your account.';
  /** The person's current code, checked (throttled; a failure is audited with `purpose`). */
  const secondFactor = (ctx: Ctx, code: string | undefined, purpose: string) =>
    kasse.users.factors.confirmSecondFactor(ctx.session, ctx.user, code ?? '', ctx.meta, purpose);
  /** Live mode: the owner's current code, checked. */
  const confirmCode = async (ctx: Ctx, form: Record<string, string>, purpose: string) => {
    if (confirmed(ctx.mode)) await secondFactor(ctx, form.code, purpose);
  };

  r.page('/developers/keys/roll', 'keys.manage', async (ctx) => keyConfirmPage(ctx, null));

  r.action('/developers/keys/roll', 'keys.manage', async (ctx, form) => {
    try {
      await confirmCode(ctx, form, 'key.roll');
      // The new key is kept for the next page in the rolling transaction: no key is issued that nobody can see.
      await kasse.merchantSettings.rollKey(ctx.tenant, ctx.actor, ctx.session.id);
      return done(ctx.reply, `/dashboard/${ctx.mode}/developers`, 'key_rolled');
    } catch (err) {
      const told = tell(err, {}, true);
      return keyConfirmPage(ctx, null, told, told.status);
    }
  });

  r.page('/developers/keys/:id/revoke', 'keys.manage', async (ctx, p) =>
    (await activeKey(ctx, p.id!)) ? keyConfirmPage(ctx, p.id!) : refusal(ctx, 404, NO_KEY),
  );

  r.action('/developers/keys/:id/revoke', 'keys.manage', async (ctx, form, p) => {
    if (!(await activeKey(ctx, p.id!))) return refusal(ctx, 404, NO_KEY);
    try {
      await confirmCode(ctx, form, 'key.revoke');
      await kasse.merchants.revokeKey(ctx.tenant, p.id!, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/developers`, 'key_revoked');
    } catch (err) {
      const told = tell(err, { not_found: NO_KEY }, true);
      return keyConfirmPage(ctx, p.id!, told, told.status);
    }
  });

  r.action('/developers/webhook-url', 'webhooks.write', async (ctx, form) => {
    const url = (form.webhook_url ?? '').trim() || null;
    try {
      if (url && textLength(url) > 2048) throw invalid('too long', 'webhook_url');
      await kasse.merchantSettings.setWebhookUrl(ctx.tenant, url, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/developers`, 'webhook_saved');
    } catch (err) {
      const told = tell(err, {
        webhook_url:
          ctx.mode === 'live'
            ? 'Enter a full https:// URL (live webhooks go only to https).'
            : 'Enter a full http:// or https:// URL.',
      });
      return developersPage(ctx, {}, told, told.status);
    }
  });

  r.action('/developers/secret/reveal', 'keys.manage', async (ctx, form) => {
    try {
      await secondFactor(ctx, form.code, 'webhook_secret.reveal');
      const { secrets, previousUntil } = await kasse.merchantSettings.revealWebhookSecret(ctx.merchant.id, ctx.actor);
      return developersPage(ctx, {
        secrets: {
          current: secrets[0]!,
          previous: secrets[1] ?? null,
          previousUntil: previousUntil?.toISOString() ?? null,
          rolled: false,
        },
      });
    } catch (err) {
      const told = tell(err, {}, true);
      return developersPage(ctx, {}, told, told.status);
    }
  });

  r.action('/developers/secret/roll', 'keys.manage', async (ctx, form) => {
    try {
      await secondFactor(ctx, form.code, 'webhook_secret.roll');
      const rolled = await kasse.merchants.rollWebhookSecret(ctx.merchant.id, ctx.actor);
      kasse.webhooks.delivery.forgetSecrets();
      return developersPage(ctx, {
        secrets: {
          current: rolled.webhook_secret,
          previous: null,
          previousUntil: rolled.previous_valid_until,
          rolled: true,
        },
      });
    } catch (err) {
      const told = tell(err, {}, true);
      return developersPage(ctx, {}, told, told.status);
    }
  });

  r.page('/developers/events', 'read', async (ctx, _p, q) => {
    let told: Told | null = null;
    let page: Awaited<ReturnType<typeof kasse.webhooks.list>> = { data: [], next_cursor: null };
    try {
      page = await kasse.webhooks.list(ctx.tenant, { cursor: q.cursor, limit: 25 });
    } catch (err) {
      told = tell(err, PAGE_HINT);
    }
    const base = `/dashboard/${ctx.mode}/developers/events`;
    const body = html`${errorBox(told)}${
      page.data.length
        ? html`<table class="d-table"><thead><tr><th>When</th><th>Type</th><th>Object</th><th>Event</th></tr></thead><tbody>${page.data.map(
            (e) => {
              const obj = (e.data as { id?: string })?.id ?? '';
              return html`<tr><td data-label="When">${when(e.created_at)}</td><td data-label="Type">${e.type}</td><td data-label="Object">${
                obj.startsWith('pay_')
                  ? html`<a href="/dashboard/${ctx.mode}/payments/${obj}"><code class="d-mono">${obj}</code></a>`
                  : html`<code class="d-mono">${obj}</code>`
              }</td><td data-label="Event"><a href="${base}/${e.id}"><code class="d-mono">${e.id}</code></a></td></tr>`;
            },
          )}</tbody></table>`
        : html`<p class="d-empty">No events in this mode yet.</p>`
    }<nav class="d-pager">${q.cursor ? html`<a href="${base}">First page</a>` : ''}${page.next_cursor ? html`<a href="${base}?cursor=${page.next_cursor}" rel="next">Older events →</a>` : ''}</nav>`;
    return sendShell(ctx, told, { title: 'Events', active: '/developers', body, wide: true });
  });

  const eventPage = async (ctx: Ctx, id: string, told: Told | null = null, status = 200) => {
    const e = new RegExp(ID_PATTERNS.evt).test(id) ? await found(() => kasse.webhooks.get(ctx.tenant, id)) : null;
    if (!e) return refusal(ctx, 404, 'There is no such event in this mode of your account.');
    const body = html`${errorBox(told)}<section class="d-panel"><dl class="d-facts"><dt>Type</dt><dd>${e.type}</dd><dt>When</dt><dd>${when(e.created_at)}</dd><dt>Id</dt><dd><code class="d-mono">${e.id}</code></dd></dl>${
      ctx.can('webhooks.write')
        ? html`<form method="post" action="/dashboard/${ctx.mode}/developers/events/${e.id}/redeliver" class="d-inline">${csrfField(ctx.csrf)}<button type="submit" class="d-btn d-secondary">Redeliver</button></form>`
        : ''
    }</section><section class="d-panel"><h2>Deliveries</h2>${deliveries(e)}</section><section class="d-panel"><h2>Body</h2><pre class="d-pre">${JSON.stringify({ id: e.id, type: e.type, created_at: e.created_at, data: e.data }, null, 2)}</pre></section>`;
    return send(ctx.reply, status, shell(ctx, { title: e.type, active: '/developers', body, wide: true }));
  };

  r.page('/developers/events/:id', 'read', async (ctx, p) => eventPage(ctx, p.id!));

  r.action('/developers/events/:id/redeliver', 'webhooks.write', async (ctx, _f, p) => {
    try {
      if (!new RegExp(ID_PATTERNS.evt).test(p.id!)) throw invalid('bad id', 'id');
      await kasse.webhooks.redeliver(ctx.tenant, p.id!, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/developers/events/${p.id}`, 'redelivered');
    } catch (err) {
      const told = tell(err, {
        invalid_state: `No webhook URL is set for ${ctx.mode} mode, so the event cannot be sent. Set one on the Developers page.`,
      });
      return eventPage(ctx, p.id!, told, told.status);
    }
  });
}
