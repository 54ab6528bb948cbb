/**
 * GST tax invoices on the dashboard: the mode's tax profile on the Settings page, a paid payment's tax invoice on
 * its page (issue it, see its figures, download the PDF), and the list of the mode's invoices by month.
 *
 *   GET  /dashboard/<mode>/tax_invoices[?month=YYYY-MM]  every role: the invoices, newest first, of a month (the
 *                                                        invoice date in India, as printed), each with its PDF
 *   POST /dashboard/<mode>/settings/tax_profile          owner: the seller details printed on the mode's invoices
 *   POST /dashboard/<mode>/payments/<id>/tax_invoice     owner, member: issue the payment's invoice (CreateInvoice)
 *   GET  /dashboard/<mode>/tax_invoices/<id>/pdf         every role: the invoice as PDF
 *
 * Both forms go through the invoices service, so they are held to the rules of `PATCH /account` and
 * `POST /payments/{id}/tax_invoice` and answer the same errors (shown with the field marked).
 */
import { invalid } from '../../../core/errors.ts';
import { html, type Html } from '../../../core/html.ts';
import {
  type CreateInvoiceInput,
  financialYear,
  gstinProblem,
  invoiceJson,
  invoiceNumber,
  invoicePdf,
  isSellerState,
  istDate,
  PROFILE_DEFAULTS,
  PROFILE_FIELDS,
  rupeesGrouped,
  STATE_NAMES,
  type TaxProfile,
} from '../../../modules/invoices/index.ts';
import type { Payment } from '../../../modules/payments/index.ts';
import type { Ctx } from '../context.ts';
import { done, navigation, refusal, sendShell } from '../layout.ts';
import { csrfField, errorBox, field, select, tell, type Told, PAGE_HINT } from '../forms.ts';
import { usd, when } from '../format.ts';
import type { Form, Router } from '../routing.ts';
import { paymentPage, paymentSections } from './payments.ts';
import { settingsForms, settingsPage } from './settings.ts';

const P = (f: (typeof PROFILE_FIELDS)[number]) => `tax_profile.${f}`;

/** The GST rates in use (basis points), offered as a list; a profile with another rate keeps it. */
const GST_RATES = [0, 25, 300, 500, 1200, 1800, 2800];
const pct = (bps: number) => `${(bps / 100).toFixed(bps % 100 === 0 ? 0 : 2)} %`;

const stateOptions = (codes: string[]): Array<[string, string]> => codes.map((c) => [c, `${c} — ${STATE_NAMES[c]}`]);

const PROFILE_HINTS: Record<string, string> = {
  [P('seller_name')]: 'Enter the trade name printed on invoices (1 to 200 characters).',
  [P('legal_name')]: 'Keep the legal name under 200 characters, or leave it empty.',
  [P('address')]: 'Enter the address of the place of business (1 to 500 characters).',
  [P('state_code')]: 'Choose the state of the GSTIN: its first two digits.',
  [P('invoice_prefix')]: 'Use 1 to 3 letters or digits, so every invoice number fits in 16 characters.',
  [P('sac')]: 'Enter the SAC as 4 to 8 digits, or leave it empty.',
  [P('tax_rate_bps')]: 'Choose a GST rate from the list.',
  [P('tax_inclusive')]: 'Choose whether prices include GST.',
};

