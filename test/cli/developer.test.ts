/**
 * The developer commands as a merchant's developer runs them: `kasse listen` and `kasse trigger` as separate
 * processes against a running Kasse's test API by URL and key, with no database or server configuration in their
 * environment. A local receiver verifies every forwarded event with the secret `listen` printed, across restarts
 * and a dropped connection; `trigger` fires each event it knows, which arrives both as a real webhook and through
 * `listen`.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { Kasse, type KasseEvent } from '../../sdk/src/index.ts';
import { startWorkers, type Workers } from '../../src/workers/index.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';
import { KASSE_HOME } from '../../src/config.ts';
import { CLI } from '../harness/commands.ts';

/** Where the CLI would put an embedded database if it opened one: it must never appear. */
const NO_DATA_DIR = join(tmpdir(), `kasse-developer-no-data-${process.pid}`);

/** A developer's environment: the API's URL and key, nothing of the server's. */
function env(key: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('KASSE_') && k !== 'DATABASE_URL'),
  );
  return { ...clean, KASSE_API_URL: t.urls.test, KASSE_API_KEY: key, KASSE_DATA_DIR: NO_DATA_DIR, ...extra };
}

function kasse(
  args: string[],
  environment: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd: KASSE_HOME,
      env: environment,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

interface Listener {
  child: ChildProcess;
  secret: string;
  /** Lines printed so far. */
  lines: string[];
  /** Resolves with the first line (from `from`) matching `re`. */
  line(re: RegExp, from?: number): Promise<string>;
  stop(): Promise<number>;
}

/** Starts `kasse listen` and resolves once it is connected. */
async function listen(args: string[], environment: NodeJS.ProcessEnv): Promise<Listener> {
  const child = spawn(process.execPath, [...CLI, 'listen', ...args], {
    cwd: KASSE_HOME,
    env: environment,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let waiters: Array<() => void> = [];
  let buffer = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  child.stdout!.on('data', (d) => {
    buffer += d;
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    lines.push(...parts);
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  });
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  const line = (re: RegExp, from = 0) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no line matching ${re} in:\n${lines.join('\n')}\n${stderr}`)),
        30_000,
      );
      const check = () => {
        const found = lines.slice(from).find((l) => re.test(l));
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else waiters.push(check);
      };
      check();
      void exited.then(() => setTimeout(check, 10));
    });
  const secret = /(whsec_\S+)/.exec(await line(/signing secret is whsec_/))![1]!;
  await line(/^Ready\./);
  return {
    child,
    secret,
    lines,
    line,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

interface LocalReceiver {
  url: string;
  events: Array<{ event: KasseEvent; headers: IncomingHttpHeaders }>;
  /** Requests whose signature did not verify. */
  rejected: string[];
  secret: string;
  status: number;
  next(n: number): Promise<KasseEvent[]>;
  close(): Promise<void>;
}

/** The developer's local endpoint: verifies each request with the listen secret, as their server would. */
async function localReceiver(): Promise<LocalReceiver> {
  let taken = 0;
  let wake = () => {};
  const r: LocalReceiver = {
    url: '',
    events: [],
    rejected: [],
    secret: '',
    status: 200,
    next(n) {
      const want = (taken += n);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`expected ${want} forwarded events, got ${r.events.length}`)),
          30_000,
        );
        const check = () => {
          if (r.events.length < want) return void (wake = check);
          clearTimeout(timer);
          resolve(r.events.slice(want - n, want).map((e) => e.event));
        };
        check();
      });
    },
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => {
        try {
          const event = Kasse.webhooks.constructEvent(
            Buffer.concat(chunks),
            req.headers['service-signature'],
            r.secret,
          );
          r.events.push({ event, headers: req.headers });
          res.writeHead(r.status).end();
          wake();
        } catch (err) {
          r.rejected.push((err as Error).message);
          res.writeHead(400).end();
        }
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  r.close = () => new Promise((resolve) => server.close(() => resolve()));
  return r;
}

let t: TestKasse;
let m: TestMerchant;
let webhooks: WebhookReceiver;
let local: LocalReceiver;

before(async () => {
  t = await startTestKasse();
  webhooks = await startWebhookReceiver({ now: () => t.clock.now() });
  m = await t.merchant({ name: 'Dev Shop', webhookUrl: webhooks.url, rateLimit: 10_000 });
  webhooks.setSecret(m.webhookSecret);
  local = await localReceiver();
});
after(async () => {
  await t.close();
  await webhooks.close();
  await local.close();
  assert.ok(!existsSync(NO_DATA_DIR), 'no developer command opened a database');
});

const newPayment = async (orderId: string) =>
  (await m.test.post('/payments', { price_amount: 2500, price_currency: 'USD', order_id: orderId })).body;

describe('kasse --help', () => {
  test('tells developer commands from operator commands', async () => {
    const res = await kasse(['--help'], env(m.testKey));
    assert.equal(res.code, 0, res.stderr);
    const dev = res.stdout.indexOf('Developer commands');
    const op = res.stdout.indexOf('Operator commands');
    assert.ok(dev >= 0 && op > dev, res.stdout);
    const developerPart = res.stdout.slice(dev, op);
    const operatorPart = res.stdout.slice(op);
    assert.match(developerPart, /kasse listen --forward-to URL/);
    assert.match(developerPart, /kasse trigger EVENT/);
    assert.match(developerPart, /--api-url URL .*--api-key/);
    assert.match(operatorPart, /kasse merchant create/);
    assert.doesNotMatch(operatorPart, /kasse (listen|trigger)/);
  });

  test('kasse listen --help and kasse trigger --help print their usage and exit 0, with no key given', async () => {
    const noKey = Object.fromEntries(Object.entries(env(m.testKey)).filter(([k]) => k !== 'KASSE_API_KEY'));
    for (const [args, usage] of [
      [['listen', '--help'], /^usage: kasse listen --forward-to URL/],
      [['trigger', '--help'], /^usage: kasse trigger EVENT/],
      [['help', 'listen'], /^usage: kasse listen --forward-to URL/],
    ] as const) {
      const res = await kasse([...args], noKey);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, usage);
      assert.match(res.stdout, /--api-key kasse_test_/);
      assert.equal(res.stderr, '');
    }
  });
});

describe('kasse listen', () => {
  test('forwards test events as they happen, signed with the printed secret, one line each with the local answer', async () => {
    const l = await listen(['--forward-to', local.url], env(m.testKey));
    try {
      local.secret = l.secret;
      assert.match(l.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
      assert.notEqual(l.secret, m.webhookSecret, 'not the account’s webhook secret');
      assert.ok(l.lines.some((x) => x.includes(`Dev Shop (${m.id})`)));
      const p = await newPayment('listen-1');
      await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' });
      const [paid] = await local.next(1);
      assert.equal(paid!.type, 'payment.paid');
      assert.equal(paid!.data.id, p.id);
      const forwarded = local.events.at(-1)!.headers;
      assert.equal(forwarded['service-event-id'], paid!.id);
      assert.equal(forwarded['service-event-type'], 'payment.paid');
      assert.equal(forwarded['content-type'], 'application/json');
      assert.match(await l.line(new RegExp(`payment\\.paid\\s+${paid!.id}\\s+${p.id}\\s+→ 200`)), /ms\)$/);

      // The local answer is printed whatever it is.
      local.status = 500;
      const q = await newPayment('listen-2');
      await m.test.post(`/payments/${q.id}/cancel`);
      const [cancelled] = await local.next(1);
      await l.line(new RegExp(`payment\\.cancelled\\s+${cancelled!.id}.*→ 500`));
      local.status = 200;
      assert.deepEqual(local.rejected, []);
    } finally {
      assert.equal(await l.stop(), 0);
    }
  });

  test('after a restart the secret is the same and forwarding goes on; --print-secret prints it', async () => {
    const first = await listen(['--forward-to', local.url], env(m.testKey));
    await first.stop();
    const second = await listen(['--forward-to', local.url], env(m.testKey));
    try {
      assert.equal(second.secret, first.secret);
      const printed = await kasse(['listen', '--print-secret'], env(m.testKey));
      assert.equal(printed.stdout.trim(), first.secret);
      local.secret = second.secret;
      const p = await newPayment('after-restart');
      await m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'expired' });
      const [expired] = await local.next(1);
      assert.equal(expired!.data.id, p.id);
      assert.deepEqual(local.rejected, []);
      // Another key has another secret.
      const other = await t.merchant();
      assert.notEqual((await kasse(['listen', '--print-secret'], env(other.testKey))).stdout.trim(), first.secret);
    } finally {
      await second.stop();
    }
  });

  test('--events keeps only those types; a dropped connection is re-made without losing events', async () => {
    const l = await listen(['--forward-to', local.url, '--events', 'payment.cancelled,payment.late'], env(m.testKey));
    try {
      local.secret = l.secret;
      await m.test.post(`/test/payments/${(await newPayment('not-forwarded')).id}/simulate`, { outcome: 'paid' });
      await m.test.post(`/test/payments/${(await newPayment('late')).id}/simulate`, { outcome: 'late' });
      const [late] = await local.next(1);
      assert.equal(late!.type, 'payment.late');
      // The server ends its streams when its notification connection drops; listen reconnects with the last id.
      const mark = l.lines.length;
      await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`.execute(
        t.kasse.db,
      );
      await l.line(/^Connection lost/, mark);
      const during = await newPayment('during-the-gap');
      await m.test.post(`/payments/${during.id}/cancel`);
      await l.line(/^Reconnected\./, mark);
      const [cancelled] = await local.next(1);
      assert.equal(cancelled!.data.id, during.id);
      assert.ok(
        !local.events.some((e) => e.event.type === 'payment.paid' && e.event.data.order_id === 'not-forwarded'),
      );
    } finally {
      await l.stop();
    }
  });

  test('refuses what it cannot do, with a message', async () => {
    const live = await kasse(['listen', '--forward-to', local.url], env(m.liveKey));
    assert.equal(live.code, 2);
    assert.match(live.stderr, /test key/);
    const noTarget = await kasse(['listen'], env(m.testKey));
    assert.equal(noTarget.code, 2);
    assert.match(noTarget.stderr, /--forward-to/);
    const badKey = await kasse(['listen', '--forward-to', local.url], env('kasse_test_unknown'));
    assert.equal(badKey.code, 2);
    assert.match(badKey.stderr, /API key/);
  });
});

