/**
 * The operator contract: `npm start` on the embedded PostgreSQL prints its three URLs, the `kasse` CLI works against
 * the same database whether or not the server runs, data survives a restart, and a stop signal to `npm start`'s own
 * process, or to the command the README gives service managers, leaves no process of Kasse or its PostgreSQL behind
 * (nor does npm killed outright). The cases about the commands themselves run the operator's exact ones
 * (test/harness/commands.ts).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { english, generateMnemonic } from 'viem/accounts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { createTestDatabase } from '../harness/db.ts';
import { eventually } from '../harness/expect.ts';
import { KASSE_HOME } from '../../src/config.ts';
import { CLI, OPERATOR_CLI, SERVER } from '../harness/commands.ts';

function run(
  args: string[],
  env: Record<string, string>,
  cwd = KASSE_HOME,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd,
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

/** The CLI (`cli`: `CLI`, or `OPERATOR_CLI` for bin/kasse.js itself) run in `cwd`. */
const kasse = (args: string[], env: Record<string, string>, opts: { cwd?: string; cli?: string[] } = {}) =>
  run([...(opts.cli ?? CLI), ...args], env, opts.cwd);

/** The environment a service manager gives: this one without the variables npm sets for the scripts it runs. */
const managerEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

/**
 * Starts the server (`command`: `SERVER` or another command line, run by `program`: this Node, or `npm` for
 * `NPM_START`) and resolves once the three URL lines are printed; `output()` is its stdout so far.
 */
function start(
  env: Record<string, string>,
  opts: { detached?: boolean; command?: string[]; program?: string } = {},
): Promise<{ child: ChildProcess; urls: Record<string, string>; exited: Promise<number>; output: () => string }> {
  return new Promise((resolve, reject) => {
    // detached: in a process group of its own (with the embedded PostgreSQL it starts), for the group to be killed.
    const child = spawn(opts.program ?? process.execPath, opts.command ?? SERVER, {
      cwd: KASSE_HOME,
      env: { ...managerEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: opts.detached === true,
    });
    const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? 1)));
    let out = '';
    const urls: Record<string, string> = {};
    child.stdout!.on('data', (d) => {
      out += d;
      for (const m of out.matchAll(/^(live api|test api|checkout): (\S+)$/gm)) urls[m[1]!] = m[2]!;
      if (Object.keys(urls).length === 3) resolve({ child, urls, exited, output: () => out });
    });
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    void exited.then((code) => reject(new Error(`exited ${code} before printing URLs: ${err}`)));
  });
}

/** `npm start` itself, as an operator types it in the Kasse directory. */
const NPM_START = { program: 'npm', command: ['start'] };

/** Every process now: pid → parent, start time (since boot, which tells a reused pid apart), name, command line. */
function processTable(): Map<number, { ppid: number; started: string; name: string; cmdline: string }> {
  const table = new Map<number, { ppid: number; started: string; name: string; cmdline: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "<pid> (<name>) <state> <ppid> …": the name may hold spaces and parentheses; the 22nd field is the start time.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z') continue;
      table.set(Number(entry), {
        ppid: Number(rest[1]),
        started: rest[19]!,
        name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        cmdline: readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' '),
      });
    } catch {
      // gone meanwhile
    }
  }
  return table;
}

type Running = { pid: number; started: string; name: string };

/** The Node and PostgreSQL processes of `root` and under it (Kasse, its embedded server and the server's processes). */
function kasseProcesses(root: number): Running[] {
  const table = processTable();
  const found: Running[] = [];
  const visit = (pid: number) => {
    const p = table.get(pid);
    if (p && (p.name === 'node' || p.cmdline.startsWith('postgres') || p.cmdline.includes('/bin/postgres')))
      found.push({ pid, started: p.started, name: p.name });
    for (const [child, c] of table) if (c.ppid === pid) visit(child);
  };
  visit(root);
  seen.push(...found);
  return found;
}

/** Every process `kasseProcesses` found: what a failing case left running is killed after the file. */
const seen: Running[] = [];

