/**
 * The installed chain families: every folder under src/chains/ with an `index.ts` that default-exports a
 * `ChainFamily` (plugin.ts) named like the folder, in name order. Finding them here, rather than listing them in the
 * container, is what makes a new family a new folder and nothing else. Read once per process. (`index.js` when this
 * file runs compiled to JavaScript, as in the test run.)
 */
import { existsSync, readdirSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../config.ts';
import type { ChainFamily } from './plugin.ts';

const HERE = new URL('./', import.meta.url);
const INDEX = `index${extname(fileURLToPath(import.meta.url))}`;

let found: Promise<ChainFamily[]> | null = null;

/** Every installed family (loaded once per process). */
export function installedFamilies(): Promise<ChainFamily[]> {
  found ??= discover();
  return found;
}

async function discover(): Promise<ChainFamily[]> {
  const names = readdirSync(HERE, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(new URL(`${d.name}/${INDEX}`, HERE)))
    .map((d) => d.name)
    .sort();
  const families: ChainFamily[] = [];
  for (const name of names) {
    const family = ((await import(new URL(`${name}/${INDEX}`, HERE).href)) as { default?: ChainFamily }).default;
    if (!family || family.name !== name)
      throw new Error(`src/chains/${name}/index.ts must default-export the chain family named "${name}"`);
    families.push(family);
  }
  return families;
}

/**
 * Refuses an explicit hot-wallet key (`KASSE_HOT_WALLET_KEY`) no installed family accepts, naming the formats the
 * families declare (`ChainFamily.hotWalletKey`).
 */
export function checkHotWalletKey(key: string | null, families: readonly ChainFamily[]): void {
  if (key === null) return;
  const formats = families.flatMap((f) => (f.hotWalletKey ? [f.hotWalletKey] : []));
  if (formats.some((f) => f.isValid(key))) return;
  if (formats.length === 0)
    throw new ConfigError(
      'KASSE_HOT_WALLET_KEY is set, but no installed chain family takes an explicit hot-wallet key',
    );
  throw new ConfigError(`KASSE_HOT_WALLET_KEY must be ${[...new Set(formats.map((f) => f.description))].join(' or ')}`);
}
