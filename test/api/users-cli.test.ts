/**
 * The operator's `kasse user …` and `kasse mail …` commands against the same database as the server: a one-time
 * set-up link printed as one JSON object (24 hours, single use), the list of users, and stored mail.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { english, generateMnemonic } from 'viem/accounts';
import { createTestDatabase } from '../harness/db.ts';
import { KASSE_HOME } from '../../src/config.ts';
import { CLI } from '../harness/commands.ts';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let env: Record<string, string>;
let dataDir: string;

function kasse(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd: KASSE_HOME,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

before(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'kasse-cli-users-'));
  // Commands use the server's secrets and make none of their own: these stand for the server's.
  env = {
    DATABASE_URL: db.url,
    KASSE_DATA_DIR: dataDir,
    KASSE_CHECKOUT_URL: 'https://pay.shop.example',
    KASSE_SECRET_KEY: 'cd'.repeat(32),
    KASSE_MASTER_SEED: generateMnemonic(english),
  };
});
after(async () => {
  rmSync(dataDir, { recursive: true, force: true });
  await db?.drop();
});

test('kasse user create --json prints one JSON object with a one-time set-up link', async () => {
  const m = await kasse(['merchant', 'create', '--name', 'Corner Shop', '--json']);
  assert.equal(m.code, 0, m.stderr);
  const merchant = JSON.parse(m.stdout).merchant_id as string;
  const res = await kasse([
    'user',
    'create',
    '--merchant',
    merchant,
    '--email',
    'Owner@Shop.example',
    '--role',
    'owner',
    '--json',
  ]);
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stdout.trim().split('\n').length, 1);
  const out = JSON.parse(res.stdout);
  assert.match(out.user_id, /^usr_[0-9A-Z]{26}$/);
  assert.equal(out.merchant_id, merchant);
  assert.equal(out.email, 'owner@shop.example');
  assert.equal(out.role, 'owner');
  assert.match(out.setup_url, /^https:\/\/pay\.shop\.example\/dashboard\/setup\/[A-Za-z0-9_-]{43}$/);
  const hours = (Date.parse(out.expires_at) - Date.now()) / 3_600_000;
  assert.ok(hours > 23.9 && hours <= 24, `expires in ${hours} h`);
  // Bad input: a clear message, exit 2, nothing on stdout.
  // (Each run starts a process; two cases stand for the rest, which the service's tests cover.)
  for (const args of [
    ['--merchant', merchant, '--email', 'owner@shop.example', '--role', 'owner'],
    ['--merchant', merchant, '--email', 'x@shop.example', '--role', 'admin'],
  ]) {
    const bad = await kasse(['user', 'create', ...args, '--json']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /^kasse: /);
  }
  const list = JSON.parse((await kasse(['user', 'list', '--merchant', merchant, '--json'])).stdout);
  assert.deepEqual(
    list.data.map((u: { email: string; status: string }) => [u.email, u.status]),
    [['owner@shop.example', 'invited']],
  );
  const again = JSON.parse((await kasse(['user', 'setup-link', '--email', 'owner@shop.example', '--json'])).stdout);
  assert.notEqual(again.setup_url, out.setup_url);
});

test('kasse user create --help and kasse help user create print the usage and exit 0, without touching the database', async () => {
  for (const args of [
    ['user', 'create', '--help'],
    ['help', 'user', 'create'],
    ['user', 'create', '--merchant', 'mer_X', '-h'],
  ]) {
    const res = await kasse(args);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /^usage: kasse user create --merchant ID --email EMAIL --role owner\|member\|viewer/);
    assert.equal(res.stderr, '');
  }
  const users = JSON.parse((await kasse(['user', 'list', '--merchant', 'mer_X', '--json'])).stdout);
  assert.deepEqual(users.data, []);
});
