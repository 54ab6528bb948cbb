/**
 * Reads PDFs back with poppler-utils as a person's tools would: `pdftotext -layout` for the text, `pdfinfo` for the
 * page count and size, and `pdftoppm` renders page 1 to a PNG under test-artifacts/ (kept by CI) for a look.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KASSE_HOME } from '../../src/config.ts';

export const ARTIFACTS = join(KASSE_HOME, 'test-artifacts');

export interface PdfReadBack {
  text: string;
  pages: number;
  /** Page size in points, e.g. "595.28 x 841.89 pts (A4)". */
  pageSize: string;
  png: string;
}

export function readPdf(bytes: Buffer, name: string): PdfReadBack {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${name}.pdf`);
  writeFileSync(file, bytes);
  const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
  const info = execFileSync('pdfinfo', [file], { encoding: 'utf8' });
  execFileSync('pdftoppm', ['-png', '-r', '80', '-singlefile', file, join(ARTIFACTS, name)]);
  return {
    text,
    pages: Number(/^Pages:\s+(\d+)/m.exec(info)?.[1] ?? 0),
    pageSize: /^Page size:\s+(.+)$/m.exec(info)?.[1]?.trim() ?? '',
    png: join(ARTIFACTS, `${name}.png`),
  };
}
