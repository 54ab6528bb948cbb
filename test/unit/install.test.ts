/**
 * A fresh `npm install` on the Node version the project states must print no EBADENGINE warning: every package in
 * the lockfile (dependencies of dependencies included) must accept the oldest Node that package.json's `engines`
 * allows, and the one running the tests.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import semver from 'semver';
import { KASSE_HOME } from '../../src/config.ts';

const json = (file: string) => JSON.parse(readFileSync(join(KASSE_HOME, file), 'utf8'));

test('every locked package runs on the Node versions the project states', () => {
  const pkg = json('package.json');
  const floor = semver.minVersion(pkg.engines.node)!.version;
  assert.equal(semver.major(floor), 20, 'the README states Node.js 20');
  const lock = json('package-lock.json') as { packages: Record<string, { engines?: unknown; version?: string }> };
  const refusing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    const range = (entry.engines as { node?: unknown } | undefined)?.node;
    if (typeof range !== 'string' || path === '') continue;
    for (const node of [floor, process.versions.node]) {
      if (!semver.satisfies(node, range)) refusing.push(`${path}@${entry.version} wants node ${range} (not ${node})`);
    }
  }
  assert.deepEqual(refusing, []);
  assert.match(readFileSync(join(KASSE_HOME, 'README.md'), 'utf8'), /Node\.js 20/);
});