describe('kasse trigger', () => {
  let workers: Workers;
  let l: Listener;
  before(async () => {
    // As on a running Kasse: workers deliver webhooks and settle test refunds.
    workers = startWorkers(t.kasse);
    l = await listen(['--forward-to', local.url], env(m.testKey));
    local.secret = l.secret;
  });
  after(async () => {
    await l.stop();
    await workers.stop();
  });

  for (const type of [
    'payment.paid',
    'payment.underpaid',
    'payment.expired',
    'payment.late',
    'payment.wrong_asset',
    'payment.cancelled',
    'payment.refunded',
  ]) {
    test(`${type}: a test payment fires the real event, to the webhook URL and to kasse listen`, async () => {
      const res = await kasse(['trigger', type], env(m.testKey));
      assert.equal(res.code, 0, res.stderr);
      const [, eventId, paymentId] =
        new RegExp(`^Triggered ${type.replace('.', '\\.')}: (evt_\\w+) for (pay_\\w+)`).exec(res.stdout) ?? [];
      assert.ok(eventId, res.stdout);
      const event = (await m.test.get(`/events/${eventId}`)).body;
      assert.equal(event.type, type);
      assert.equal(event.data.id, paymentId);
      assert.equal(event.data.metadata.kasse_trigger, type);
      await eventually('forwarded by kasse listen', () => local.events.some((e) => e.event.id === eventId), {
        timeoutMs: 30_000,
      });
      await eventually('delivered to the webhook URL', () => webhooks.events.some((e) => e.id === eventId), {
        timeoutMs: 30_000,
      });
    });
  }

  test('--override sets the payment’s fields and metadata; --json prints one object', async () => {
    const res = await kasse(
      [
        'trigger',
        'payment.paid',
        '--override',
        'price_amount=5000',
        '--override',
        'order_id=A-17',
        '--override',
        'metadata.customer=42',
        '--json',
      ],
      env(m.testKey),
    );
    assert.equal(res.code, 0, res.stderr);
    const out = JSON.parse(res.stdout);
    assert.equal(out.event, 'payment.paid');
    assert.equal(out.payment.price_amount, 5000);
    assert.equal(out.payment.order_id, 'A-17');
    assert.deepEqual(out.payment.metadata, { kasse_trigger: 'payment.paid', customer: '42' });
    assert.equal((await m.test.get(`/events/${out.event_id}`)).body.data.price_amount, 5000);
  });

  test('refuses unknown events and fields, and live keys', async () => {
    const unknown = await kasse(['trigger', 'payment.teleported'], env(m.testKey));
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /payment\.paid, payment\.underpaid/);
    const field = await kasse(['trigger', 'payment.paid', '--override', 'colour=red'], env(m.testKey));
    assert.equal(field.code, 2);
    assert.match(field.stderr, /cannot set "colour"/);
    const cents = await kasse(['trigger', 'payment.paid', '--override', 'price_amount=12.5'], env(m.testKey));
    assert.equal(cents.code, 2);
    const live = await kasse(['trigger', 'payment.paid', '--api-key', m.liveKey], env(m.testKey));
    assert.equal(live.code, 2);
  });
});
