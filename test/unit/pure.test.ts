/**
 * test/unit/ holds only pure tests: `npm run test:unit` runs them with no PostgreSQL, chain node or browser, so a
 * file here that reaches for one belongs in test/db/, test/api/ or a chain's folder instead.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KASSE_HOME } from '../../src/config.ts';

const HERE = join(KASSE_HOME, 'test', 'unit');

/** What a file may not import: a database, the whole app, a chain node or Chromium. */
const INFRASTRUCTURE = [
  /^pg$/,
  /^playwright-core$/,
  /^\.\.\/harness\/(app|db|browser|dashboard|statements|subscription-worker|hardhat|evm-kasse|solana|solana-\w+|litecoind|utxo-kasse)\.ts$/,
];

test('no unit test imports a database, the app, a chain node or a browser', () => {
  const files = readdirSync(HERE).filter((f) => f.endsWith('.test.ts'));
  assert.ok(files.length > 10, `found ${files.length} files`);
  const offending = files.flatMap((f) =>
    [...readFileSync(join(HERE, f), 'utf8').matchAll(/\bfrom '([^']+)'/g)]
      .map((m) => m[1]!)
      .filter((spec) => INFRASTRUCTURE.some((re) => re.test(spec)))
      .map((spec) => `${f} imports ${spec}`),
  );
  assert.deepEqual(offending, []);
});
