/**
 * Reads PDFs back with poppler-utils as a person's tools would: `pdftotext -layout` for the text, `pdfinfo` for the
 * page count and size, `pdftoppm` renders page 1 to a PNG under test-artifacts/ (kept by CI) for a look, and
 * `pdftohtml -xml` gives each run of text with its place and whether it is set in bold.
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

/** A run of text on a page as `pdftohtml -xml` finds it: where it is (points × 1.5) and whether it is bold. */
export interface PdfRun {
  page: number;
  top: number;
  left: number;
  text: string;
  bold: boolean;
}

/** The runs of text of a PDF (written by `readPdf` under test-artifacts/ as `<name>.pdf`). */
export function pdfRuns(name: string): PdfRun[] {
  const xml = execFileSync('pdftohtml', ['-xml', '-i', '-stdout', join(ARTIFACTS, `${name}.pdf`)], {
    encoding: 'utf8',
  });
  const runs: PdfRun[] = [];
  let page = 0;
  for (const line of xml.split('\n')) {
    const p = /^<page number="(\d+)"/.exec(line);
    if (p) page = Number(p[1]);
    const t = /^<text top="(\d+)" left="(\d+)"[^>]*>(.*)<\/text>$/.exec(line);
    if (!t) continue;
    const inner = t[3]!;
    runs.push({
      page,
      top: Number(t[1]),
      left: Number(t[2]),
      bold: /^<b>.*<\/b>$/.test(inner),
      text: inner
        .replace(/<[^>]+>/g, '')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&amp;/g, '&'),
    });
  }
  return runs;
}
