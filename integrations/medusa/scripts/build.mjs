/**
 * Builds the package into dist/: `tsc` type-checks the sources and writes their declarations, and esbuild bundles
 * them with @kasse/sdk (from this repository's sdk/, which is not on npm) into one CommonJS file, so the provider
 * loads the way Medusa loads providers (`require`), in jest as in `medusa start`, and has no dependency but its peer.
 * Files are built aside and renamed into dist/, so a process loading the package meanwhile never finds it missing.
 * src/package.json marks the sources as the ES modules they are written as, so the repository's own type-check, which
 * compiles mapping.ts for its pure tests, emits them as such; what ships is the CommonJS bundle.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const aside = join(root, '.types');
const dist = join(root, 'dist');
rmSync(aside, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
await build({
  absWorkingDir: root,
  entryPoints: ['src/index.ts'],
  outfile: join(aside, 'index.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['@medusajs/*'],
  alias: { '@kasse/sdk': join(root, '..', '..', 'sdk', 'src', 'index.ts') },
  keepNames: true,
  logLevel: 'warning',
});
// The program holds the SDK's sources too; only the provider's own declarations are shipped, and they must not
// name the SDK, which is bundled rather than installed.
const own = join(aside, 'integrations', 'medusa', 'src');
const built = new Map([['index.js', join(aside, 'index.js')]]);
for (const file of readdirSync(own)) {
  if (readFileSync(join(own, file), 'utf8').includes('@kasse/sdk')) throw new Error(`${file} names @kasse/sdk`);
  built.set(file, join(own, file));
}
mkdirSync(dist, { recursive: true });
for (const [file, from] of built) renameSync(from, join(dist, file));
for (const file of readdirSync(dist)) if (!built.has(file)) rmSync(join(dist, file));
rmSync(aside, { recursive: true, force: true });
