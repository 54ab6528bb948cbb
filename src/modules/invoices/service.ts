/**
 * GST tax invoices for paid payments: one per payment, numbered without gaps per merchant, mode and financial year,
 * with the seller as the tax profile says at issue and the rupee figures fixed at issue. The FX rate is the body's
 * (`manual`) or the FX provider's reference rate for the paid date, fetched before the transaction opens. Rules and
 * worked examples: docs/invoices.md.
 */
import type { Selectable } from 'kysely';
import { ownedRow } from '../../db/owned.ts';
import type { Mode } from '../../core/mode.ts';
import type { Tenant } from '../../core/tenant.ts';
import type { Clock } from '../../core/clock.ts';
import { decodeCursor, fetchPage } from '../../core/cursor.ts';
import { ApiError, invalid, invalidState, notFound } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { textLength } from '../../core/text.ts';
import { withTx, type Db, isUniqueViolation } from '../../db/index.ts';
import type { Actor, AuditLog } from '../audit/index.ts';
import type { TaxInvoicesTable } from './tables.ts';
import { type FxProvider, type FxRate, FxUnavailableError } from '../fx/index.ts';
import type { MerchantRecord, MerchantService } from '../merchants/index.ts';
import { invoiceablePayment, lockForInvoice } from '../payments/index.ts';
import { financialYear, gstinProblem, invoiceFigures, invoiceNumber, istDate, rupees, STATE_NAMES } from './gst.ts';
import { mergeProfile, PROFILE_FIELDS, type TaxProfile } from './profile.ts';

export interface CreateInvoiceInput {
  customer_name?: string;
  customer_tax_id?: string;
  customer_state_code?: string;
  place_of_supply: 'intra' | 'inter';
  fx_rate?: string;
}

export interface InvoiceDeps {
  db: Db;
  clock: Clock;
  merchants: MerchantService;
  fx: FxProvider;
  audit: AuditLog;
}

export type InvoiceRow = Selectable<TaxInvoicesTable>;
export type TaxInvoiceJson = ReturnType<typeof invoiceJson>;

export const LIST_LIMIT_DEFAULT = 20;

export class InvoiceService {
  constructor(private readonly deps: InvoiceDeps) {}

  /** The tax profile of a merchant in a mode, as stored (already validated), or null. */
  profile(merchant: MerchantRecord, mode: Mode): TaxProfile | null {
    return (merchant.taxProfile[mode] as TaxProfile | null) ?? null;
  }

  /**
   * PATCH /account's `tax_profile` (and the dashboard's Settings): merged over the tenant's current profile and
   * checked whole; null removes it. The merge reads the profile under the merchant row's lock, so concurrent changes
   * of different fields all stay; the answer is the merchant as this change left it. The audit row
   * (`settings.tax_profile`) names the fields that changed.
   */
  async setProfile(tenant: Tenant, patch: Partial<TaxProfile> | null, actor: Actor): Promise<MerchantRecord> {
    const { mode } = tenant;
    return withTx(this.deps.db, async (tx) => {
      const { before, after } = await this.deps.merchants.updateIn(tx, tenant.merchantId, (current) => ({
        taxProfile: { mode, value: patch === null ? null : mergeProfile(this.profile(current, mode), patch) },
      }));
      const details = profileChanges(this.profile(before, mode), this.profile(after, mode));
      await this.deps.audit.record(tx, tenant, actor, 'settings.tax_profile', null, details);
      return after;
    });
  }

