/**
 * Payment links.
 *
 *   GET  /dashboard/<mode>/links             the links (copy URL, open page, POS terminal) and the form to create any kind
 *   POST /dashboard/<mode>/links             create (the CreateLink fields; amounts typed in dollars)
 *   GET  /dashboard/<mode>/links/<id>        QR code, URL, edit form (the PatchLink fields)
 *   POST /dashboard/<mode>/links/<id>        save edits; `active=0|1` turns the link off or on
 */
import { invalid } from '../../../core/errors.ts';
import { ID_PATTERNS } from '../../../core/ids.ts';
import { html, type Html } from '../../../core/html.ts';
import { type CreateLinkInput, LINK_KINDS, LINK_LIMITS, type PatchLinkInput } from '../../../modules/links/index.ts';
import { parseDollars } from '../../links.ts';
import { qrSvg } from '../../page.ts';
import type { Ctx } from '../context.ts';
import { done, refusal, sendShell } from '../layout.ts';
import { csrfField, errorBox, field, select, found, tell, type Told } from '../forms.ts';
import { badge, usd, when } from '../format.ts';
import type { Form, Router } from '../routing.ts';
import { textLength } from '../../../core/text.ts';

type Link = Awaited<ReturnType<Ctx['kasse']['links']['get']>>;

const HINTS: Record<string, string> = {
  title: `Give the link a title of 1 to ${LINK_LIMITS.titleMax} characters.`,
  description: `Keep the description under ${LINK_LIMITS.descriptionMax} characters.`,
  amount_usd_cents: 'A fixed link needs a price from $1.00 to $1,000,000.00.',
  min_usd_cents: 'The lowest amount must be from $1.00 to $1,000,000.00.',
  max_usd_cents: 'The highest amount must be at least the lowest, at most $1,000,000.00.',
  presets_usd_cents:
    'A tip link needs 1 to 6 different preset amounts (like 3, 5, 8), within the lowest and highest amount.',
  collect_email: 'A POS terminal cannot ask for an email: the payer never touches it.',
  success_url: 'Enter a full URL (https:// on live).',
  max_uses: `Uses must be a whole number from 1 to ${LINK_LIMITS.maxUsesMax.toLocaleString('en-US')}.`,
  expires_at: 'The expiry must be a date and time in the future.',
  kind: 'Choose a kind of link.',
};

function priceOf(l: Link): string {
  if (l.kind === 'fixed') return usd(l.amount_usd_cents!);
  if (l.kind === 'tip') return l.presets_usd_cents.map((c) => usd(c)).join(' · ');
  const min = l.min_usd_cents ?? LINK_LIMITS.centsMin;
  const max = l.max_usd_cents ?? LINK_LIMITS.centsMax;
  return `${usd(min)} – ${usd(max)}`;
}

function dollars(text: string | undefined, param: string): number | undefined {
  const t = (text ?? '').trim();
  if (!t) return undefined;
  const c = parseDollars(t);
  if (c === null) throw invalid('not an amount', param);
  return c;
}

function wholeNumber(text: string | undefined, param: string): number | undefined {
  const t = (text ?? '').trim();
  if (!t) return undefined;
  if (!/^\d{1,9}$/.test(t)) throw invalid('not a whole number', param);
  return Number(t);
}

/** A `datetime-local` value, taken as UTC. */
function dateTime(text: string | undefined, param: string): string | undefined {
  const t = (text ?? '').trim();
  if (!t) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(t) || Number.isNaN(Date.parse(`${t}Z`)))
    throw invalid('not a date and time', param);
  return new Date(`${t}Z`).toISOString();
}

function createInput(form: Form): CreateLinkInput {
  const kind = form.kind as CreateLinkInput['kind'];
  if (!(LINK_KINDS as readonly string[]).includes(kind)) throw invalid('kind', 'kind');
  const input: CreateLinkInput = { kind, title: (form.title ?? '').trim() };
  if (!input.title || textLength(input.title) > LINK_LIMITS.titleMax) throw invalid('title', 'title');
  const description = (form.description ?? '').trim();
  if (description) input.description = description;
  if (kind === 'fixed')
    input.amount_usd_cents =
      dollars(form.amount, 'amount_usd_cents') ??
      (() => {
        throw invalid('amount', 'amount_usd_cents');
      })();
  else {
    const min = dollars(form.min, 'min_usd_cents');
    const max = dollars(form.max, 'max_usd_cents');
    if (min !== undefined) input.min_usd_cents = min;
    if (max !== undefined) input.max_usd_cents = max;
  }
  if (kind === 'tip') {
    const parts = (form.presets ?? '').split(/[\s,;]+/).filter(Boolean);
    input.presets_usd_cents = parts.map((p, i) => dollars(p, `presets_usd_cents.${i}`)!);
  }
  if (form.collect_email === '1' && kind !== 'pos') input.collect_email = true;
  if (form.collect_email === '1' && kind === 'pos') throw invalid('pos', 'collect_email');
  const successUrl = (form.success_url ?? '').trim();
  if (successUrl) input.success_url = successUrl;
  const maxUses = wholeNumber(form.max_uses, 'max_uses');
  if (maxUses !== undefined) input.max_uses = maxUses;
  const expires = dateTime(form.expires_at, 'expires_at');
  if (expires) input.expires_at = expires;
  return input;
}

