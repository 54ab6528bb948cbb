/**
 * PDF documents (statements, tax invoices) with pdfkit on A4, in DejaVu Sans so text beyond Latin-1 (the rupee
 * sign, names in Greek or Cyrillic) renders instead of being dropped. Documents are rendered in memory; callers send
 * the bytes.
 */
import { createRequire } from 'node:module';
import type PDFDocument from 'pdfkit';
import { loadOnce } from './lazy.ts';

const require = createRequire(import.meta.url);
const fontDir = require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf').replace(/DejaVuSans\.ttf$/, '');

export type Pdf = PDFKit.PDFDocument;

/** pdfkit and its fonts' parsers are loaded on the first document, not by every process that imports this. */
const pdfkit = loadOnce<typeof PDFDocument>(() => import('pdfkit').then((m) => m.default));

/** A4 portrait, 40 pt margins, fonts `regular` and `bold` registered, document info set. */
export async function newPdf(info: { title: string; author: string }): Promise<Pdf> {
  const Document = await pdfkit();
  const doc = new Document({
    size: 'A4',
    margin: 40,
    info: { Title: info.title, Author: info.author, Creator: 'Kasse' },
  });
  doc.registerFont('regular', `${fontDir}DejaVuSans.ttf`);
  doc.registerFont('bold', `${fontDir}DejaVuSans-Bold.ttf`);
  doc.font('regular');
  return doc;
}

/** Ends the document and resolves with its bytes. */
export function pdfBytes(doc: Pdf): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
    doc.end();
  });
}

/** How a row is set: in bold, with a rule above it (a total), with a smaller grey line under its label. */
export interface RowStyle {
  bold?: boolean;
  rule?: boolean;
  detail?: string | null;
}

/**
 * Draws label/value rows as two columns from the current position (values right-aligned); returns the y below them.
 * `labelWidth` defaults to what the widest value leaves, so labels wrap only when the page is too narrow for them.
 */
export function rows(
  doc: Pdf,
  items: Array<[string, string] | [string, string, RowStyle]>,
  opts: { x?: number; width?: number; labelWidth?: number; size?: number } = {},
): number {
  const x = opts.x ?? doc.page.margins.left;
  const width = opts.width ?? doc.page.width - doc.page.margins.left - doc.page.margins.right;
  const size = opts.size ?? 9;
  doc.fontSize(size);
  const widest = Math.max(
    ...items.map(([, value, style]) => doc.font(style?.bold ? 'bold' : 'regular').widthOfString(value)),
  );
  const labelWidth = opts.labelWidth ?? width - Math.max(width * 0.2, widest + 12);
  let y = doc.y;
  for (const [label, value, style = {}] of items) {
    const font = style.bold ? 'bold' : 'regular';
    if (style.rule) {
      doc
        .moveTo(x, y)
        .lineTo(x + width, y)
        .lineWidth(0.8)
        .strokeColor('#333')
        .stroke();
      y += 3;
    }
    doc.font(font).fontSize(size);
    const labelHeight = doc.heightOfString(label, { width: labelWidth - 6 });
    const h = Math.max(labelHeight, doc.heightOfString(value, { width: width - labelWidth }));
    doc.text(label, x, y, { width: labelWidth - 6 });
    doc.text(value, x + labelWidth, y, { width: width - labelWidth, align: 'right' });
    y += h;
    if (style.detail) {
      doc
        .font('regular')
        .fontSize(size - 1.5)
        .fillColor('#555');
      const dh = doc.heightOfString(style.detail, { width: labelWidth - 6 });
      doc.text(style.detail, x, y, { width: labelWidth - 6 });
      doc.fillColor('black').fontSize(size);
      y += dh;
    }
    y += 3;
  }
  doc.font('regular');
  doc.x = x;
  doc.y = y;
  return y;
}

/** The merchant's brand on a document: its logo (PNG pixels) and colour (`#rrggbb`), each optional. */
export interface PdfBrand {
  logoPng: Buffer | null;
  color: string | null;
}

/**
 * Draws the brand on the current page without moving the text position: a band in the colour across the top edge
 * and the logo in the top right corner (fitted in 120 × 44 pt).
 */
export function drawBrand(doc: Pdf, brand: PdfBrand | null | undefined): void {
  if (!brand) return;
  const { x, y } = doc;
  if (brand.color) doc.save().rect(0, 0, doc.page.width, 8).fill(brand.color).restore();
  if (brand.logoPng) {
    const w = 120;
    doc.image(brand.logoPng, doc.page.width - doc.page.margins.right - w, 24, { fit: [w, 44], align: 'right' });
  }
  doc.fillColor('black');
  doc.x = x;
  doc.y = y;
}