/** The tax profile form on the Settings page (its own form: the profile is per mode; the rest of Settings is not). */
function profileForm(ctx: Ctx, told: Told | null, values: Form): Html {
  const profile = ctx.kasse.invoices.profile(ctx.merchant, ctx.mode);
  const write = ctx.can('settings.write');
  const cur = { ...PROFILE_DEFAULTS, ...(profile ?? {}) } as Record<string, unknown>;
  const v = (f: (typeof PROFILE_FIELDS)[number]) =>
    values[P(f)] ?? (cur[f] === null || cur[f] === undefined ? '' : String(cur[f]));
  const off = write ? '' : html` disabled`;
  const rates = GST_RATES.includes(Number(cur.tax_rate_bps))
    ? GST_RATES
    : [...GST_RATES, Number(cur.tax_rate_bps)].sort((a, b) => a - b);
  const sellerStates = Object.keys(STATE_NAMES).filter(isSellerState).sort();
  const fy = financialYear(ctx.kasse.clock.now());
  const example = invoiceNumber(/^[A-Za-z0-9]{1,3}$/.test(v('invoice_prefix')) ? v('invoice_prefix') : 'INV', fy, 1);
  return html`<form method="post" action="/dashboard/${ctx.mode}/settings/tax_profile" class="d-form" id="tax-profile">${csrfField(ctx.csrf)}<fieldset class="d-panel"${off}><legend>Tax profile (${ctx.mode} mode)</legend>
<p class="d-hint">The seller details printed on GST tax invoices issued in ${ctx.mode} mode; each mode has its own. ${
    profile ? '' : html`<strong>Not set yet:</strong> tax invoices can be issued once it is saved.`
  }</p><div class="d-grid">
${field({ name: P('seller_name'), label: 'Seller name (trade name)', value: v('seller_name'), required: true, told, attrs: html` maxlength="200"` })}
${field({ name: P('legal_name'), label: 'Legal name, if different (optional)', value: v('legal_name'), told, attrs: html` maxlength="200"` })}
${field({ name: P('tax_id'), label: 'GSTIN', value: v('tax_id'), required: true, told, hint: '15 characters, e.g. 27AAPFU0939F1ZV.', attrs: html` maxlength="15" autocomplete="off" spellcheck="false"` })}
${field({ name: P('address'), label: 'Address', value: v('address'), required: true, told, attrs: html` maxlength="500"` })}
${select({ name: P('state_code'), label: 'State', value: v('state_code'), told, options: [['', 'Choose the state of the GSTIN'], ...stateOptions(sellerStates)] })}
${field({ name: P('invoice_prefix'), label: 'Invoice number prefix', value: v('invoice_prefix'), required: true, told, hint: `Numbers run without gaps per financial year, e.g. ${example ?? ''}.`, attrs: html` maxlength="3"` })}
${field({ name: P('sac'), label: 'SAC (services accounting code)', value: v('sac'), told, hint: '997158 for online payment services.', attrs: html` maxlength="8" inputmode="numeric"` })}
${select({ name: P('tax_rate_bps'), label: 'GST rate', value: v('tax_rate_bps'), told, options: rates.map((r) => [String(r), pct(r)] as [string, string]) })}
${select({
  name: P('tax_inclusive'),
  label: 'Prices',
  value: v('tax_inclusive'),
  told,
  options: [
    ['true', 'GST included in the price'],
    ['false', 'GST added to the price'],
  ],
})}
</div></fieldset>${write ? html`<button type="submit" class="d-btn">Save tax profile</button>` : html`<p class="d-hint">Only owners can change the tax profile.</p>`}</form>`;
}

/** The form's fields as a profile patch: text trimmed, empty optional fields null, numbers and booleans parsed. */
function profilePatch(form: Form): Partial<TaxProfile> {
  const patch: Record<string, unknown> = {};
  for (const f of PROFILE_FIELDS) {
    const raw = form[P(f)];
    if (raw === undefined) continue;
    const t = raw.trim();
    if (f === 'tax_rate_bps') patch[f] = /^\d{1,5}$/.test(t) ? Number(t) : t;
    else if (f === 'tax_inclusive') patch[f] = t === 'true' ? true : t === 'false' ? false : t;
    else if (f === 'legal_name' || f === 'sac') patch[f] = t === '' ? null : t;
    else patch[f] = t;
  }
  return patch as Partial<TaxProfile>;
}

/** What is wrong with a GSTIN typed into a form, for people: its shape, its state, or its check character. */
function gstinHint(typed: string | undefined, whose: string): string {
  const gstin = (typed ?? '').trim().toUpperCase();
  const problem = gstinProblem(gstin);
  if (problem?.startsWith('has a wrong check character')) {
    return `The last character of ${whose} GSTIN is its check character, and ${gstin[14]} does not match the first 14 characters. Look for a typing mistake.`;
  }
  if (problem?.startsWith('starts with'))
    return `${whose[0]!.toUpperCase()}${whose.slice(1)} GSTIN starts with ${gstin.slice(0, 2)}, which is not a GST state code.`;
  return `Enter ${whose} GSTIN as registered: 15 characters, e.g. 27AAPFU0939F1ZV.`;
}

