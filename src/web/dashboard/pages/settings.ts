/**
 * Settings.
 *
 *   GET  /dashboard/<mode>/settings                merchant name, brand colour and logo, payment tolerance, payout
 *                                                  coin, disbursement quorum, tax profile
 *   POST /dashboard/<mode>/settings                owner
 *   POST /dashboard/<mode>/settings/logo           owner: upload a logo (multipart, upload.ts)
 *   POST /dashboard/<mode>/settings/logo/remove    owner
 *
 * Other capabilities add their forms below the settings (`settingsForms`: the tax profile, from invoices).
 */
import { invalid } from '../../../core/errors.ts';
import { html, type Html } from '../../../core/html.ts';
import { coinName } from '../../../chains/names.ts';
import type { Ctx } from '../context.ts';
import { done, send, shell } from '../layout.ts';
import { csrfField, errorBox, field, select, tell, type Told } from '../forms.ts';
import type { Form, Router } from '../routing.ts';

/** A settings section: the fields it shows and how it saves them (in the settings transaction). */
export interface SettingsSection {
  title: string;
  render(ctx: Ctx, told: Told | null, values: Form): Promise<Html> | Html;
}

/**
 * Token ids of either mode on networks whose chain family pays out disbursements (`ChainFamily.payouts`), each named
 * as the page's mode names it (test mode's coins after their testnets) when the mode has it.
 */
