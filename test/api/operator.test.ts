/**
 * The operator contract: `npm start` on the embedded PostgreSQL prints its three URLs, the `kasse` CLI works against
 * the same database whether or not the server runs, data survives a restart, and SIGTERM shuts down cleanly.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createTestDatabase } from '../harness/db.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

const kasse = (args: string[], env: Record<string, string>) => run(['bin/kasse.js', ...args], env);

/** Starts `src/main.ts` and resolves once the three URL lines are printed. */
function start(env: Record<string, string>): Promise<{ child: ChildProcess; urls: Record<string, string>; exited: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? 1)));
    let out = '';
    const urls: Record<string, string> = {};
    child.stdout!.on('data', (d) => {
      out += d;
      for (const m of out.matchAll(/^(live api|test api|checkout): (\S+)$/gm)) urls[m[1]!] = m[2]!;
      if (Object.keys(urls).length === 3) resolve({ child, urls, exited });
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    void exited.then((code) => reject(new Error(`exited ${code} before printing URLs: ${err}`)));
  });
}

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('kasse merchant create --json prints exactly one JSON object with the keys', async () => {
  const db = await createTestDatabase();
  try {
    const dataDir = mkdtempSync(join(tmpdir(), 'kasse-cli-'));
    dirs.push(dataDir);
    const env = { DATABASE_URL: db.url, KASSE_DATA_DIR: dataDir };
    const res = await kasse(['merchant', 'create', '--name', 'Corner Shop', '--webhook-url', 'https://shop.example/hook', '--json'], env);
    assert.equal(res.code, 0, res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const out = JSON.parse(lines[0]!);
    assert.deepEqual(Object.keys(out).sort(), ['live_key', 'merchant_id', 'test_key', 'webhook_secret']);
    assert.match(out.merchant_id, /^mer_[0-9A-Z]{26}$/);
    assert.match(out.test_key, /^kasse_test_/);
    assert.match(out.live_key, /^kasse_live_/);
    assert.match(out.webhook_secret, /^whsec_/);

    const bad = await kasse(['merchant', 'create', '--json'], env);
    assert.equal(bad.code, 2);
    assert.equal(bad.stdout, '');
    assert.match(bad.stderr, /--name is required/);

    const revoke = await kasse(['key', 'revoke', out.test_key, '--json'], env);
    assert.equal(revoke.code, 0, revoke.stderr);
    const again = await kasse(['key', 'revoke', out.test_key], env);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /No such active API key/);
  } finally {
    await db.drop();
  }
});

test('npm start on the embedded PostgreSQL: URLs, CLI beside the server, restart keeps data, clean shutdown', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kasse-start-'));
  dirs.push(dataDir);
  const env = { KASSE_DATA_DIR: dataDir, KASSE_LIVE_PORT: '0', KASSE_TEST_PORT: '0', KASSE_CHECKOUT_PORT: '0', DATABASE_URL: '' };

  const first = await start(env);
  assert.match(first.urls['live api']!, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  assert.match(first.urls['test api']!, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  assert.match(first.urls['checkout']!, /^http:\/\/127\.0\.0\.1:\d+$/);
  const created = await kasse(['merchant', 'create', '--name', 'Beside', '--json'], env);
  assert.equal(created.code, 0, created.stderr);
  const { test_key } = JSON.parse(created.stdout);
  const account = await fetch(`${first.urls['test api']}/account`, { headers: { authorization: `Bearer ${test_key}` } });
  assert.equal(account.status, 200);
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.ok(!existsSync(join(dataDir, 'pg', 'postmaster.pid')), 'embedded PostgreSQL stopped');

  // The CLI starts the embedded server itself when Kasse is not running.
  const listed = await kasse(['merchant', 'list', '--json'], env);
  assert.equal(listed.code, 0, listed.stderr);
  assert.equal(JSON.parse(listed.stdout)[0].name, 'Beside');

  const second = await start(env);
  const again = await fetch(`${second.urls['test api']}/account`, { headers: { authorization: `Bearer ${test_key}` } });
  assert.equal(again.status, 200);
  second.child.kill('SIGINT');
  assert.equal(await second.exited, 0);
});
