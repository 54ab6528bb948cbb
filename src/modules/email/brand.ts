/**
 * The merchant's brand in mails to payers and customers: the logo (an `<img>` of the checkout host's
 * content-addressed logo URL, named by the merchant for mail clients that block images) and the colour of the
 * button and links. The colour passed the WCAG AA check with white text when it was set (merchants/branding.ts).
 */
import { html, type Html } from '../../core/html.ts';

export interface MailBrand {
  name: string;
  color: string | null;
  /** Absolute URL of the logo on the checkout host, or null. */
  logoUrl: string | null;
}

/** Kasse's own accent, when the merchant has no colour. */
const DEFAULT_ACCENT = '#2f5bea';

/** The accent of a mail: the merchant's colour (checked `#rrggbb`), else Kasse's. */
export function accentOf(brand: MailBrand | undefined): string {
  return brand?.color && /^#[0-9a-f]{6}$/.test(brand.color) ? brand.color : DEFAULT_ACCENT;
}

/** The logo above the heading (nothing without one). */
export function logoBlock(brand: MailBrand | undefined): Html | string {
  if (!brand?.logoUrl) return '';
  return html`<p style="margin:0 0 20px"><img src="${brand.logoUrl}" alt="${brand.name}" height="48" style="display:block;height:48px;width:auto;max-width:240px;border:0"></p>
`;
}
