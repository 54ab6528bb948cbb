/** GST tax invoices: issue one for a paid payment, list, read, and the PDF. */
import { Type } from 'typebox';
import { keyActor } from '../actor.ts';
import type { ApiApp, ApiDeps } from '../api.ts';
import { PageOf, PaymentIdParam } from '../schemas/common.ts';
import { CreateInvoiceBody, TaxInvoiceSchema } from '../schemas/invoices.ts';
import { invoiceJson, invoicePdf } from '../../modules/invoices/index.ts';

const InvoiceRef = Type.Unsafe({ $ref: 'TaxInvoice#' });
const InvoiceIdParam = Type.Object({
  id: Type.String({ pattern: '^txi_[0-9A-Z]{26}$', description: 'Tax invoice id' }),
});
const tags = ['Tax invoices'];

export default async function invoiceRoutes(app: ApiApp, { kasse, mode }: ApiDeps) {
  app.addSchema(TaxInvoiceSchema);

  app.post(
    '/payments/:id/tax_invoice',
    {
      schema: {
        operationId: 'createTaxInvoice',
        summary: 'Issue a tax invoice',
        description:
          'Issues the GST tax invoice of a paid payment with the next number of the financial year. 422 `invalid_state` for a payment that is not paid or without a tax profile (PATCH /account); 409 `already_invoiced` for a second one; 400 on `customer_state_code` for an `intra` supply outside the seller’s state or an `inter` supply without a state; 503 `fx_unavailable` when no `fx_rate` is given and the FX provider cannot be reached.',
        tags,
        params: PaymentIdParam,
        body: CreateInvoiceBody,
        errors: ['invalid_state', 'already_invoiced', 'fx_unavailable'],
        response: { 201: InvoiceRef },
      },
    },
    async (req, reply) =>
      reply.code(201).send(await kasse.invoices.create(req.auth, req.params.id, req.body, keyActor(req))),
  );

  app.get(
    '/tax_invoices',
    {
      schema: {
        operationId: 'listTaxInvoices',
        summary: 'List tax invoices',
        description:
          'Newest first. `limit` 1 to 100 (default 20); pass `next_cursor` as `cursor` for the next page; `payment_id` finds a payment’s invoice.',
        tags,
        querystring: Type.Object(
          {
            cursor: Type.Optional(Type.String({ maxLength: 200 })),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
            payment_id: Type.Optional(Type.String({ pattern: '^pay_[0-9A-Z]{36}$' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: PageOf(InvoiceRef) },
      },
    },
    async (req) => kasse.invoices.list(req.auth, req.query),
  );

  app.get(
    '/tax_invoices/:id',
    {
      schema: {
        operationId: 'getTaxInvoice',
        summary: 'Get a tax invoice',
        description: 'The invoice as issued; it never changes.',
        tags,
        params: InvoiceIdParam,
        response: { 200: InvoiceRef },
      },
    },
    async (req) => invoiceJson(await kasse.invoices.get(req.auth, req.params.id)),
  );

  app.get(
    '/tax_invoices/:id/pdf',
    {
      schema: {
        operationId: 'getTaxInvoicePdf',
        summary: 'Download a tax invoice as PDF',
        description: 'One A4 page (`application/pdf`) with the fields Rule 46 of the CGST Rules asks for.',
        tags,
        params: InvoiceIdParam,
        response: {
          200: {
            description: 'The PDF.',
            content: { 'application/pdf': { schema: { type: 'string', format: 'binary' } } },
          },
        },
      },
    },
    async (req, reply) => {
      const row = await kasse.invoices.get(req.auth, req.params.id);
      const pdf = await invoicePdf(invoiceJson(row), {
        mode,
        brand: await kasse.merchants.brands.pdf(req.auth.merchantId),
      });
      return reply
        .header('content-type', 'application/pdf')
        .header('content-disposition', `inline; filename="${row.number.replace(/\//g, '-')}.pdf"`)
        .send(pdf as never);
    },
  );
}
