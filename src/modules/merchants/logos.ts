/**
 * Logo pictures (merchant_logos): PNG pixels re-encoded on upload (branding.ts), addressed by their SHA-256, so the
 * same picture is stored once and its address never changes meaning (served with immutable caching).
 */
import type { DbOrTx } from '../../db/index.ts';
import type { PdfBrand } from '../../core/pdf.ts';
import type { MailBrand } from '../email/index.ts';
import type { ProcessedLogo } from './branding.ts';

/** The absolute URL of a logo on the checkout host `base` (served by src/web/brand.ts). */
export function brandLogoUrl(base: string, sha256: string): string {
  return `${base}/brand/logo/${sha256}.png`;
}

/** Stores a processed logo under its SHA-256 (a picture already stored is kept as it is). */
export async function storeLogo(db: DbOrTx, logo: ProcessedLogo): Promise<void> {
  await db
    .insertInto('merchant_logos')
    .values({ sha256: logo.sha256, png: logo.png, width: logo.width, height: logo.height })
    .onConflict((oc) => oc.column('sha256').doNothing())
    .execute();
}

/** The PNG stored under `sha256`, or null. */
export async function logoPng(db: DbOrTx, sha256: string): Promise<Buffer | null> {
  const row = await db.selectFrom('merchant_logos').select('png').where('sha256', '=', sha256).executeTakeFirst();
  return row?.png ?? null;
}

/** What pages, mails and PDFs show of a merchant's brand; null when there is no such merchant. */
export interface MerchantBrand {
  name: string;
  color: string | null;
  logo: { sha256: string; width: number; height: number } | null;
}

/** The merchant's name, colour and logo in one query. */
export async function merchantBrand(db: DbOrTx, merchantId: string): Promise<MerchantBrand | null> {
  return (await merchantBrands(db, [merchantId])).get(merchantId) ?? null;
}

/** The brands of the merchants `ids` (those that exist) in one query; for mail about many objects. */
export async function merchantBrands(db: DbOrTx, ids: readonly string[]): Promise<Map<string, MerchantBrand>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('merchants')
    .leftJoin('merchant_logos', 'merchant_logos.sha256', 'merchants.logo_sha256')
    .select([
      'merchants.id',
      'merchants.name',
      'merchants.brand_color',
      'merchant_logos.sha256',
      'merchant_logos.width',
      'merchant_logos.height',
    ])
    .where('merchants.id', 'in', [...new Set(ids)])
    .execute();
  return new Map(
    rows.map((row) => [
      row.id,
      {
        name: row.name,
        color: row.brand_color,
        logo: row.sha256 ? { sha256: row.sha256, width: row.width!, height: row.height! } : null,
      },
    ]),
  );
}

/** A merchant's brand as mails carry it: the logo as an absolute URL on the checkout host `base`. */
export function mailBrand(brand: MerchantBrand, base: string): MailBrand {
  return {
    name: brand.name,
    color: brand.color,
    logoUrl: brand.logo ? brandLogoUrl(base, brand.logo.sha256) : null,
  };
}

/** A merchant's brand as PDFs carry it (the logo's pixels); no brand for no such merchant. */
export async function pdfBrand(db: DbOrTx, merchantId: string): Promise<PdfBrand | null> {
  const row = await db
    .selectFrom('merchants')
    .leftJoin('merchant_logos', 'merchant_logos.sha256', 'merchants.logo_sha256')
    .select(['merchants.brand_color', 'merchant_logos.png'])
    .where('merchants.id', '=', merchantId)
    .executeTakeFirst();
  return row ? { color: row.brand_color, logoPng: row.png } : null;
}

/** Brands for the layers that hold no database handle (pages, the logo route, PDFs answered over HTTP). */
export class Brands {
  constructor(private readonly db: DbOrTx) {}

  /** The merchant's name, colour and logo (null for no such merchant). */
  of(merchantId: string): Promise<MerchantBrand | null> {
    return merchantBrand(this.db, merchantId);
  }

  /** The merchant's brand as PDFs carry it. */
  pdf(merchantId: string): Promise<PdfBrand | null> {
    return pdfBrand(this.db, merchantId);
  }

  /** The logo's PNG stored under `sha256`, or null. */
  logo(sha256: string): Promise<Buffer | null> {
    return logoPng(this.db, sha256);
  }
}