const INVOICE_HINTS: Record<string, string> = {
  customer_name: 'Keep the customer name under 200 characters.',
  customer_state_code:
    'Choose the customer’s state: the seller’s state for an intra-state supply, any other (or outside India) for inter-state.',
  place_of_supply: 'Choose intra-state or inter-state.',
  fx_rate:
    'Enter the rupees per US dollar with up to 6 decimals, e.g. 83.25, or leave it empty for the reference rate.',
  fx_unavailable:
    'No reference rate for the day of payment could be fetched. Enter the rate yourself, or try again later.',
  already_invoiced: 'This payment already has a tax invoice; reload the page to see it.',
  invalid_state: 'Only a paid payment can be invoiced, and only once the tax profile is set on the Settings page.',
};

/** "₹1,23,456.78" for the API's "123456.78". */
const inr = (s: string) => `₹${rupeesGrouped(BigInt(s.replace('.', '')))}`;

/** The tax invoice section of a payment's page: the invoice when there is one, else the form to issue it. */
async function invoiceSection(
  ctx: Ctx,
  p: Payment,
  told: Told | null,
  values: Record<string, string>,
): Promise<Html | string> {
  const found = (await ctx.kasse.invoices.list(ctx.tenant, { payment_id: p.id, limit: 1 })).data[0];
  if (found) {
    const tax =
      found.place_of_supply === 'intra'
        ? html`<dt>CGST</dt><dd>${inr(found.cgst)}</dd><dt>SGST</dt><dd>${inr(found.sgst)}</dd>`
        : html`<dt>IGST</dt><dd>${inr(found.igst)}</dd>`;
    return html`<section class="d-panel" id="tax-invoice"><h2>Tax invoice ${found.number}</h2><dl class="d-facts">
<dt>Issued</dt><dd>${when(found.issued_at)}</dd><dt>Customer</dt><dd>${found.customer.name ?? '—'}${found.customer.tax_id ? html` · GSTIN <code>${found.customer.tax_id}</code>` : ''}</dd>
<dt>Place of supply</dt><dd>${found.customer.state_code ? `${found.customer.state_code} — ${STATE_NAMES[found.customer.state_code]}` : `${found.seller.state_code} — ${STATE_NAMES[found.seller.state_code ?? ''] ?? ''}`} (${found.place_of_supply === 'intra' ? 'intra-state' : 'inter-state'})</dd>
<dt>Rate</dt><dd>₹${found.fx.rate} per US dollar (${found.fx.source === 'manual' ? 'entered' : 'reference rate'}, ${found.fx.date})</dd>
<dt>Taxable value</dt><dd>${inr(found.taxable)}</dd>${tax}<dt>Total</dt><dd><strong>${inr(found.total)}</strong></dd>
</dl><p class="d-actions"><a class="d-btn d-secondary" href="/dashboard/${ctx.mode}/tax_invoices/${found.id}/pdf" download>Download PDF</a></p></section>`;
  }
  if (p.status !== 'paid') return '';
  const profile = ctx.kasse.invoices.profile(ctx.merchant, ctx.mode);
  if (!profile) {
    return html`<section class="d-panel" id="tax-invoice"><h2>Tax invoice</h2><p class="d-hint">To issue a GST tax invoice for this payment, ${
      ctx.can('settings.write')
        ? html`set the <a href="/dashboard/${ctx.mode}/settings#tax-profile">tax profile</a> first.`
        : 'an owner must set the tax profile on the Settings page first.'
    }</p></section>`;
  }
  if (!ctx.can('payments.write'))
    return html`<section class="d-panel" id="tax-invoice"><h2>Tax invoice</h2><p class="d-empty">No tax invoice has been issued for this payment.</p></section>`;
  const states = Object.keys(STATE_NAMES).sort((a, b) => (a === '96' ? 1 : b === '96' ? -1 : a.localeCompare(b)));
  return html`<section class="d-panel" id="tax-invoice"><h2>Tax invoice</h2><p class="d-hint">Issues the next number of the financial year for ${usd(p.price_amount)} in rupees, as ${profile.seller_name} (GSTIN ${profile.tax_id}). An invoice cannot be changed or issued twice.</p>
<form method="post" action="/dashboard/${ctx.mode}/payments/${p.id}/tax_invoice" class="d-form">${csrfField(ctx.csrf)}
${field({ name: 'customer_name', label: 'Customer name (optional)', value: values.customer_name ?? '', told, attrs: html` maxlength="200"` })}
${field({ name: 'customer_tax_id', label: 'Customer GSTIN (optional)', value: values.customer_tax_id ?? '', told, attrs: html` maxlength="15" autocomplete="off" spellcheck="false"` })}
${select({
  name: 'place_of_supply',
  label: 'Supply',
  value: values.place_of_supply ?? 'intra',
  told,
  options: [
    ['intra', `Intra-state: CGST and SGST (customer in ${STATE_NAMES[profile.state_code]})`],
    ['inter', 'Inter-state: IGST (customer in another state or outside India)'],
  ],
})}
${select({ name: 'customer_state_code', label: 'Customer state (place of supply)', value: values.customer_state_code ?? '', told, options: [['', 'From the GSTIN, or the seller’s state'], ...stateOptions(states)] })}
${field({ name: 'fx_rate', label: 'Rupees per US dollar (optional)', value: values.fx_rate ?? '', told, hint: 'Leave empty for the reference rate of the day of payment.', attrs: html` inputmode="decimal" autocomplete="off"` })}
<button type="submit" class="d-btn">Issue tax invoice</button></form></section>`;
}