function createForm(ctx: Ctx, values: Form, told: Told | null): Html {
  const v = (k: string) => values[k] ?? '';
  return html`<section class="d-panel" id="new"><h2>New payment link</h2>${errorBox(told)}
<form method="post" action="/dashboard/${ctx.mode}/links" class="d-form d-grid" data-link-form>${csrfField(ctx.csrf)}
${select({
  name: 'kind',
  label: 'Kind',
  value: values.kind ?? 'fixed',
  told,
  options: [
    ['fixed', 'Fixed price'],
    ['open', 'Open amount (payer types it)'],
    ['tip', 'Tip (preset buttons)'],
    ['pos', 'POS terminal (staff keypad)'],
  ],
})}
${field({ name: 'title', label: 'Title', value: v('title'), required: true, told, attrs: html` maxlength="${LINK_LIMITS.titleMax}"` })}
${field({ name: 'description', label: 'Description (optional)', value: v('description'), told, attrs: html` maxlength="${LINK_LIMITS.descriptionMax}"` })}
<div data-for-kind="fixed">${field({ name: 'amount', label: 'Price in US dollars (fixed)', value: v('amount'), told: told && told.field === 'amount_usd_cents' ? { ...told, field: 'amount' } : told, attrs: html` inputmode="decimal"` })}</div>
<div data-for-kind="open tip pos">${field({ name: 'min', label: 'Lowest amount, dollars (optional)', value: v('min'), told: told && told.field === 'min_usd_cents' ? { ...told, field: 'min' } : told, attrs: html` inputmode="decimal"` })}</div>
<div data-for-kind="open tip pos">${field({ name: 'max', label: 'Highest amount, dollars (optional)', value: v('max'), told: told && told.field === 'max_usd_cents' ? { ...told, field: 'max' } : told, attrs: html` inputmode="decimal"` })}</div>
<div data-for-kind="tip">${field({ name: 'presets', label: 'Preset amounts, dollars (tip)', value: v('presets'), hint: 'Up to 6, separated by commas: 3, 5, 8', told: told && told.field?.startsWith('presets') ? { ...told, field: 'presets' } : told })}</div>
<div data-for-kind="fixed open tip"><div class="d-field d-check"><label><input type="checkbox" name="collect_email" value="1"${values.collect_email === '1' ? html` checked` : ''}> Ask the payer for an email</label></div></div>
${field({ name: 'success_url', label: 'After paying, go to (optional)', type: 'url', value: v('success_url'), told })}
${field({ name: 'max_uses', label: 'Most payments (optional)', value: v('max_uses'), told, attrs: html` inputmode="numeric"` })}
${field({ name: 'expires_at', label: 'Expires (UTC, optional)', type: 'datetime-local', value: v('expires_at'), told })}
<div class="d-field-wide"><button type="submit" class="d-btn">Create link</button></div>
</form></section>`;
}

function linksList(ctx: Ctx, links: Link[]): Html {
  if (links.length === 0) return html`<p class="d-empty">No payment links in this mode yet.</p>`;
  return html`<table class="d-table"><thead><tr><th>Title</th><th>Kind</th><th>Price</th><th class="d-num">Uses</th><th>Status</th><th>Link</th></tr></thead><tbody>${links.map(
    (l) =>
      html`<tr><td data-label="Title"><a href="/dashboard/${ctx.mode}/links/${l.id}">${l.title}</a></td><td data-label="Kind">${l.kind}</td><td data-label="Price">${priceOf(l)}</td><td data-label="Uses" class="d-num">${l.uses}${l.max_uses !== null ? ` / ${l.max_uses}` : ''}</td><td data-label="Status">${badge(l.active ? 'active' : 'inactive')}</td><td data-label="Link"><button type="button" class="d-copy" data-copy="${l.url}">Copy URL</button> <a href="${l.url}" target="_blank" rel="noopener">${l.kind === 'pos' ? 'Open terminal' : 'Open'}</a></td></tr>`,
  )}</tbody></table>`;
}

async function listPage(ctx: Ctx, values: Form = {}, told: Told | null = null) {
  const { data } = await ctx.kasse.links.list(ctx.tenant);
  const body = html`${linksList(ctx, data)}${ctx.can('links.write') ? createForm(ctx, values, told) : ''}`;
  return sendShell(ctx, told, { title: 'Payment links', active: '/links', body, wide: true });
}

const localInput = (iso: string | null) => (iso ? iso.slice(0, 16) : '');

