/**
 * Markup built safely: the `html` template tag escapes every interpolated value unless it is already `Html`, so a
 * merchant's or payer's string can only ever become text. Used by the pages of the checkout host and by emails.
 */

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Markup that is already safe; only `html` and `raw` make one. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

/** Trusted markup (our own constants, a QR code SVG); never pass request, merchant or payer data. */
export const raw = (markup: string) => new Html(markup);

function part(v: unknown): string {
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(part).join('');
  if (v === null || v === undefined || v === false) return '';
  return escapeHtml(String(v));
}

/** Template tag: interpolated values are HTML-escaped (text and attribute safe) unless they are `Html`. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1]!;
  return new Html(out);
}