/** Those of `procs` still running (the same pid started at the same time, not a zombie). */
function stillRunning(procs: Running[]): Running[] {
  const table = processTable();
  return procs.filter((p) => table.get(p.pid)?.started === p.started);
}

/** Processes anywhere whose command line names the data directory's cluster (`postgres -D <dir>/pg`). */
function clusterProcesses(dataDir: string): number[] {
  const dir = join(dataDir, 'pg');
  return [...processTable()].filter(([, p]) => p.cmdline.includes(` -D ${dir} `)).map(([pid]) => pid);
}

/** Kasse's log lines (the JSON lines of the server's stdout), those with `msg` when given. */
const logLines = (output: string, msg?: string) =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => msg === undefined || l.msg === msg);

/** The node command line (after the program) of the README's systemd unit and of its container command. */
function documentedCommands(): { systemd: string[]; container: string[] } {
  const readme = readFileSync(join(KASSE_HOME, 'README.md'), 'utf8');
  const execStart = /^ExecStart=(.*)$/m.exec(readme)![1]!.split(' ');
  const docker = /^docker run ([\s\S]*?)\n```/m
    .exec(readme)![1]!
    .replace(/\\\n\s*/g, ' ')
    .split(' ');
  assert.equal(execStart[0], '/usr/bin/node');
  return { systemd: execStart.slice(1), container: docker.slice(docker.lastIndexOf('node') + 1) };
}

const dirs: string[] = [];
after(() => {
  for (const p of stillRunning(seen)) process.kill(p.pid, 'SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// The cases share nothing (each its own data directory or database). They run one at a time: their time is the CPU
// of the processes they start, and the runner already runs another file beside this one on the suite's two cores.
describe('the operator contract', () => {
  test('kasse merchant create --json prints exactly one JSON object with the keys', async () => {
    const db = await createTestDatabase();
    try {
      const dataDir = mkdtempSync(join(tmpdir(), 'kasse-cli-'));
      dirs.push(dataDir);
      const env = {
        DATABASE_URL: db.url,
        KASSE_DATA_DIR: dataDir,
        KASSE_SECRET_KEY: 'ab'.repeat(32),
        KASSE_MASTER_SEED: generateMnemonic(english),
      };
      const res = await kasse(
        ['merchant', 'create', '--name', 'Corner Shop', '--webhook-url', 'https://shop.example/hook', '--json'],
        env,
        { cli: OPERATOR_CLI },
      );
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

  test('npm start on the embedded PostgreSQL: URLs, a line per mode, CLI beside the server from any directory, restart keeps data, clean shutdown', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kasse-start-'));
    dirs.push(dataDir);
    // Commands run from another directory, with the data directory given relative as beside `npm start` (which runs in
    // the Kasse directory): they must find the server's database, not one of their own.
    const elsewhere = mkdtempSync(join(tmpdir(), 'kasse-elsewhere-'));
    dirs.push(elsewhere);
    const env = {
      KASSE_DATA_DIR: relative(KASSE_HOME, dataDir),
      KASSE_LIVE_PORT: '0',
      KASSE_TEST_PORT: '0',
      KASSE_CHECKOUT_PORT: '0',
      DATABASE_URL: '',
    };

    // Before the server ever ran there: a refusal naming the directory, and nothing created anywhere.
    const refused = await kasse(['merchant', 'list', '--json'], env, { cwd: elsewhere, cli: OPERATOR_CLI });
    assert.equal(refused.code, 2);
    assert.equal(refused.stdout, '');
    assert.ok(refused.stderr.includes(`no Kasse database in ${dataDir}.`), refused.stderr);
    assert.match(refused.stderr, /KASSE_DATA_DIR/);
    assert.deepEqual(readdirSync(dataDir), []);

    const first = await start({ ...env, NPM_CONFIG_UPDATE_NOTIFIER: 'false' }, NPM_START);
    assert.match(first.urls['live api']!, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    assert.match(first.urls['test api']!, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    assert.match(first.urls.checkout!, /^http:\/\/127\.0\.0\.1:\d+$/);
    const created = await kasse(['merchant', 'create', '--name', 'Beside', '--json'], env, {
      cwd: elsewhere,
      cli: OPERATOR_CLI,
    });
    assert.equal(created.code, 0, created.stderr);
    const { test_key } = JSON.parse(created.stdout);
    const account = await fetch(`${first.urls['test api']}/account`, {
      headers: { authorization: `Bearer ${test_key}` },
    });
    assert.equal(account.status, 200);
    // One line per mode says which networks run and what the others are missing.
    const logged = () => logLines(first.output());
    await eventually('the test mode line', () => logged().some((l) => /^test mode:/.test(l.msg)));
    const lines = logged();
    const live = lines.filter((l) => /^live mode:/.test(l.msg));
    const testMode = lines.filter((l) => /^test mode:/.test(l.msg));
    assert.equal(live.length, 1);
    assert.equal(testMode.length, 1);
    assert.equal(live[0].level, 40, 'a live mode that cannot take payments is a warning');
    assert.match(
      live[0].msg,
      /^live mode: no network can take payments; paused: ethereum, base, polygon, arbitrum, solana, bitcoin, litecoin\. Why: ethereum, base, polygon, arbitrum: no forwarder factory configured/,
    );
    assert.match(live[0].msg, /Going live/);
    assert.equal(live[0].mode, 'live');
    assert.match(testMode[0].msg, /^test mode: simulator only/);
    // SIGTERM to npm's own process, as a service manager running `npm start` sends it: when npm has exited, Kasse and
    // every process of its PostgreSQL have stopped, in order.
    const pidFile = join(dataDir, 'pg', 'postmaster.pid');
    const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    const tree = kasseProcesses(first.child.pid!);
    assert.ok(tree.some((p) => p.name === 'node') && tree.some((p) => p.pid === postmaster), JSON.stringify(tree));
    const signalled = Date.now();
    first.child.kill('SIGTERM');
    const code = await first.exited;
    t.diagnostic(`npm start stopped ${Date.now() - signalled} ms after SIGTERM to npm`);
    assert.deepEqual(stillRunning(tree), [], 'no process of that start is left');
    assert.deepEqual(clusterProcesses(dataDir), [], 'no PostgreSQL of that data directory is left');
    assert.ok(!existsSync(pidFile), 'embedded PostgreSQL stopped');
    assert.equal(code, 0);
    assert.equal(logLines(first.output(), 'shutting down')[0]?.signal, 'SIGTERM');
    assert.equal(logLines(first.output(), 'stopped')[0]?.code, 0);

    // The CLI starts the embedded server itself when Kasse is not running; merchants print in the API's snake_case.
    const listed = await kasse(['merchant', 'list', '--json'], env, { cwd: elsewhere, cli: OPERATOR_CLI });
    assert.equal(listed.code, 0, listed.stderr);
    const merchants = JSON.parse(listed.stdout);
    assert.equal(merchants[0].name, 'Beside');
    assert.deepEqual(Object.keys(merchants[0]), [
      'id',
      'name',
      'webhook_url_test',
      'webhook_url_live',
      'rate_limit_per_minute',
      'x402_rate_limit_per_minute',
      'fee_bps',
      'created_at',
    ]);
    assert.deepEqual(readdirSync(elsewhere), [], 'nothing was created where the commands ran');

    // Started again on the same data directory by the command the README gives systemd and containers: the data is
    // there, and SIGINT stops it as cleanly.
    const documented = documentedCommands();
    assert.deepEqual(documented.container, documented.systemd);
    const second = await start(env, { command: documented.systemd });
    const again = await fetch(`${second.urls['test api']}/account`, {
      headers: { authorization: `Bearer ${test_key}` },
    });
    assert.equal(again.status, 200);
    const secondTree = kasseProcesses(second.child.pid!);
    const interrupted = Date.now();
    second.child.kill('SIGINT');
    assert.equal(await second.exited, 0);
    t.diagnostic(`the service command stopped ${Date.now() - interrupted} ms after SIGINT`);
    assert.ok(secondTree.some((p) => p.pid === second.child.pid));
    assert.deepEqual(stillRunning(secondTree), []);
    assert.deepEqual(clusterProcesses(dataDir), []);
    assert.ok(!existsSync(pidFile));

    // npm killed outright passes nothing on: Kasse, left with another parent, stops by itself. A client holds a
    // connection open that never sends a request (as a browser's preconnect does), which the listeners' close waits
    // for: after KASSE_STOP_TIMEOUT_MS Kasse stops at once, its PostgreSQL stopped all the same.
    const third = await start(
      { ...env, NPM_CONFIG_UPDATE_NOTIFIER: 'false', KASSE_STOP_TIMEOUT_MS: '1000' },
      NPM_START,
    );
    const idle = connect(Number(new URL(third.urls.checkout!).port), '127.0.0.1');
    idle.on('error', () => {});
    await once(idle, 'connect');
    const thirdTree = kasseProcesses(third.child.pid!);
    const killed = Date.now();
    third.child.kill('SIGKILL');
    await third.exited;
    // Within Kasse's bounded stop: the watch's half second, the roles' 1 s here, the database's 9 s at most.
    await eventually('Kasse to stop once npm is gone', () => stillRunning(thirdTree).length === 0, {
      timeoutMs: 20_000,
    });
    t.diagnostic(`Kasse and PostgreSQL gone ${Date.now() - killed} ms after npm was killed (stop timeout 1000 ms)`);
    idle.destroy();
    assert.deepEqual(clusterProcesses(dataDir), []);
    assert.ok(!existsSync(pidFile));
    assert.equal(logLines(third.output(), 'shutting down')[0]?.signal, 'parent exited');
    assert.equal(logLines(third.output(), 'stopping at once')[0]?.why, 'not stopped within 1000 ms');
    assert.equal(logLines(third.output(), 'stopped')[0]?.code, 1);
  });

  test("the CLI makes no secrets of its own: without the server's it refuses, naming where it looked", async () => {
    const db = await createTestDatabase();
    try {
      const dataDir = mkdtempSync(join(tmpdir(), 'kasse-nosecrets-'));
      dirs.push(dataDir);
      const res = await kasse(['merchant', 'list', '--json'], { DATABASE_URL: db.url, KASSE_DATA_DIR: dataDir });
      assert.equal(res.code, 2);
      assert.equal(res.stdout, '');
      assert.match(res.stderr, new RegExp(`no secrets at ${join(dataDir, 'secrets.json')}`));
      assert.deepEqual(readdirSync(dataDir), []);
    } finally {
      await db.drop();
    }
  });

  /** A small seeded generator (mulberry32): the same "random" kill moments on every run. */
  function seeded(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  test('a crash of the whole process group at random moments, restarted at once ten times: every start comes up, nothing is lost', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'kasse-crash-'));
    dirs.push(dataDir);
    const env = {
      KASSE_DATA_DIR: dataDir,
      KASSE_LIVE_PORT: '0',
      KASSE_TEST_PORT: '0',
      KASSE_CHECKOUT_PORT: '0',
      DATABASE_URL: '',
      KASSE_LOG_LEVEL: 'warn',
      // Every round reads back every payment kept so far: more requests a minute than the default limit allows.
      KASSE_RATE_LIMIT: '100000',
    };
    let running = await start(env, { detached: true });
    try {
      const created = await kasse(['merchant', 'create', '--name', 'Crashes', '--json'], env);
      assert.equal(created.code, 0, created.stderr);
      const auth = { authorization: `Bearer ${JSON.parse(created.stdout).test_key}` };
      const pay = (base: string, cents: number) =>
        fetch(`${base}/payments`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ price_amount: cents, price_currency: 'USD', order_id: `crash-${cents}` }),
        });
      const random = seeded(33);
      const kept: string[] = [];
      for (let round = 1; round <= 10; round++) {
        const base = running.urls['test api']!;
        // A payment answered before the kill must be there after it; another is on its way when the kill comes.
        const answered = await pay(base, 1000 + round);
        assert.equal(answered.status, 201);
        kept.push(((await answered.json()) as { id: string }).id);
        void pay(base, 5000 + round).catch(() => {});
        await new Promise((r) => setTimeout(r, Math.floor(random() * 400)));
        process.kill(-running.child.pid!, 'SIGKILL');
        await running.exited;

        running = await start(env, { detached: true });
        const root = running.urls['test api']!.replace(/\/v1$/, '');
        const ready = await fetch(`${root}/readyz`);
        assert.equal(ready.status, 200, `round ${round}: /readyz after the restart`);
        for (const id of kept) {
          const got = await fetch(`${running.urls['test api']}/payments/${id}`, { headers: auth });
          assert.equal(got.status, 200, `round ${round}: payment ${id} after the restart`);
        }
      }
      running.child.kill('SIGTERM');
      assert.equal(await running.exited, 0);
    } finally {
      try {
        process.kill(-running.child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  const alive = (pid: number) => existsSync(`/proc/${pid}`);

  /**
   * An embedded PostgreSQL with a row in it, killed with SIGKILL: its `postmaster.pid` (and the port in it) stays behind,
   * as after a crash of Kasse's process group.
   */
  async function crashedCluster(): Promise<{ dataDir: string; pidFile: string; port: number }> {
    const dataDir = mkdtempSync(join(tmpdir(), 'kasse-pg-crash-'));
    dirs.push(dataDir);
    const first = await startEmbedded(dataDir);
    const client = new pg.Client({ connectionString: first.url });
    await client.connect();
    await client.query("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the crash')");
    await client.end();
    const pidFile = join(dataDir, 'pg', 'postmaster.pid');
    const [pid, , , port] = readFileSync(pidFile, 'utf8').split('\n');
    process.kill(Number(pid), 'SIGKILL');
    await eventually('the killed postmaster to be gone', () => !alive(Number(pid)), { timeoutMs: 10_000 });
    return { dataDir, pidFile, port: Number(port) };
  }

  /** Names process `pid` in the left-behind `postmaster.pid`, as a pid that is a zombie or was reused would be. */
  function namePid(pidFile: string, pid: number): void {
    const lines = readFileSync(pidFile, 'utf8').split('\n');
    lines[0] = String(pid);
    writeFileSync(pidFile, lines.join('\n'));
  }

  async function keptRow(url: string): Promise<string> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query('SELECT v FROM kept')).rows[0].v;
    } finally {
      await client.end();
    }
  }

  test('the embedded PostgreSQL after a crash whose postmaster is a zombie not yet reaped: waited for, then started again', async () => {
    const { dataDir, pidFile, port } = await crashedCluster();
    // A zombie: the background `sleep` exits after its parent (`sh`, become `sleep 3`) stopped reaping; it stays a zombie
    // until its parent ends.
    const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 3'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const zombie = await new Promise<number>((resolve) =>
      parent.stdout!.once('data', (d) => resolve(Number(String(d).trim()))),
    );
    await eventually('the zombie', () => readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z'));
    namePid(pidFile, zombie);

    const again = await startEmbedded(dataDir);
    try {
      assert.ok(!alive(zombie), 'started only once the old postmaster was gone');
      assert.notEqual(new URL(again.url).port, String(port), 'a new server, not the dead port');
      assert.equal(await keptRow(again.url), 'before the crash');
    } finally {
      await again.stop();
    }
  });

  test('the embedded PostgreSQL after a crash whose pid another process took: started again, that process untouched', async () => {
    const { dataDir, pidFile } = await crashedCluster();
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      namePid(pidFile, other.pid!);
      const again = await startEmbedded(dataDir);
      try {
        assert.equal(await keptRow(again.url), 'before the crash');
        assert.ok(alive(other.pid!));
      } finally {
        await again.stop();
      }
    } finally {
      other.kill('SIGKILL');
    }
  });
});