function payoutTokens(ctx: Ctx): Array<[string, string]> {
  const seen = new Map<string, string>();
  const { chains } = ctx.kasse;
  const paying = new Set(ctx.kasse.families.filter((f) => f.family.payouts).map((f) => f.family.name));
  for (const mode of ctx.mode === 'test' ? (['test', 'live'] as const) : (['live', 'test'] as const)) {
    for (const t of chains.tokens(mode)) {
      if (paying.has(chains.network(mode, t.chain)?.family ?? '') && !seen.has(t.id))
        seen.set(t.id, coinName(chains, mode, t.id));
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
      field({
        name: 'name',
        label: 'Merchant name (shown to payers)',
        value: values.name ?? ctx.merchant.name,
        required: true,
        told,
        attrs: html` maxlength="120"${ctx.can('settings.write') ? '' : html` disabled`}`,
      }),
  },
  {
    title: 'Brand',
    render: (ctx, told, values) =>
      field({
        name: 'brand_color',
        label: 'Brand colour',
        value: values.brand_color ?? ctx.merchant.brandColor ?? '',
        told,
        hint: 'A hex colour #RRGGBB for buttons and links on your checkout, link pages, POS, emails and PDFs, with white text on it; it must reach the 4.5:1 contrast WCAG AA asks for. Empty: Kasse blue.',
        attrs: html` pattern="#[0-9A-Fa-f]{6}" placeholder="#1d4ed8" maxlength="7"${ctx.can('settings.write') ? '' : html` disabled`}`,
      }),
  },
  {
    title: 'Payments',
    render: (ctx, told, values) =>
      field({
        name: 'underpayment_tolerance_bps',
        label: 'Underpayment tolerance (basis points)',
        type: 'number',
        value: values.underpayment_tolerance_bps ?? ctx.merchant.underpaymentToleranceBps,
        told,
        hint: 'A payment short by at most this share of the amount due (100 = 1 %, at most 500 = 5 %) is treated as paid and credited with what arrived, for payers whose exchange keeps a withdrawal fee. 0: every short payment is underpaid.',
        attrs: html` min="0" max="500" step="1" required${ctx.can('settings.write') ? '' : html` disabled`}`,
      }),
  },
  {
    title: 'Disbursements',
    render: async (ctx, told, values) => {
      const owners = await ctx.kasse.users.team.ownerCount(ctx.merchant.id);
      const quorum: Array<[string, string]> = [['', `Automatic (${owners >= 2 ? 2 : 1} now)`]];
      for (let n = 1; n <= Math.max(owners, ctx.merchant.approvalsRequired ?? 0); n++)
        quorum.push([String(n), `${n} owner approval${n === 1 ? '' : 's'}`]);
      return html`${select({ name: 'payout_token', label: 'Payout coin', value: values.payout_token ?? ctx.merchant.payoutToken, told, options: payoutTokens(ctx), hint: 'Disbursements pay out in this coin; destinations are addresses of its network.' })}
${select({ name: 'approvals_required', label: 'Approvals a disbursement needs', value: values.approvals_required ?? (ctx.merchant.approvalsRequired === null ? '' : String(ctx.merchant.approvalsRequired)), told, options: quorum, hint: `Owners approve on the dashboard with a fresh two-factor code. Automatic: 2 when the account has two or more owners, else 1; it has ${owners} owner${owners === 1 ? '' : 's'}.` })}`;
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
  const sections = await Promise.all(
    settingsSections.map(
      async (s) =>
        html`<fieldset class="d-panel"><legend>${s.title}</legend>${await s.render(ctx, told, values)}</fieldset>`,
    ),
  );
  const body = html`${errorBox(told)}<form method="post" action="/dashboard/${ctx.mode}/settings" class="d-form">${csrfField(ctx.csrf)}${sections}
${write ? html`<button type="submit" class="d-btn">Save settings</button>` : html`<p class="d-hint">Only owners can change settings.</p>`}</form>
${await Promise.all(settingsForms.map((f) => f(ctx, told, values)))}`;
  return send(ctx.reply, status, shell(ctx, { title: 'Settings', active: '/settings', body }));
}

export function settingsPages(r: Router): void {
  const { kasse } = r;

  r.page('/settings', 'read', async (ctx) => settingsPage(ctx));

  r.action('/settings', 'settings.write', async (ctx, form) => {
    try {
      const q = form.approvals_required ?? '';
      if (q !== '' && !/^\d{1,2}$/.test(q)) throw invalid('approvals_required must be 1 to 20', 'approvals_required');
      const approvals = q === '' ? null : Number(q);
      const tokens = payoutTokens(ctx).map(([id]) => id);
      await kasse.merchantSettings.save(
        ctx.merchant.id,
        {
          name: form.name,
          payoutToken: form.payout_token,
          approvalsRequired: approvals,
          ...brandToleranceFields(form),
        },
        tokens,
        ctx.actor,
      );
      return done(ctx.reply, `/dashboard/${ctx.mode}/settings`, 'settings');
    } catch (err) {
      const told = tell(
        err,
        {
          name: 'Enter a name of 1 to 120 characters.',
          payout_token: 'Choose a coin from the list.',
          underpayment_tolerance_bps: 'Enter a whole number of basis points from 0 to 500.',
        },
        true,
      );
      return settingsPage(ctx, told, form, told.status);
    }
  });

  r.action('/settings/logo', 'settings.write', async (ctx, form) => {
    try {
      const bytes = Buffer.from(form.logo ?? '', 'base64');
      await kasse.merchantSettings.setLogo(ctx.merchant.id, bytes, ctx.actor, form['logo:type'] ?? '');
      return done(ctx.reply, `/dashboard/${ctx.mode}/settings`, 'logo');
    } catch (err) {
      const told = tell(err, {}, true);
      return settingsPage(ctx, told, {}, told.status);
    }
  });

  r.action('/settings/logo/remove', 'settings.write', async (ctx) => {
    await kasse.merchantSettings.removeLogo(ctx.merchant.id, ctx.actor);
    return done(ctx.reply, `/dashboard/${ctx.mode}/settings`, 'logo_removed');
  });
}

/** The brand colour (empty: none) and tolerance of the Settings form; absent fields are left as they are. */
function brandToleranceFields(form: Form): { brandColor?: string | null; underpaymentToleranceBps?: number } {
  const out: { brandColor?: string | null; underpaymentToleranceBps?: number } = {};
  if (form.brand_color !== undefined) out.brandColor = form.brand_color.trim() === '' ? null : form.brand_color.trim();
  const bps = form.underpayment_tolerance_bps;
  if (bps !== undefined) {
    if (!/^\d{1,3}$/.test(bps.trim()))
      throw invalid('underpayment_tolerance_bps must be a whole number from 0 to 500', 'underpayment_tolerance_bps');
    out.underpaymentToleranceBps = Number(bps.trim());
  }
  return out;
}

/** The logo form: the current logo, an upload (PNG, JPEG or WebP up to 256 kB) and its removal. */
function logoForm(ctx: Ctx, told: Told | null): Html {
  const logo = ctx.merchant.logoSha256;
  const bad = told?.field === 'logo';
  const current = logo
    ? html`<p><img class="d-logo" src="/brand/logo/${logo}.png" alt="Current logo"></p>`
    : html`<p class="d-hint">No logo yet: payer pages show your name only.</p>`;
  if (!ctx.can('settings.write')) return html`<section class="d-panel"><h2>Logo</h2>${current}</section>`;
  return html`<section class="d-panel" id="logo"><h2>Logo</h2>${current}<form method="post" action="/dashboard/${ctx.mode}/settings/logo" enctype="multipart/form-data" class="d-form">${csrfField(ctx.csrf)}<div class="d-field${bad ? ' d-bad' : ''}"><label for="f-logo">Logo file</label><input id="f-logo" name="logo" type="file" accept="image/png,image/jpeg,image/webp" required aria-describedby="f-logo-h"${bad ? html` aria-invalid="true"` : ''}><p class="d-hint" id="f-logo-h">PNG, JPEG or WebP, at most 256 kB; shown at most 512 pixels wide or high on payer pages, emails and PDFs. SVG is not accepted.</p></div><div class="d-actions"><button type="submit" class="d-btn">Upload logo</button>${logo ? html`<button type="submit" class="d-btn d-danger" formaction="/dashboard/${ctx.mode}/settings/logo/remove" formnovalidate>Remove logo</button>` : ''}</div></form></section>`;
}

settingsForms.unshift((ctx, told) => logoForm(ctx, told));