/** The issue form as a CreateInvoice body (empty optional fields left out). */
function invoiceInput(form: Form): CreateInvoiceInput {
  const opt = (k: string) => {
    const t = (form[k] ?? '').trim();
    return t === '' ? undefined : t;
  };
  const input: CreateInvoiceInput = { place_of_supply: (form.place_of_supply ?? '') as 'intra' | 'inter' };
  const name = opt('customer_name');
  const taxId = opt('customer_tax_id');
  const state = opt('customer_state_code');
  const rate = opt('fx_rate');
  if (name !== undefined) input.customer_name = name;
  if (taxId !== undefined) input.customer_tax_id = taxId;
  if (state !== undefined) input.customer_state_code = state;
  if (rate !== undefined) input.fx_rate = rate;
  return input;
}

paymentSections.push(invoiceSection);
settingsForms.push(profileForm);
navigation.splice(navigation.findIndex((n) => n.path === '/payments') + 1, 0, {
  path: '/tax_invoices',
  label: 'Tax invoices',
  permission: 'read',
});

const IST_OFFSET_MS = (5 * 60 + 30) * 60 * 1000;

/** The instants a month of invoice dates (IST) runs between. */
function istMonth(month: string): { from: Date; to: Date } {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return { from: new Date(Date.UTC(y, m - 1, 1) - IST_OFFSET_MS), to: new Date(Date.UTC(y, m, 1) - IST_OFFSET_MS) };
}

const INVOICE_PAGE = 50;