  /**
   * Issues the tax invoice of a paid payment of the tenant (201), or 409 `already_invoiced`; its audit row
   * (`tax_invoice.create`) is written in the invoice's transaction.
   */
  async create(tenant: Tenant, paymentId: string, input: CreateInvoiceInput, actor: Actor): Promise<TaxInvoiceJson> {
    const { db, clock } = this.deps;
    const { mode, merchantId } = tenant;
    checkInput(input);
    const payment = await invoiceablePayment(db, tenant, paymentId);
    if (!payment) throw notFound('payment');
    if (payment.status !== 'paid' || !payment.paid_at)
      throw invalidState(`Only a paid payment can be invoiced; this payment is ${payment.status}.`);
    const profile = this.profile(await this.deps.merchants.get(merchantId), mode);
    if (!profile) throw invalidState('Set the tax profile first (PATCH /account with tax_profile).');
    if (await this.existing(paymentId)) throw alreadyInvoiced();
    const customer = checkCustomer(profile, input);
    const fx = await this.rate(input.fx_rate, payment.paid_at);

    const figures = invoiceFigures(
      payment.invoice_cents,
      fx.rate,
      profile.tax_rate_bps,
      profile.tax_inclusive,
      input.place_of_supply,
    );
    const row = await withTx(db, async (tx) => {
      // Serializes with a refund or another invoice of the same payment.
      const locked = await lockForInvoice(tx, paymentId);
      if (locked !== 'paid') throw invalidState(`Only a paid payment can be invoiced; this payment is ${locked}.`);
      if (await tx.selectFrom('tax_invoices').select('id').where('payment_id', '=', paymentId).executeTakeFirst())
        throw alreadyInvoiced();
      const now = clock.now();
      const fy = financialYear(now);
      const counter = await tx
        .insertInto('tax_invoice_counters')
        .values({ merchant_id: merchantId, mode, financial_year: fy, last_number: 1 })
        .onConflict((oc) =>
          oc
            .columns(['merchant_id', 'mode', 'financial_year'])
            .doUpdateSet((eb) => ({ last_number: eb('tax_invoice_counters.last_number', '+', 1) })),
        )
        .returning('last_number')
        .executeTakeFirstOrThrow();
      const number = invoiceNumber(profile.invoice_prefix, fy, counter.last_number);
      if (!number)
        throw invalidState(
          `Invoice numbers with prefix ${profile.invoice_prefix} are used up for financial year ${fy}; choose a shorter invoice_prefix.`,
        );
      const inserted = await tx
        .insertInto('tax_invoices')
        .values({
          id: newId('txi'),
          merchant_id: merchantId,
          mode,
          payment_id: paymentId,
          number,
          financial_year: fy,
          seq: counter.last_number,
          issued_at: now,
          customer_name: customer.name,
          customer_tax_id: customer.taxId,
          customer_state_code: customer.stateCode,
          place_of_supply: input.place_of_supply,
          currency: 'INR',
          fx_rate: fx.rate,
          fx_source: fx.source,
          fx_date: fx.date,
          usd_cents: payment.invoice_cents,
          total: figures.total,
          taxable: figures.taxable,
          cgst: figures.cgst,
          sgst: figures.sgst,
          igst: figures.igst,
          tax_rate_bps: profile.tax_rate_bps,
          tax_inclusive: profile.tax_inclusive,
          sac: profile.sac,
          description: payment.description,
          seller: JSON.stringify({
            name: profile.seller_name,
            legal_name: profile.legal_name,
            tax_id: profile.tax_id,
            address: profile.address,
            state_code: profile.state_code,
          }),
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await this.deps.audit.record(
        tx,
        tenant,
        actor,
        'tax_invoice.create',
        { type: 'tax_invoice', id: inserted.id },
        { number, payment_id: paymentId },
      );
      return inserted;
    }).catch((err: unknown) => {
      // Two requests for one payment that both passed the checks: the unique index decides.
      if (isUniqueViolation(err, 'tax_invoices_payment_id_key')) throw alreadyInvoiced();
      throw err;
    });
    return invoiceJson(row);
  }

  async get(tenant: Tenant, id: string): Promise<InvoiceRow> {
    return ownedRow(this.deps.db, 'tax_invoices', tenant, id, 'tax invoice');
  }

  /** Newest first; `next_cursor` is opaque and null on the last page. `from`/`to`: issued at or after, before. */
  async list(tenant: Tenant, q: { cursor?: string; limit?: number; payment_id?: string; from?: Date; to?: Date }) {
    const limit = q.limit ?? LIST_LIMIT_DEFAULT;
    let query = this.deps.db
      .selectFrom('tax_invoices')
      .selectAll()
      .where('merchant_id', '=', tenant.merchantId)
      .where('mode', '=', tenant.mode);
    if (q.payment_id !== undefined) query = query.where('payment_id', '=', q.payment_id);
    if (q.from !== undefined) query = query.where('issued_at', '>=', q.from);
    if (q.to !== undefined) query = query.where('issued_at', '<', q.to);
    if (q.cursor !== undefined) query = query.where('id', '<', decodeCursor(q.cursor, /^txi_[0-9A-Z]{26}$/));
    const { page, next_cursor } = await fetchPage(query.orderBy('id', 'desc'), limit, (r) => r.id);
    return {
      data: page.map(invoiceJson),
      next_cursor,
    };
  }

  private async existing(paymentId: string): Promise<boolean> {
    return !!(await this.deps.db
      .selectFrom('tax_invoices')
      .select('id')
      .where('payment_id', '=', paymentId)
      .executeTakeFirst());
  }

  /** The body's rate (`manual`, dated the paid day in IST) or the provider's reference rate for the paid day. */
  private async rate(manual: string | undefined, paidAt: Date): Promise<FxRate> {
    const date = istDate(paidAt);
    if (manual !== undefined) {
      if (!/[1-9]/.test(manual)) throw invalid('fx_rate must be greater than 0', 'fx_rate');
      return { rate: manual, date, source: 'manual' };
    }
    try {
      return await this.deps.fx.usdInr(date);
    } catch (err) {
      if (err instanceof FxUnavailableError)
        throw new ApiError(
          'fx_unavailable',
          `No FX reference rate is available for ${date}: ${err.message}. Try again later or send fx_rate.`,
        );
      throw err;
    }
  }
}

/**
 * The CreateInvoice body's own rules (lengths, formats, `place_of_supply`), so callers other than the API (the
 * dashboard) are held to the same ones. 400 on the field.
 */
function checkInput(input: CreateInvoiceInput): void {
  const text = (f: 'customer_name' | 'customer_tax_id', max: number) => {
    const v = input[f];
    if (v !== undefined && (typeof v !== 'string' || textLength(v) > max))
      throw invalid(`${f} must be a string of at most ${max} characters`, f);
  };
  text('customer_name', 200);
  text('customer_tax_id', 40);
  if (input.customer_state_code !== undefined && !/^[0-9]{2}$/.test(String(input.customer_state_code)))
    throw invalid('customer_state_code must be two digits', 'customer_state_code');
  if (input.place_of_supply !== 'intra' && input.place_of_supply !== 'inter')
    throw invalid('place_of_supply must be intra or inter', 'place_of_supply');
  if (input.fx_rate !== undefined && !/^\d{1,5}(\.\d{1,6})?$/.test(String(input.fx_rate)))
    throw invalid('fx_rate must be a decimal of rupees per US dollar, e.g. 83.25', 'fx_rate');
}

/** What a profile change changed, field by field (`{ field: { from, to } }`); `{ removed: true }` for a removal. */
function profileChanges(before: TaxProfile | null, after: TaxProfile | null): Record<string, unknown> {
  if (after === null) return { removed: true };
  const out: Record<string, unknown> = {};
  for (const f of PROFILE_FIELDS) if (before?.[f] !== after[f]) out[f] = { from: before?.[f] ?? null, to: after[f] };
  return out;
}

function alreadyInvoiced(): ApiError {
  return new ApiError(
    'already_invoiced',
    'This payment already has a tax invoice; GET /tax_invoices?payment_id=… finds it.',
  );
}

/**
 * The buyer as the body gives it, checked: a GSTIN with its check character (upper-cased), state codes that exist,
 * the GSTIN's state equal to `customer_state_code`, an `intra` supply in the seller's state, and a state for an
 * `inter` supply (the place of supply; 96 outside India). A GSTIN alone gives the state.
 */
function checkCustomer(
  profile: TaxProfile,
  input: CreateInvoiceInput,
): { name: string | null; taxId: string | null; stateCode: string | null } {
  const taxId = input.customer_tax_id?.trim().toUpperCase() || null;
  if (taxId) {
    const problem = gstinProblem(taxId);
    if (problem) throw invalid(`customer_tax_id ${problem}`, 'customer_tax_id');
  }
  let stateCode = input.customer_state_code ?? null;
  if (stateCode !== null && !(stateCode in STATE_NAMES))
    throw invalid(`customer_state_code ${stateCode} is not a GST state code`, 'customer_state_code');
  if (taxId && stateCode !== null && taxId.slice(0, 2) !== stateCode) {
    throw invalid(
      `customer_state_code ${stateCode} differs from the state of customer_tax_id (${taxId.slice(0, 2)})`,
      'customer_state_code',
    );
  }
  stateCode ??= taxId ? taxId.slice(0, 2) : null;
  if (input.place_of_supply === 'intra' && stateCode !== null && stateCode !== profile.state_code) {
    throw invalid(
      `An intra-state supply is in the seller's state ${profile.state_code}; customer_state_code is ${stateCode} (use inter).`,
      'customer_state_code',
    );
  }
  if (input.place_of_supply === 'inter' && stateCode === null) {
    throw invalid(
      'An inter-state supply needs the place of supply: customer_state_code (96 outside India) or customer_tax_id.',
      'customer_state_code',
    );
  }
  return { name: input.customer_name?.trim() || null, taxId, stateCode };
}

/** The API's TaxInvoice object, fields in the spec's order. */
export function invoiceJson(r: InvoiceRow) {
  const seller = r.seller as {
    name: string;
    legal_name: string | null;
    tax_id: string | null;
    address: string | null;
    state_code: string | null;
  };
  return {
    id: r.id,
    payment_id: r.payment_id,
    number: r.number,
    issued_at: r.issued_at.toISOString(),
    customer: { name: r.customer_name, tax_id: r.customer_tax_id, state_code: r.customer_state_code },
    place_of_supply: r.place_of_supply,
    currency: r.currency,
    fx: { rate: r.fx_rate, source: r.fx_source, date: r.fx_date },
    usd_cents: r.usd_cents,
    total: rupees(BigInt(r.total)),
    taxable: rupees(BigInt(r.taxable)),
    cgst: rupees(BigInt(r.cgst)),
    sgst: rupees(BigInt(r.sgst)),
    igst: rupees(BigInt(r.igst)),
    tax_rate_bps: r.tax_rate_bps,
    tax_inclusive: r.tax_inclusive,
    sac: r.sac,
    description: r.description,
    seller: {
      name: seller.name,
      legal_name: seller.legal_name,
      tax_id: seller.tax_id,
      address: seller.address,
      state_code: seller.state_code,
    },
    created_at: r.created_at.toISOString(),
  };
}
