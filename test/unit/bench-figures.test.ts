/**
 * The benchmarks' figures are read from kept records: every run is a file of its own under bench/results/<name>/,
 * named after its date (bench/_records.ts), and every figure bench/README.md quotes is a link to the record and the
 * JSON Pointer of its value, e.g. `[0.80](results/api/2026-11-27T015750Z.json#/result/ratio)`. Links of the same
 * form in docs/*.md are checked too. A number in the README's prose that reads as a measurement and has no link
 * fails, unless it is a goal.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { recordStamp } from '../../bench/_records.ts';
import { KASSE_HOME } from '../../src/config.ts';

const RESULTS = join(KASSE_HOME, 'bench', 'results');
const README = join(KASSE_HOME, 'bench', 'README.md');

/** A link to a record: `[figure](path.json#/json/pointer)` with the path relative to the Markdown file. */
const RECORD_LINK = /\[([^\]]*)\]\(([^)\s]*results\/[^)\s#]+\.json)#([^)\s]*)\)/g;

interface Figure {
  file: string;
  text: string;
  record: string;
  pointer: string;
}

function figuresIn(file: string): Figure[] {
  const md = readFileSync(file, 'utf8');
  return [...md.matchAll(RECORD_LINK)].map((m) => ({
    file: relative(KASSE_HOME, file),
    text: m[1]!,
    record: resolve(join(file, '..'), m[2]!),
    pointer: m[3]!,
  }));
}

/** The value at an RFC 6901 JSON Pointer, or undefined. */
function at(doc: unknown, pointer: string): unknown {
  if (!pointer.startsWith('/')) return undefined;
  let cur: any = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (cur === null || typeof cur !== 'object' || !(key in cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

/** Whether `text` (digits, thousands commas, a decimal point) is `value` rounded to the decimals `text` shows. */
function shows(text: string, value: unknown): boolean {
  if (!/^\d{1,3}(,\d{3})*(\.\d+)?$|^\d+(\.\d+)?$/.test(text)) return false;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? +value : NaN;
  if (!Number.isFinite(n)) return false;
  const decimals = text.split('.')[1]?.length ?? 0;
  return Math.abs(n - Number(text.replaceAll(',', ''))) <= 0.5 * 10 ** -decimals + 1e-9;
}

const records = new Map<string, unknown>();
function record(path: string): unknown {
  if (!records.has(path)) records.set(path, existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined);
  return records.get(path);
}

test('every kept record is a file of its own, named after its benchmark and date', () => {
  const names = readdirSync(RESULTS);
  assert.ok(names.length > 10, `found ${names.length} benchmarks`);
  const wrong: string[] = [];
  for (const name of names) {
    const dir = join(RESULTS, name);
    if (!statSync(dir).isDirectory()) {
      wrong.push(`${name}: not a folder of dated records`);
      continue;
    }
    if (!existsSync(join(KASSE_HOME, 'bench', `${name}.ts`))) wrong.push(`${name}: no bench/${name}.ts`);
    for (const file of readdirSync(dir)) {
      const r = record(join(dir, file)) as { benchmark?: string; date?: string; machine?: object; result?: object };
      const dated = typeof r.date === 'string' ? `${recordStamp(new Date(r.date))}.json` : null;
      if (r.benchmark !== name || file !== dated || typeof r.machine !== 'object' || typeof r.result !== 'object')
        wrong.push(`${name}/${file}: benchmark ${r.benchmark}, date ${r.date}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('every figure linked to a record is the value there, as rounded in the text', () => {
  const docs = join(KASSE_HOME, 'docs');
  const files = [
    README,
    ...readdirSync(docs)
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(docs, f)),
  ];
  const figures = files.flatMap(figuresIn);
  assert.ok(figures.filter((f) => f.file === 'bench/README.md').length > 200, 'the README quotes its figures by link');
  const wrong = figures
    .filter((f) => !f.record.startsWith(`${RESULTS}/`) || !shows(f.text, at(record(f.record), f.pointer)))
    .map(
      (f) =>
        `${f.file}: [${f.text}] is ${JSON.stringify(at(record(f.record), f.pointer))} in ${relative(KASSE_HOME, f.record)}#${f.pointer}`,
    );
  assert.deepEqual(wrong, []);
});

test('no figure in bench/README.md reads as a measurement without a link to its record', () => {
  const prose = readFileSync(README, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .split('\n')
    .filter((line) => !line.startsWith('|'))
    .join('\n')
    .replace(RECORD_LINK, 'FIGURE')
    .replace(/`[^`]*`/g, 'CODE');
  // A number with a decimal point, or followed by a unit of time, a ratio or a rate.
  const measured = /(?<![\w.,-])(\d[\d,]*\.\d+|\d[\d,]*(?=\s?(µs|ms|s|×|times|per second)(?![\w-])))/g;
  const unlinked = [...prose.matchAll(measured)]
    .filter((m) => !/goal|≤|≥|at most|at least/i.test(prose.slice(Math.max(0, m.index - 40), m.index + 30)))
    .map((m) => prose.slice(Math.max(0, m.index - 30), m.index + 30).replace(/\s+/g, ' '));
  assert.deepEqual(unlinked, []);
});
