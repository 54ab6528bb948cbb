/**
 * Chain families are plugins: each folder under src/chains/ with an index.ts is found and loaded by name, its
 * released migrations keep their names and new ones are named in its namespace, and the house rules hold — chain code reaches payment data only
 * through the ports (nothing under src/chains imports src/modules or src/web), and EVM specifics live only under
 * src/chains/evm, Solana's only under src/chains/solana (comments aside).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { checkHotWalletKey, installedFamilies } from '../../src/chains/families.ts';
import { ConfigError, KASSE_HOME } from '../../src/config.ts';
import { ownMigrations } from '../../src/migrations.ts';

const SRC = join(KASSE_HOME, 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.(ts|js)$/.test(name) ? [p] : [];
  });
}

/** The text without comments (block, line, and JSDoc), roughly: enough to tell code from prose. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

test('families are found by folder, named like it, and their migrations keep their names or take their namespace', async () => {
  const families = await installedFamilies();
  // Every folder but migrations/ (the chains layer's own table, chain health) is a family.
  const folders = readdirSync(join(SRC, 'chains'))
    .filter((d) => d !== 'migrations' && statSync(join(SRC, 'chains', d)).isDirectory())
    .sort();
  assert.deepEqual(
    families.map((f) => f.name),
    folders,
  );
  assert.ok(folders.includes('evm') && folders.includes('solana'));
  const names = [...Object.keys(ownMigrations), ...families.flatMap((f) => Object.keys(f.migrations ?? {}))];
  assert.equal(new Set(names).size, names.length, 'no two migrations share a name');
  assert.deepEqual(names.sort().slice(0, 7), [
    '0001_foundation',
    '0002_payments',
    '0003_webhooks',
    '0004_evm',
    '0005_links',
    '0006_evm_sender',
    '0007_transfers',
  ]);
  // Released names stay as the databases recorded them; every new one is in its family's namespace.
  const released = ['0004_evm', '0006_evm_sender', '0020_evm_disperse', '0014_solana', '0024_utxo'];
  for (const f of families) {
    for (const name of Object.keys(f.migrations ?? {})) {
      assert.ok(
        released.includes(name) || new RegExp(`^${f.name}/\\d{4}_[a-z0-9_]+$`).test(name),
        `${name}: a new migration of ${f.name} is named ${f.name}/NNNN_<what>`,
      );
    }
  }
  for (const f of families) {
    assert.equal(typeof f.format.isValidAddress, 'function', f.name);
    for (const c of f.commands ?? [])
      assert.ok(c.name.startsWith(`${f.name} `), `${c.name} is under its family's name`);
  }
});

test('an explicit hot-wallet key is checked against the formats the families declare', async () => {
  const families = await installedFamilies();
  checkHotWalletKey(null, families);
  checkHotWalletKey(`0x${'ab'.repeat(32)}`, families);
  const refused = (key: string, list = families) => assert.throws(() => checkHotWalletKey(key, list), ConfigError);
  refused('ab'.repeat(32));
  assert.throws(() => checkHotWalletKey('0x12', families), {
    message: 'KASSE_HOT_WALLET_KEY must be 0x + 64 hex characters',
  });
  assert.throws(
    () =>
      checkHotWalletKey(
        `0x${'ab'.repeat(32)}`,
        families.filter((f) => !f.hotWalletKey),
      ),
    /no installed chain family takes an explicit hot-wallet key/,
  );
  refused(`0x${'ab'.repeat(32)}`, []);
});

test('nothing under src/chains imports src/modules, src/web or the container', () => {
  const offending: string[] = [];
  for (const file of files(join(SRC, 'chains'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
      const spec = m[1]!;
      if (!spec.startsWith('.')) continue;
      const target = relative(SRC, resolve(dirname(file), spec));
      if (/^(modules|web|http|cli|workers)\//.test(target) || target === 'kasse.ts')
        offending.push(`${relative(SRC, file)} → ${target}`);
    }
  }
  assert.deepEqual(offending, []);
});

/**
 * Each family's specifics (libraries, wallet APIs, token standards, address shapes, units) appear in code only under
 * its own folder.
 * The reference's example answers (http/examples.ts, http/subscription-examples.ts) are data a reader sees, and show a
 * real payment URI and addresses.
 */
const FAMILY_WORDS: Array<[family: string, words: RegExp]> = [
  ['evm', /viem|ethereum|eip-?3009|eip-?712|evm|erc-?20|0x[0-9a-f]{40}\b/i],
  [
    'solana',
    /@solana\/|@solana-program\/|litesvm|window\.solana|wallet-standard|lamports?\b|solana_|solana[A-Z]|Solana[A-Z]|\bspl\b|\bSPL\b/,
  ],
  ['utxo', /btc-signer|@scure\/bip32|bitcoin|litecoin|bech32|bip-?21|bip-?84|satoshi|\brbf\b/i],
];
for (const [family, words] of FAMILY_WORDS) {
  test(`${family} specifics live only under src/chains/${family}`, () => {
    const offending: string[] = [];
    for (const file of files(SRC)) {
      const path = relative(SRC, file);
      if (path.startsWith(join('chains', family)) || /^http[/\\]([a-z]+-)?examples\.ts$/.test(path)) continue;
      code(readFileSync(file, 'utf8'))
        .split('\n')
        .forEach((line, i) => {
          if (words.test(line)) offending.push(`${path}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(offending, []);
  });
}
