/**
 * The merchant's brand on the checkout host's pages, with the strict CSP kept (no inline style): the colour is a
 * stylesheet of this host addressed by the colour itself (`/brand/color/<rrggbb>.css`, setting the pages' accent
 * custom properties), the logo an `<img>` of this host addressed by its pixels' SHA-256 (`/brand/logo/<sha256>.png`).
 * Both never change meaning, so they are cached for a year. Mails and PDFs use the logo's absolute URL or pixels.
 */
import type { FastifyInstance } from 'fastify';
import type { Kasse } from '../kasse.ts';
import { html, type Html } from '../core/html.ts';
import { brandLogoUrl, type MerchantBrand } from '../modules/merchants/index.ts';

export { brandLogoUrl, type MerchantBrand };

const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The head markup of a branded page: the colour's stylesheet, after the page's own (nothing without a colour). */
export function brandHead(brand: MerchantBrand | null | undefined): Html | string {
  return brand?.color ? html`<link rel="stylesheet" href="/brand/color/${brand.color.slice(1)}.css">\n` : '';
}

/** The logo at the top of a branded page, named by the merchant for screen readers (nothing without a logo). */
export function brandLogo(brand: MerchantBrand | null | undefined): Html | string {
  if (!brand?.logo) return '';
  const { sha256, width, height } = brand.logo;
  return html`<img class="k-logo" src="/brand/logo/${sha256}.png" width="${width}" height="${height}" alt="${brand.name}">\n`;
}

/** The stylesheet of a brand colour: the pages' accent (buttons, links, focus ring) with white text on it. */
export function brandCss(hex: string): string {
  return `:root{--accent:#${hex};--accent-fg:#fff}\n`;
}

/** GET /brand/color/<rrggbb>.css and GET /brand/logo/<sha256>.png, both immutable. */
export async function brandRoutes(app: FastifyInstance, { kasse }: { kasse: Kasse }): Promise<void> {
  app.get<{ Params: { file: string } }>('/brand/color/:file', async (req, reply) => {
    const m = /^([0-9a-f]{6})\.css$/.exec(req.params.file);
    if (!m) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    return reply.type('text/css; charset=utf-8').header('cache-control', IMMUTABLE).send(brandCss(m[1]!));
  });
  app.get<{ Params: { file: string } }>('/brand/logo/:file', async (req, reply) => {
    const m = /^([0-9a-f]{64})\.png$/.exec(req.params.file);
    const png = m ? await kasse.merchants.brands.logo(m[1]!) : null;
    if (!png) return reply.code(404).type('text/plain; charset=utf-8').send('Not found');
    return reply.type('image/png').header('cache-control', IMMUTABLE).send(png);
  });
}
