/**
 * The invoices module's front door: GST tax invoices for paid payments (service.ts), their PDF (pdf.ts), the
 * merchant's tax profile (profile.ts) and the GST rules the dashboard's forms check and show (gst.ts).
 */
export {
  financialYear,
  gstinProblem,
  invoiceNumber,
  isSellerState,
  istDate,
  rupeesGrouped,
  STATE_NAMES,
} from './gst.ts';
export { migrations } from './migrations/index.ts';
export { invoicePdf } from './pdf.ts';
export { PROFILE_DEFAULTS, PROFILE_FIELDS, type TaxProfile } from './profile.ts';
export { InvoiceService, invoiceJson, type CreateInvoiceInput } from './service.ts';
