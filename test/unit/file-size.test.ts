/** Files with one job: no source file in src/ grows past 600 lines (split it by job instead). */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

const MAX_LINES = 600;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(ts|js)$/.test(name) ? [p] : [];
  });
}

test(`no file in src/ is over ${MAX_LINES} lines`, () => {
  const long = sources('src')
    .map((file) => ({ file, lines: readFileSync(file, 'utf8').split('\n').length }))
    .filter((f) => f.lines > MAX_LINES)
    .map((f) => `${f.file}: ${f.lines} lines`);
  assert.deepEqual(long, []);
});