/** The mode's tax invoices of one month (invoice dates in IST), newest first, each with its PDF. */
async function invoiceListPage(ctx: Ctx, q: Record<string, string>) {
  const month = q.month ?? istDate(ctx.kasse.clock.now()).slice(0, 7);
  let told: Told | null = null;
  let page: Awaited<ReturnType<Ctx['kasse']['invoices']['list']>> = { data: [], next_cursor: null };
  try {
    if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) throw invalid('month must be YYYY-MM', 'month');
    page = await ctx.kasse.invoices.list(ctx.tenant, {
      ...istMonth(month),
      limit: INVOICE_PAGE,
      ...(q.cursor ? { cursor: q.cursor } : {}),
    });
  } catch (err) {
    told = tell(err, {
      month: 'Choose a month, like 2026-04.',
      ...PAGE_HINT,
    });
  }
  const base = `/dashboard/${ctx.mode}/tax_invoices`;
  const rows = page.data.map(
    (i) =>
      html`<tr><td data-label="Number"><a href="${base}/${i.id}/pdf" download>${i.number}</a></td><td data-label="Date">${istDate(new Date(i.issued_at))}</td><td data-label="Customer">${i.customer.name ?? '—'}${i.customer.tax_id ? html` <code class="d-mono">${i.customer.tax_id}</code>` : ''}</td><td data-label="Payment"><a href="/dashboard/${ctx.mode}/payments/${i.payment_id}">${usd(i.usd_cents)}</a></td><td data-label="Total" class="d-num">${inr(i.total)}</td><td data-label="PDF"><a href="${base}/${i.id}/pdf" download>Download PDF</a></td></tr>`,
  );
  const body = html`${errorBox(told)}<form method="get" action="${base}" class="d-filters">${field({ name: 'month', label: 'Month', type: 'month', value: month, told, hint: 'By the invoice date, in India (IST).' })}<div class="d-filter-actions"><button type="submit" class="d-btn">Show</button></div></form>
${
  rows.length
    ? html`<table class="d-table"><thead><tr><th>Number</th><th>Date</th><th>Customer</th><th>Payment</th><th class="d-num">Total</th><th>PDF</th></tr></thead><tbody>${rows}</tbody></table>`
    : html`<p class="d-empty">No tax invoices issued in ${month}. Issue one from a paid payment’s page.</p>`
}${page.next_cursor ? html`<nav class="d-pager" aria-label="Pages"><a href="${base}?month=${month}&amp;cursor=${page.next_cursor}" rel="next">Older invoices →</a></nav>` : ''}`;
  return sendShell(ctx, told, { title: 'Tax invoices', active: '/tax_invoices', body, wide: true });
}

export function invoicePages(r: Router): void {
  const { kasse } = r;

  r.action('/settings/tax_profile', 'settings.write', async (ctx, form) => {
    try {
      await kasse.invoices.setProfile(ctx.tenant, profilePatch(form), ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/settings`, 'tax_profile');
    } catch (err) {
      const told = tell(err, { ...PROFILE_HINTS, [P('tax_id')]: gstinHint(form[P('tax_id')], 'the') });
      return settingsPage(ctx, told, form, told.status);
    }
  });

  r.action('/payments/:id/tax_invoice', 'payments.write', async (ctx, form, p) => {
    try {
      if (!/^pay_[0-9A-Z]{36}$/.test(p.id!)) throw invalid('bad id', 'id');
      await kasse.invoices.create(ctx.tenant, p.id!, invoiceInput(form), ctx.actor);
      return done(ctx.reply, `/dashboard/${ctx.mode}/payments/${p.id}`, 'invoiced');
    } catch (err) {
      const taxId = form.customer_tax_id?.trim();
      const told = tell(err, {
        ...INVOICE_HINTS,
        customer_tax_id: taxId
          ? gstinHint(taxId, 'the customer’s')
          : 'Enter the customer’s GSTIN, or leave it empty for an unregistered customer.',
      });
      return paymentPage(ctx, p.id!, told, form, told.status);
    }
  });

  r.page('/tax_invoices', 'read', async (ctx, _p, q) => invoiceListPage(ctx, q));

  r.page('/tax_invoices/:id/pdf', 'read', async (ctx, p) => {
    const row = /^txi_[0-9A-Z]{26}$/.test(p.id!) ? await kasse.invoices.get(ctx.tenant, p.id!).catch(() => null) : null;
    if (!row) return refusal(ctx, 404, 'There is no such tax invoice in this mode of your account.');
    const pdf = await invoicePdf(invoiceJson(row), {
      mode: ctx.mode,
      brand: await kasse.merchants.brands.pdf(ctx.merchant.id),
    });
    return ctx.reply
      .header('content-type', 'application/pdf')
      .header('content-disposition', `attachment; filename="${row.number.replace(/\//g, '-')}.pdf"`)
      .header('cache-control', 'no-store')
      .send(pdf);
  });
}
