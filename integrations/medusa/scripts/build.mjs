/**
 * Builds the package into dist/: `tsc` type-checks the sources and writes their declarations, and esbuild bundles
 * them with @kasse/sdk (from this repository's sdk/, which is not on npm) into one CommonJS file, so the provider
 * loads the way Medusa loads providers (`require`), in jest as in `medusa start`, and has no dependency but its peer.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const types = join(root, '.types');
rmSync(join(root, 'dist'), { recursive: true, force: true });
rmSync(types, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit' });
// The program holds the SDK's sources too; only the provider's own declarations are shipped, and they must not
// name the SDK, which is bundled rather than installed.
const own = join(types, 'integrations', 'medusa', 'src');
for (const file of readdirSync(own)) {
  if (readFileSync(join(own, file), 'utf8').includes('@kasse/sdk')) throw new Error(`${file} names @kasse/sdk`);
  cpSync(join(own, file), join(root, 'dist', file));
}
rmSync(types, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/index.ts'],
  outfile: 'dist/index.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['@medusajs/*'],
  alias: { '@kasse/sdk': join(root, '..', '..', 'sdk', 'src', 'index.ts') },
  keepNames: true,
  logLevel: 'warning',
});
