/**
 * Modules with a front door: every folder under src/modules/ has an index.ts, the one file code outside the folder
 * may import (Biome's noRestrictedImports, biome.json, fails on any other: checked here on probe files against the
 * repository's own configuration), and a module with migrations hands them over there. The web layer never holds the
 * database handle: pages and routes call module services, which hold it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { test } from 'node:test';
import { KASSE_HOME } from '../../src/config.ts';

const SRC = join(KASSE_HOME, 'src');
const MODULES = join(SRC, 'modules');

const modules = () => readdirSync(MODULES).filter((d) => statSync(join(MODULES, d)).isDirectory());

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.ts$/.test(name) ? [p] : [];
  });
}

/** The text without comments (block, line, and JSDoc), roughly: enough to tell code from prose. Lines keep their numbers. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, '')).replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

test('every module has a front door, which hands over its migrations when it has any', () => {
  assert.ok(modules().length >= 18, `${modules().length} modules`);
  const composer = readFileSync(join(SRC, 'migrations.ts'), 'utf8');
  for (const m of modules()) {
    const door = join(MODULES, m, 'index.ts');
    assert.ok(statSync(door, { throwIfNoEntry: false }), `src/modules/${m}/index.ts exists`);
    const text = readFileSync(door, 'utf8');
    assert.match(text, /^\/\*\*[\s\S]*?\*\//, `src/modules/${m}/index.ts says in a header what the module owns`);
    if (statSync(join(MODULES, m, 'migrations'), { throwIfNoEntry: false })) {
      assert.match(text, /export \{ migrations \} from '\.\/migrations\/index\.ts';/, `${m} hands over its migrations`);
      assert.match(composer, new RegExp(`from './modules/${m}/index\\.ts'`), `src/migrations.ts composes ${m}'s`);
    }
  }
});

test('Biome refuses an import of a module file other than its index.ts, from outside the module', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kasse-doors-'));
  try {
    const config = JSON.parse(readFileSync(join(KASSE_HOME, 'biome.json'), 'utf8'));
    config.$schema = undefined;
    config.vcs = { enabled: false };
    writeFileSync(join(dir, 'biome.json'), JSON.stringify(config));
    // Where the importing file is, and how it names the users module's records.ts and index.ts from there.
    const probes: Array<[file: string, up: string, deep: boolean]> = [
      ['src/web/dashboard/probe.ts', '../../modules/', true],
      ['src/kasse-probe.ts', './modules/', true],
      ['src/modules/links/probe.ts', '../', true],
      ['src/modules/payments/store/probe.ts', '../../', true],
      ['src/modules/users/probe.ts', './', false],
    ];
    for (const [file, up] of probes) {
      mkdirSync(join(dir, dirname(file)), { recursive: true });
      const inside = up === './';
      writeFileSync(
        join(dir, file),
        `import type { UserRow } from '${up}${inside ? '' : 'users/'}records.ts';\n` +
          `import type { Users } from '${up}${inside ? '' : 'users/'}index.ts';\n\nexport type Probe = [UserRow, Users];\n`,
      );
    }
    const biome = join(KASSE_HOME, 'node_modules', '.bin', 'biome');
    const run = spawnSync(biome, ['lint', '--max-diagnostics=50', 'src'], { cwd: dir, encoding: 'utf8' });
    const out = run.stdout + run.stderr;
    const refused = [...out.matchAll(/^(\S+\.ts):(\d+):\d+ lint\/style\/noRestrictedImports/gm)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    assert.deepEqual(
      refused.sort(),
      probes
        .filter(([, , deep]) => deep)
        .map(([file]) => `${file}:1`)
        .sort(),
      out,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the web layer never holds the database handle', () => {
  const web = join(SRC, 'web');
  const found: string[] = [];
  for (const file of files(web)) {
    const path = relative(KASSE_HOME, file).split(sep).join('/');
    code(readFileSync(file, 'utf8'))
      .split('\n')
      .forEach((line, i) => {
        if (/\bdb\b|from '(\.\.\/)+db\//.test(line)) found.push(`${path}:${i + 1}: ${line.trim()}`);
      });
  }
  assert.deepEqual(found, []);
});
