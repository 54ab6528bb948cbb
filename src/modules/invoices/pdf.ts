/**
 * A tax invoice as a one-page A4 PDF with what Rule 46 of the CGST Rules asks for: supplier name, address and
 * GSTIN; a consecutive number of at most 16 characters; date of issue; recipient name and GSTIN; place of supply
 * with its state name; SAC; description; taxable value; rate and amount of each tax head; total, also in words; and
 * the signature line of a computer-generated invoice.
 */
import { formatCents } from '../../core/money.ts';
import { drawBrand, newPdf, pdfBytes, type PdfBrand } from '../../core/pdf.ts';
import { rupeesGrouped, rupeesInWords, STATE_NAMES } from './gst.ts';
import type { TaxInvoiceJson } from './service.ts';

const state = (code: string | null) => (code ? `${STATE_NAMES[code] ?? 'Unknown'} (${code})` : '—');
const percent = (bps: number) => `${(bps / 100).toFixed(2).replace(/\.?0+$/, '')}%`;
const paise = (text: string) => BigInt(text.replace('.', ''));
const inr = (text: string) => `₹${rupeesGrouped(paise(text))}`;

/** "13-03-2026" (IST) for an instant. */
function istDay(iso: string): string {
  const d = new Date(new Date(iso).getTime() + 330 * 60_000).toISOString();
  return `${d.slice(8, 10)}-${d.slice(5, 7)}-${d.slice(0, 4)}`;
}

export async function invoicePdf(
  inv: TaxInvoiceJson,
  opts: { mode: 'test' | 'live'; orderId?: string; brand?: PdfBrand | null },
): Promise<Buffer> {
  const doc = await newPdf({ title: `Tax invoice ${inv.number}`, author: inv.seller.name });
  drawBrand(doc, opts.brand);
  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;
  const half = width / 2;

  doc.font('bold').fontSize(16).text('TAX INVOICE', left, 40, { width, align: 'center' });
  doc
    .font('regular')
    .fontSize(8)
    .fillColor('#555')
    .text(opts.mode === 'test' ? 'TEST MODE — not a valid tax document' : 'Original for recipient', {
      width,
      align: 'center',
    });
  doc.fillColor('black');

  const top = 90;
  doc
    .font('bold')
    .fontSize(11)
    .text(inv.seller.name, left, top, { width: half - 10 });
  doc.font('regular').fontSize(9);
  if (inv.seller.legal_name && inv.seller.legal_name !== inv.seller.name)
    doc.text(inv.seller.legal_name, { width: half - 10 });
  if (inv.seller.address) doc.text(inv.seller.address, { width: half - 10 });
  doc.text(`GSTIN: ${inv.seller.tax_id ?? '—'}`, { width: half - 10 });
  doc.text(`State: ${state(inv.seller.state_code)}`, { width: half - 10 });
  const sellerBottom = doc.y;

  const meta: Array<[string, string]> = [
    ['Invoice number', inv.number],
    ['Date of issue', istDay(inv.issued_at)],
    [
      'Place of supply',
      state(inv.customer.state_code ?? (inv.place_of_supply === 'intra' ? inv.seller.state_code : null)),
    ],
    ['Supply', inv.place_of_supply === 'intra' ? 'Intra-state' : 'Inter-state'],
    ['Reverse charge', 'No'],
  ];
  let y = top;
  for (const [label, value] of meta) {
    doc
      .font('regular')
      .fontSize(9)
      .text(label, left + half, y, { width: 90 });
    doc.font('bold').text(value, left + half + 95, y, { width: half - 95 });
    y += 14;
  }

  y = Math.max(sellerBottom, y) + 16;
  doc.font('bold').fontSize(10).text('Bill to', left, y);
  doc.font('regular').fontSize(9);
  doc.text(inv.customer.name ?? 'Customer (name not given)', { width });
  doc.text(`GSTIN: ${inv.customer.tax_id ?? 'Unregistered'}`, { width });
  if (inv.customer.state_code) doc.text(`State: ${state(inv.customer.state_code)}`, { width });

  // The line item and the tax heads.
  y = doc.y + 16;
  const cols = [left, left + 230, left + 300, left + 390];
  const header = ['Description', 'SAC', 'Rate', 'Amount (INR)'];
  doc
    .rect(left, y - 4, width, 18)
    .fillColor('#eee')
    .fill()
    .fillColor('black');
  doc.font('bold').fontSize(9);
  header.forEach((h, i) => {
    doc.text(h, cols[i]!, y, {
      width: i === 3 ? width - (cols[3]! - left) : cols[i + 1]! - cols[i]! - 6,
      align: i === 3 ? 'right' : 'left',
    });
  });
  y += 20;
  const line = (label: string, sac: string, rate: string, amount: string, bold = false) => {
    doc.font(bold ? 'bold' : 'regular').fontSize(9);
    const h = doc.heightOfString(label, { width: cols[1]! - cols[0]! - 6 });
    doc.text(label, cols[0]!, y, { width: cols[1]! - cols[0]! - 6 });
    doc.text(sac, cols[1]!, y, { width: cols[2]! - cols[1]! - 6 });
    doc.text(rate, cols[2]!, y, { width: cols[3]! - cols[2]! - 6 });
    doc.text(amount, cols[3]!, y, { width: width - (cols[3]! - left), align: 'right' });
    y += Math.max(h, 12) + 4;
  };
  line(
    `${inv.description ?? `Payment ${opts.orderId ?? inv.payment_id}`} — taxable value`,
    inv.sac ?? '—',
    '',
    inr(inv.taxable),
  );
  if (inv.place_of_supply === 'intra') {
    line('CGST', '', percent(inv.tax_rate_bps / 2), inr(inv.cgst));
    line('SGST', '', percent(inv.tax_rate_bps / 2), inr(inv.sgst));
  } else {
    line('IGST', '', percent(inv.tax_rate_bps), inr(inv.igst));
  }
  doc
    .moveTo(left, y)
    .lineTo(left + width, y)
    .strokeColor('#999')
    .stroke();
  y += 6;
  line('Total', '', '', inr(inv.total), true);
  doc
    .font('regular')
    .fontSize(9)
    .text(`Total in words: ${rupeesInWords(paise(inv.total))}`, left, y + 4, { width });

  y = doc.y + 16;
  doc.fontSize(8).fillColor('#444');
  doc.text(
    `Paid US$${formatCents(inv.usd_cents)} in crypto (payment ${inv.payment_id}); converted at ₹${inv.fx.rate} per US dollar (${inv.fx.source === 'manual' ? 'rate given by the seller' : `${inv.fx.source} reference rate`} of ${inv.fx.date}). Prices ${inv.tax_inclusive ? 'include' : 'exclude'} GST.`,
    left,
    y,
    { width },
  );
  doc
    .fillColor('black')
    .fontSize(9)
    .text(`For ${inv.seller.legal_name ?? inv.seller.name}`, left + half, doc.y + 30, { width: half, align: 'right' });
  doc.text('Authorised signatory', left + half, doc.y + 24, { width: half, align: 'right' });
  doc
    .fontSize(7)
    .fillColor('#555')
    .text('This is a computer-generated invoice and needs no signature.', left, doc.y + 20, { width, align: 'center' });
  return pdfBytes(doc);
}