async function linkPage(ctx: Ctx, id: string, told: Told | null = null, values: Form | null = null) {
  const l = await found(() => ctx.kasse.links.get(ctx.tenant, id));
  if (!l) return refusal(ctx, 404, 'There is no such link in this mode of your account.');
  const v = (k: keyof Link, fallback: string | number | null) =>
    values?.[k as string] ?? (fallback === null ? '' : String(fallback));
  const editable = ctx.can('links.write');
  const base = `/dashboard/${ctx.mode}/links/${l.id}`;
  const body = html`${errorBox(told)}
<section class="d-panel d-linkhead"><div class="d-qr">${await qrSvg(l.url, `QR code of the link ${l.title}`)}</div><dl class="d-facts">
<dt>Kind</dt><dd>${l.kind}</dd><dt>Price</dt><dd>${priceOf(l)}</dd><dt>Status</dt><dd>${badge(l.active ? 'active' : 'inactive')}</dd>
<dt>Uses</dt><dd>${l.uses}${l.max_uses !== null ? ` of ${l.max_uses}` : ''}</dd><dt>Expires</dt><dd>${when(l.expires_at)}</dd><dt>Created</dt><dd>${when(l.created_at)}</dd>
<dt>URL</dt><dd><code class="d-mono">${l.url}</code> <button type="button" class="d-copy" data-copy="${l.url}">Copy</button> <a href="${l.url}" target="_blank" rel="noopener">${l.kind === 'pos' ? 'Open POS terminal' : 'Open page'}</a></dd>
</dl>${
    editable
      ? html`<form method="post" action="${base}" class="d-inline">${csrfField(ctx.csrf)}<input type="hidden" name="active" value="${l.active ? '0' : '1'}"><button type="submit" class="d-btn ${l.active ? 'd-danger' : 'd-secondary'}">${l.active ? 'Deactivate' : 'Activate'}</button></form>`
      : ''
  }</section>
${
  editable
    ? html`<section class="d-panel"><h2>Edit</h2><form method="post" action="${base}" class="d-form d-grid">${csrfField(ctx.csrf)}
${field({ name: 'title', label: 'Title', value: v('title', l.title), required: true, told, attrs: html` maxlength="${LINK_LIMITS.titleMax}"` })}
${field({ name: 'description', label: 'Description', value: v('description', l.description), told, hint: 'Empty removes it.' })}
${field({ name: 'success_url', label: 'After paying, go to', type: 'url', value: v('success_url', l.success_url), told, hint: 'Empty removes it.' })}
${field({ name: 'max_uses', label: 'Most payments', value: v('max_uses', l.max_uses), told, hint: 'Empty: no limit.' })}
${field({ name: 'expires_at', label: 'Expires (UTC)', type: 'datetime-local', value: values?.expires_at ?? localInput(l.expires_at), told, hint: 'Empty: never. A past time ends the link now.' })}
<div class="d-field-wide"><button type="submit" class="d-btn">Save</button></div></form></section>`
    : ''
}`;
  return sendShell(ctx, told, { title: l.title, active: '/links', body, wide: true });
}

export function linkPages(r: Router): void {
  const { kasse } = r;
  const idOk = (id: string) => new RegExp(ID_PATTERNS.lnk).test(id);

  r.page('/links', 'read', async (ctx) => listPage(ctx));

  r.action('/links', 'links.write', async (ctx, form) => {
    try {
      const l = await kasse.links.create(ctx.tenant, createInput(form), ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/links/${l.id}`, 'link_created');
    } catch (err) {
      return listPage(ctx, form, tell(err, HINTS));
    }
  });

  r.page('/links/:id', 'read', async (ctx, p) =>
    idOk(p.id!) ? linkPage(ctx, p.id!) : refusal(ctx, 404, 'There is no such link in this mode of your account.'),
  );

  r.action('/links/:id', 'links.write', async (ctx, form, p) => {
    if (!idOk(p.id!)) return refusal(ctx, 404, 'There is no such link in this mode of your account.');
    try {
      const patch: PatchLinkInput = {};
      let key = 'link_saved';
      if (form.active === '0' || form.active === '1') {
        patch.active = form.active === '1';
        key = patch.active ? 'link_on' : 'link_off';
      } else {
        patch.title = (form.title ?? '').trim();
        if (!patch.title || textLength(patch.title) > LINK_LIMITS.titleMax) throw invalid('title', 'title');
        const d = (form.description ?? '').trim();
        if (textLength(d) > LINK_LIMITS.descriptionMax) throw invalid('description', 'description');
        patch.description = d || null;
        patch.success_url = (form.success_url ?? '').trim() || null;
        patch.max_uses = wholeNumber(form.max_uses, 'max_uses') ?? null;
        if (patch.max_uses !== null && (patch.max_uses < 1 || patch.max_uses > LINK_LIMITS.maxUsesMax))
          throw invalid('max_uses', 'max_uses');
        patch.expires_at = dateTime(form.expires_at, 'expires_at') ?? null;
      }
      await kasse.links.update(ctx.tenant, p.id!, patch, ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/links/${p.id}`, key);
    } catch (err) {
      return linkPage(ctx, p.id!, tell(err, HINTS), form);
    }
  });
}
