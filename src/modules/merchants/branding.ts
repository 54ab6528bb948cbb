/**
 * The merchant's brand as stored: the colour (checked for WCAG AA contrast, with the nearest colour that passes
 * suggested when it fails) and the logo (decoded and re-encoded with sharp, so only pixels are ever served).
 * How pages use them: src/web/brand.ts and docs/dashboard.md.
 */
import { createHash } from 'node:crypto';
import { invalid } from '../../core/errors.ts';
import { loadOnce } from '../../core/lazy.ts';

/** WCAG 2.1 AA for normal text. */
export const MIN_CONTRAST = 4.5;

/**
 * The colours text meets the brand colour on: white text on it (buttons) and it as text on the pages' lightest
 * backgrounds (links on the white card and on the light grey page). The grey is the darker of the two, so it binds.
 */
const LIGHT_SURFACES = ['#ffffff', '#f4f5f7'] as const;

/** NOTE: a logo is PNG, JPEG or WebP of at most 256 kB; it is served at most 512 px on its longer side. */
export const LOGO_MAX_BYTES = 256 * 1024;
export const LOGO_MAX_PX = 512;

const COLOR = /^#[0-9a-f]{6}$/i;

function channels(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function toHex(rgb: readonly number[]): string {
  return `#${rgb.map((c) => c.toString(16).padStart(2, '0')).join('')}`;
}

/** WCAG relative luminance of `#rrggbb`. */
export function luminance(hex: string): number {
  const [r, g, b] = channels(hex).map((c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG contrast ratio of two `#rrggbb` colours (1 to 21). */
export function contrast(a: string, b: string): number {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}

/** The lowest contrast of `hex` against the light surfaces it meets. */
export function brandContrast(hex: string): number {
  return Math.min(...LIGHT_SURFACES.map((s) => contrast(hex, s)));
}

/**
 * The nearest colour to `hex` that passes: the same hue and saturation darkened just enough (every channel scaled by
 * the largest factor, in 1/1000 steps, that reaches 4.5:1). A colour that passes is its own answer.
 */
export function nearestPassing(hex: string): string {
  const rgb = channels(hex);
  const at = (k: number) => toHex(rgb.map((c) => Math.floor((c * k) / 1000)));
  if (brandContrast(hex) >= MIN_CONTRAST) return hex.toLowerCase();
  let lo = 0; // passes (black does)
  let hi = 1000; // fails
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (brandContrast(at(mid)) >= MIN_CONTRAST) lo = mid;
    else hi = mid;
  }
  return at(lo);
}

/** `#RRGGBB` as stored (lower case). 400 on `param` for another shape, or a colour text on it cannot be read on. */
export function checkBrandColor(value: string, param = 'branding.color'): string {
  if (!COLOR.test(value)) throw invalid('The brand colour must be a hex colour #RRGGBB, for example #1d4ed8.', param);
  const hex = value.toLowerCase();
  const ratio = brandContrast(hex);
  if (ratio < MIN_CONTRAST)
    throw invalid(
      `The brand colour ${hex} is too light: white text on it, and it as text on the page, reach only ${ratio.toFixed(2)}:1, below the 4.5:1 WCAG AA asks for. The nearest colour that passes is ${nearestPassing(hex)}.`,
      param,
    );
  return hex;
}

/** A logo ready to store: PNG pixels only, its SHA-256 (hex, its address) and size. */
export interface ProcessedLogo {
  png: Buffer;
  sha256: string;
  width: number;
  height: number;
}

const LOGO_FORMATS = new Set(['png', 'jpeg', 'webp']);
/** sharp (libvips), loaded when a logo is first processed, not by every process that imports this. */
const libvips = loadOnce(() => import('sharp').then((m) => m.default));

/** The picture formats of the media types a browser may claim for a file; any other claim is some other format. */
const CLAIMED: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/pjpeg': 'jpeg',
  'image/webp': 'webp',
};
const FORMAT_NAMES: Record<string, string> = { png: 'PNG', jpeg: 'JPEG', webp: 'WebP' };

/**
 * Where a PNG, JPEG or WebP file's picture ends, read from its own structure: after PNG's IEND chunk, JPEG's EOI
 * marker (segments and entropy-coded scans walked, so an embedded thumbnail's markers are skipped), or the length
 * its RIFF header gives. Null when the structure is broken before its end.
 */
export function pictureEnd(bytes: Buffer, format: string): number | null {
  const len = bytes.length;
  if (format === 'png') {
    for (let at = 8; at + 12 <= len; ) {
      const type = bytes.toString('latin1', at + 4, at + 8);
      at += 12 + bytes.readUInt32BE(at);
      if (type === 'IEND') return at <= len ? at : null;
    }
    return null;
  }
  if (format === 'webp') {
    if (len < 12 || bytes.toString('latin1', 0, 4) !== 'RIFF') return null;
    const end = 8 + bytes.readUInt32LE(4);
    return end <= len ? end : null;
  }
  if (format === 'jpeg') {
    let at = 2; // after SOI
    while (at < len) {
      if (bytes[at] !== 0xff) return null;
      while (bytes[at] === 0xff) at++;
      const marker = bytes[at++];
      if (marker === undefined) return null;
      if (marker === 0xd9) return at; // EOI
      if ((marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) continue; // no length
      if (at + 2 > len) return null;
      at += bytes.readUInt16BE(at);
      if (marker !== 0xda) continue;
      // A scan's entropy-coded data runs to the next marker that is not a stuffed 0xFF00 or a restart marker.
      while (
        at + 1 < len &&
        !(bytes[at] === 0xff && bytes[at + 1] !== 0 && (bytes[at + 1]! < 0xd0 || bytes[at + 1]! > 0xd7))
      )
        at++;
    }
    return null;
  }
  return null;
}

/**
 * Decodes an uploaded logo and re-encodes it as PNG: metadata dropped, orientation applied, at most LOGO_MAX_PX on
 * its longer side. 400 on `logo` for an empty or too large file, SVG, anything that is not PNG, JPEG or WebP, a file
 * whose content is not the format it claims (`claimed`: the media type the upload gave it, '' for none), and a file
 * with data after the end of its picture (another file appended to it, a ZIP say), which re-encoding would hide.
 */
export async function processLogo(bytes: Buffer, claimed = '', param = 'logo'): Promise<ProcessedLogo> {
  if (bytes.length === 0) throw invalid('Choose a logo file to upload.', param);
  if (bytes.length > LOGO_MAX_BYTES)
    throw invalid(`The logo is ${Math.ceil(bytes.length / 1024)} kB; it may be at most 256 kB.`, param);
  const refused = invalid('The logo must be a PNG, JPEG or WebP picture (SVG and other formats are refused).', param);
  const sharp = await libvips();
  let format: string | undefined;
  try {
    format = (await sharp(bytes, { limitInputPixels: 40_000_000 }).metadata()).format;
  } catch {
    throw refused;
  }
  if (!format || !LOGO_FORMATS.has(format)) throw refused;
  if (claimed && CLAIMED[claimed] !== format)
    throw invalid(
      `The file is sent as ${CLAIMED[claimed] ? FORMAT_NAMES[CLAIMED[claimed]] : claimed} but holds a ${FORMAT_NAMES[format]} picture. Export the logo again as PNG, JPEG or WebP and upload that file.`,
      param,
    );
  const end = pictureEnd(bytes, format);
  if (end === null)
    throw invalid('The logo could not be read as a picture; export it again as PNG, JPEG or WebP.', param);
  if (end < bytes.length)
    throw invalid(
      `The file has ${bytes.length - end} bytes of other data after the end of its ${FORMAT_NAMES[format]} picture. Upload the picture alone: export the logo again as PNG, JPEG or WebP.`,
      param,
    );
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: 40_000_000, animated: false })
      .rotate()
      .resize({ width: LOGO_MAX_PX, height: LOGO_MAX_PX, fit: 'inside', withoutEnlargement: true })
      .png({ compressionLevel: 9 })
      .toBuffer({ resolveWithObject: true });
    return {
      png: data,
      sha256: createHash('sha256').update(data).digest('hex'),
      width: info.width,
      height: info.height,
    };
  } catch {
    throw invalid('The logo could not be read as a picture; export it again as PNG, JPEG or WebP.', param);
  }
}
