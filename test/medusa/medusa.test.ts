/**
 * Kasse inside a real Medusa: a fresh Medusa 2.21 project gets the provider with the install steps of
 * docs/integrations/medusa.md run verbatim (`npm pack` of integrations/medusa, `npm install` of the tarball) and the
 * `medusa-config.ts` printed there, its database migrated by `medusa db:migrate` on the run's PostgreSQL, an admin made
 * by `medusa user`, and `medusa start` serving it (booted once for the file). Then, through Medusa's own store and
 * admin APIs: a cart paid through Kasse's simulator, Kasse's webhook delivered to Medusa's own webhook route and the
 * cart completed into an order; the storefront coming back after that finds the same order; a refund made with the
 * admin API arriving in Kasse; a forged webhook changing nothing. The doc's second, manual-capture entry of the
 * provider (`pp_kasse_manual`, the same Kasse account) is added beside the first: a cart authorized through the
 * simulator becomes an order, captured from Medusa's admin API and settled in Kasse; another order cancelled in
 * Medusa has its hold voided.
 *
 * The project's own Medusa packages are the integration's installed tree linked in (`cp -al`, the same versions its
 * lockfile holds; copied when the temporary directory is on another file system), which spares a second download and
 * unpacking of Medusa's 700 MB; `npm install` of the tarball then works on that tree as on any installed project.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import { Kasse } from '../../sdk/src/index.ts';
import { KASSE_HOME } from '../../src/config.ts';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { eventually } from '../harness/expect.ts';
import { MEDUSA_PACKAGE, medusaPackage } from '../harness/medusa.ts';
import { freePort } from '../harness/net.ts';

const run = promisify(execFile);
const PAYER = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
const ADMIN = { email: 'admin@shop.test', password: 'a-long-admin-password' };
const DOC = readFileSync(join(KASSE_HOME, 'docs', 'integrations', 'medusa.md'), 'utf8');

/** The first code block of `lang` in the doc's section `## <heading>`. */
function docBlock(heading: string, lang: string): string {
  const section = DOC.split(/^## /m).find((s) => s.startsWith(`${heading}\n`));
  const code = section && new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section)?.[1];
  assert.ok(code, `docs/integrations/medusa.md has a ${lang} block under "## ${heading}"`);
  return code;
}

let t: TestKasse;
let m: TestMerchant;
let kasse: Kasse;
let shop: string;
let port: number;
let database: string;
let medusaProcess: ChildProcess | null = null;
let medusaLog = '';
let adminHeaders: Record<string, string>;
let storeHeaders: Record<string, string>;
let regionId: string;
let variantId: string;
const times: Record<string, number> = {};

async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const start = Date.now();
  try {
    return await fn();
  } finally {
    times[name] = Date.now() - start;
  }
}

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: process.env.KASSE_TEST_DATABASE_URL });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}

function shopEnv(): NodeJS.ProcessEnv {
  const url = new URL(process.env.KASSE_TEST_DATABASE_URL!);
  url.pathname = `/${database}`;
  return {
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: url.toString(),
    KASSE_API_KEY: m.testKey,
    KASSE_API_URL: t.urls.test,
    KASSE_WEBHOOK_SECRET: m.webhookSecret,
    DISABLE_MEDUSA_ADMIN: 'true',
    MEDUSA_DISABLE_TELEMETRY: 'true',
    npm_config_loglevel: 'error',
  };
}

/** A `medusa` command of the project, to its end. */
function medusaCommand(args: string[]) {
  return run(join(shop, 'node_modules', '.bin', 'medusa'), args, { cwd: shop, env: shopEnv(), maxBuffer: 64 << 20 });
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: json };
}

async function ok(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await call(method, path, body, headers);
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A fresh Medusa project, with the provider installed and configured as the doc says. */
async function makeShop(): Promise<void> {
  shop = mkdtempSync(join(tmpdir(), 'kasse-medusa-shop-'));
  const integration = JSON.parse(readFileSync(join(MEDUSA_PACKAGE, 'package.json'), 'utf8'));
  const version = (name: string) => integration.devDependencies[name];
  writeFileSync(
    join(shop, 'package.json'),
    JSON.stringify(
      {
        name: 'shop',
        version: '0.0.1',
        private: true,
        scripts: { start: 'medusa start', migrate: 'medusa db:migrate' },
        dependencies: Object.fromEntries(
          ['@medusajs/cli', '@medusajs/framework', '@medusajs/medusa'].map((n) => [n, version(n)]),
        ),
        devDependencies: Object.fromEntries(['@types/node', 'ts-node', 'typescript'].map((n) => [n, version(n)])),
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(shop, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2021',
        esModuleInterop: true,
        module: 'Node16',
        moduleResolution: 'Node16',
        emitDecoratorMetadata: true,
        experimentalDecorators: true,
        skipLibCheck: true,
        declaration: false,
        outDir: './.medusa/server',
        rootDir: './',
        resolveJsonModule: true,
        strictNullChecks: true,
      },
      'ts-node': { transpileOnly: true },
      include: ['**/*'],
      exclude: ['node_modules', '.medusa/server'],
    }),
  );
  // The tree itself, not a link to it (a checkout may link node_modules to a shared install): the project's
  // node_modules must be its own directory, or the removal below would reach into the installed tree.
  const installed = realpathSync(join(MEDUSA_PACKAGE, 'node_modules'));
  await timed('link Medusa', () =>
    // Hard links need one file system; across two the tree is copied.
    run('cp', ['-al', installed, join(shop, 'node_modules')]).catch(() => run('cp', ['-a', installed, shop])),
  );
  // npm rewrites its record of the tree in place: the project gets its own copy, not a link to the integration's.
  const record = join(shop, 'node_modules', '.package-lock.json');
  rmSync(record);
  cpSync(join(installed, '.package-lock.json'), record);
  rmSync(join(shop, 'node_modules', '.kasse-install-stamp'), { force: true });
  await timed('install steps', () =>
    run('bash', ['-euo', 'pipefail', '-c', docBlock('Install', 'sh')], {
      env: { ...process.env, KASSE_DIR: KASSE_HOME, SHOP_DIR: shop, npm_config_loglevel: 'error' },
      maxBuffer: 64 << 20,
    }),
  );
  // The configuration as the doc prints it, with the doc's manual-capture entry added to the payment providers.
  const config = docBlock('Configure', 'ts');
  const firstEntryEnd = config.indexOf('\n        ],', config.indexOf('providers: ['));
  assert.ok(firstEntryEnd > 0, "the doc's configuration has a providers list");
  const manualEntry = docBlock('Automatic and manual capture', 'ts');
  writeFileSync(
    join(shop, 'medusa-config.ts'),
    `${config.slice(0, firstEntryEnd)}\n${manualEntry.trimEnd()}${config.slice(firstEntryEnd)}`,
  );
}

/** `medusa start` on `port`, resolved once it answers /health; its output is kept in `medusaLog`. */
async function startMedusa(): Promise<void> {
  const child = spawn(join(shop, 'node_modules', '.bin', 'medusa'), ['start', '--port', String(port)], {
    cwd: shop,
    env: shopEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  medusaProcess = child;
  child.stdout!.on('data', (d) => (medusaLog += String(d)));
  child.stderr!.on('data', (d) => (medusaLog += String(d)));
  await eventually(
    'Medusa to answer /health',
    async () => {
      if (child.exitCode !== null) assert.fail(`medusa start exited ${child.exitCode}:\n${medusaLog.slice(-4000)}`);
      return (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok;
    },
    { timeoutMs: 180_000, intervalMs: 250 },
  );
}

/** Lines of Medusa's log matching `pattern`, once there are `n` of them. */
function logLines(pattern: RegExp, n = 1): Promise<string[]> {
  return eventually(
    `${n} line(s) of Medusa's log matching ${pattern}`,
    () => {
      const lines = medusaLog.split('\n').filter((l) => pattern.test(l));
      return lines.length >= n && lines;
    },
    // Medusa hands a webhook to the provider after its webhook_delay (5 s).
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

before(async () => {
  await Promise.all([
    (async () => {
      times.package = (await medusaPackage()).install;
      await makeShop();
    })(),
    (async () => {
      port = await freePort();
      // Medusa checks Kasse's signatures against the real clock, so Kasse's clock starts at it.
      t = await startTestKasse({ clock: new FakeClock(Date.now()) });
      m = await t.merchant({ webhookUrl: `http://127.0.0.1:${port}/hooks/payment/kasse_kasse`, rateLimit: 100_000 });
      kasse = new Kasse(m.testKey, { baseUrl: t.urls.test });
      database = `medusa_${randomBytes(4).toString('hex')}`;
      await admin(`CREATE DATABASE ${database}`);
    })(),
  ]);
  await timed('db:migrate', () => medusaCommand(['db:migrate']));
  await Promise.all([
    timed('medusa user', () => medusaCommand(['user', '-e', ADMIN.email, '-p', ADMIN.password])),
    timed('medusa start', startMedusa),
  ]);
  const { token } = await ok('POST', '/auth/user/emailpass', ADMIN);
  adminHeaders = { authorization: `Bearer ${token}` };
  const channel = (await ok('GET', '/admin/sales-channels', undefined, adminHeaders)).sales_channels[0];
  const region = await ok(
    'POST',
    '/admin/regions',
    {
      name: 'United States',
      currency_code: 'usd',
      countries: ['us'],
      payment_providers: ['pp_kasse_kasse', 'pp_kasse_manual'],
    },
    adminHeaders,
  );
  regionId = region.region.id;
  const key = (await ok('POST', '/admin/api-keys', { title: 'Storefront', type: 'publishable' }, adminHeaders)).api_key;
  await ok('POST', `/admin/api-keys/${key.id}/sales-channels`, { add: [channel.id] }, adminHeaders);
  storeHeaders = { 'x-publishable-api-key': key.token };
  const product = await ok(
    'POST',
    '/admin/products',
    {
      title: 'Mug',
      status: 'published',
      options: [{ title: 'Size', values: ['One'] }],
      variants: [
        {
          title: 'One',
          options: { Size: 'One' },
          prices: [{ amount: 25.5, currency_code: 'usd' }],
          manage_inventory: false,
        },
      ],
      sales_channels: [{ id: channel.id }],
    },
    adminHeaders,
  );
  variantId = product.product.variants[0].id;
});

after(async () => {
  if (medusaProcess && medusaProcess.exitCode === null) {
    const exited = new Promise((r) => medusaProcess!.once('exit', r));
    medusaProcess.kill('SIGTERM');
    await exited;
  }
  await t?.close();
  if (database) await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  if (shop) rmSync(shop, { recursive: true, force: true });
  process.stdout.write(`# Medusa steps (ms): ${JSON.stringify(times)}\n`);
});

/** A store cart with a mug, its payment collection and a Kasse payment session, as a storefront makes them. */
async function checkout(provider = 'pp_kasse_kasse') {
  const { cart } = await ok(
    'POST',
    '/store/carts',
    {
      region_id: regionId,
      email: `payer-${randomBytes(4).toString('hex')}@example.com`,
      items: [{ variant_id: variantId, quantity: 1 }],
    },
    storeHeaders,
  );
  const { payment_collection: collection } = await ok(
    'POST',
    '/store/payment-collections',
    { cart_id: cart.id },
    storeHeaders,
  );
  const { payment_collection: withSession } = await ok(
    'POST',
    `/store/payment-collections/${collection.id}/payment-sessions`,
    { provider_id: provider, data: { success_url: 'https://shop.example.com/order/confirmed' } },
    storeHeaders,
  );
  const session = withSession.payment_sessions[0];
  return { cart, session, paymentId: session.data.id as string };
}

/** The orders Medusa made of `cart` (each checkout has its own email), with payments, captures and refunds. */
async function completedAt(cart: { id: string }): Promise<string | null> {
  const { cart: now } = await ok('GET', `/store/carts/${cart.id}?fields=id,completed_at`, undefined, storeHeaders);
  return now.completed_at ?? null;
}

async function orderOf(cart: { id: string; email: string }) {
  if (!(await completedAt(cart))) return null;
  const { orders } = await ok(
    'GET',
    '/admin/orders?limit=100&fields=id,email,total,status,payment_status,*payment_collections.payments,*payment_collections.payments.captures,*payment_collections.payments.refunds',
    undefined,
    adminHeaders,
  );
  // Medusa makes the order and completes the cart first and records the payment last, in steps of its own: an order
  // is made once its payment shows.
  const mine = orders.filter((o: any) => o.email === cart.email);
  return mine.length > 0 && mine.every((o: any) => o.payment_status !== 'not_paid') ? mine : null;
}

describe('Kasse inside Medusa', () => {
  test('the package installs into a fresh Medusa project with the documented steps and Medusa loads it', async () => {
    const installed = JSON.parse(readFileSync(join(shop, 'node_modules', '@kasse', 'medusa', 'package.json'), 'utf8'));
    assert.equal(installed.name, '@kasse/medusa');
    assert.deepEqual(installed.dependencies ?? {}, {}, 'the SDK is inside the package');
    assert.deepEqual(installed.peerDependencies, { '@medusajs/framework': '2.21.x' });
    const { payment_providers } = await ok('GET', '/admin/payments/payment-providers', undefined, adminHeaders);
    for (const id of ['pp_kasse_kasse', 'pp_kasse_manual'])
      assert.ok(
        payment_providers.some((p: any) => p.id === id && p.is_enabled),
        `${id}: ${JSON.stringify(payment_providers)}`,
      );
  });

  test("a cart paid through Kasse: its webhook reaches Medusa's route and completes the cart into an order", async () => {
    const { cart, session, paymentId } = await checkout();
    assert.match(session.data.checkout_url, new RegExp(`^${t.urls.checkout}/p/pay_`));
    const payment = await kasse.payments.retrieve(paymentId);
    assert.equal(payment.price_amount, 2550);
    assert.equal(payment.order_id, session.id);
    assert.equal(payment.success_url, 'https://shop.example.com/order/confirmed');

    // The customer came back before paying: Medusa does not complete the cart.
    const early = await call('POST', `/store/carts/${cart.id}/complete`, {}, storeHeaders);
    assert.notEqual(early.body.type, 'order', JSON.stringify(early.body));
    assert.equal(await completedAt(cart), null, 'no order');

    await kasse.testHelpers.payments.simulate(paymentId, { outcome: 'paid', from: PAYER });
    assert.equal(await t.kasse.webhooks.drain(), 1);
    const [event] = (await kasse.events.list({ type: 'payment.paid' })).data.filter(
      (e) => (e.data as { id: string }).id === paymentId,
    );
    const { deliveries } = await kasse.events.retrieve(event!.id);
    assert.equal(deliveries[0]!.status, 'delivered', 'Medusa answered the webhook');
    assert.equal(deliveries[0]!.url, `http://127.0.0.1:${port}/hooks/payment/kasse_kasse`);

    const orders = await eventually('the order Medusa makes of the cart', () => orderOf(cart), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    assert.equal(orders.length, 1);
    const order = orders[0];
    assert.equal(order.total, 25.5);
    assert.equal(order.payment_status, 'captured');
    const payments = order.payment_collections.flatMap((c: any) => c.payments);
    assert.equal(payments.length, 1);
    assert.equal(payments[0].provider_id, 'pp_kasse_kasse');
    assert.equal(payments[0].data.id, paymentId);
    assert.equal(payments[0].data.status, 'paid');

    // The storefront coming back now gets the same order, not a second one.
    const late = await ok('POST', `/store/carts/${cart.id}/complete`, {}, storeHeaders);
    assert.equal(late.type, 'order');
    assert.equal(late.order.id, order.id);

    // Kasse delivering the event again (at least once) adds nothing. A later cart's webhook, sent after it with the
    // same delay, shows that Medusa has handled it.
    await kasse.events.redeliver(event!.id);
    await t.kasse.webhooks.drain();
    const second = await checkout();
    await kasse.testHelpers.payments.simulate(second.paymentId, { outcome: 'paid', from: PAYER });
    await t.kasse.webhooks.drain();
    await logLines(new RegExp(`webhook ${event!.id} \\(payment\\.paid\\) → captured for ${session.id}`), 2);
    await eventually('the later cart’s order', () => orderOf(second.cart), { timeoutMs: 60_000, intervalMs: 500 });
    const again = (await orderOf(cart))!;
    assert.equal(again.length, 1);
    const paymentsAgain = again[0].payment_collections.flatMap((c: any) => c.payments);
    assert.equal(paymentsAgain.length, 1);
    assert.equal(paymentsAgain[0].captures.length, 1);
  });

  test("a refund from Medusa's admin API arrives in Kasse, in full, to the payer's address", async () => {
    const { cart, paymentId } = await checkout();
    await kasse.testHelpers.payments.simulate(paymentId, { outcome: 'paid', from: PAYER });
    await t.kasse.webhooks.drain();
    const [order] = await eventually('the order', () => orderOf(cart), { timeoutMs: 60_000, intervalMs: 500 });
    const medusaPayment = order.payment_collections.flatMap((c: any) => c.payments)[0];

    const partial = await call('POST', `/admin/payments/${medusaPayment.id}/refund`, { amount: 10 }, adminHeaders);
    assert.ok(partial.status >= 400, JSON.stringify(partial.body));
    assert.match(partial.body.message, /Kasse refunds a payment in full: 25\.50 USD/);
    assert.equal((await kasse.payments.retrieve(paymentId)).status, 'paid', 'nothing was asked of Kasse');

    const refunded = await ok('POST', `/admin/payments/${medusaPayment.id}/refund`, { amount: 25.5 }, adminHeaders);
    assert.equal(refunded.payment.refunds.length, 1);
    assert.equal(refunded.payment.refunds[0].amount, 25.5);
    await t.kasse.refunds.settleSimulated();
    const inKasse = await kasse.payments.retrieve(paymentId);
    assert.equal(inKasse.status, 'refunded');
    const rows = await t.kasse.db
      .selectFrom('refunds')
      .select(['destination', 'status', 'amount'])
      .where('payment_id', '=', paymentId)
      .execute();
    assert.deepEqual(rows, [{ destination: PAYER, status: 'sent', amount: '25500000' }]);
    // Kasse's payment.refunded reaches Medusa too, which has no action for it.
    await t.kasse.webhooks.drain();
    await logLines(/\(payment\.refunded\) → not_supported/);
  });

  test("manual capture: an authorized cart becomes an order, captured from Medusa's admin API; a cancelled one is voided", async () => {
    const { cart, session, paymentId } = await checkout('pp_kasse_manual');
    const created = await kasse.payments.retrieve(paymentId);
    assert.equal(created.capture_method, 'manual');
    assert.equal(created.authorization!.amount_usd_cents, 2550);

    // The payer authorizes the hold; Kasse's payment.authorized reaches Medusa and the cart becomes an order.
    await kasse.testHelpers.payments.simulate(paymentId, { outcome: 'authorized', from: PAYER });
    assert.equal(await t.kasse.webhooks.drain(), 1);
    const [order] = await eventually('the order of the authorized cart', () => orderOf(cart), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    assert.equal(order.payment_status, 'authorized');
    const [medusaPayment] = order.payment_collections.flatMap((c: any) => c.payments);
    assert.equal(medusaPayment.provider_id, 'pp_kasse_manual');
    assert.equal(medusaPayment.data.status, 'authorized');
    assert.equal(medusaPayment.captures.length, 0);
    assert.equal((await kasse.payments.retrieve(paymentId)).authorization!.captured_usd_cents, 0);

    // The merchant captures from Medusa's admin: Kasse captures the hold, once.
    const captured = await ok('POST', `/admin/payments/${medusaPayment.id}/capture`, {}, adminHeaders);
    assert.equal(captured.payment.captures.length, 1);
    assert.equal(captured.payment.captures[0].amount, 25.5);
    assert.equal((await kasse.payments.retrieve(paymentId)).authorization!.pending_usd_cents, 2550);
    // Asked again, whatever Medusa answers, Kasse is not asked for a second capture (below: one capture settles).
    await call('POST', `/admin/payments/${medusaPayment.id}/capture`, {}, adminHeaders);
    await t.kasse.capture.settleSimulated();
    const inKasse = await kasse.payments.retrieve(paymentId);
    assert.equal(inKasse.status, 'paid');
    assert.equal(inKasse.authorization!.captured_usd_cents, 2550);
    assert.equal(inKasse.authorization!.captures.length, 1);
    // Kasse's payment.paid and payment.captured reach Medusa, which already has the capture: nothing to add.
    assert.equal(await t.kasse.webhooks.drain(), 2);
    await logLines(new RegExp(`\\(payment\\.captured\\) → not_supported for ${session.id}`));
    await logLines(new RegExp(`\\(payment\\.paid\\) → authorized for ${session.id}`));
    const [after] = (await orderOf(cart))!;
    assert.equal(after.payment_status, 'captured');
    assert.equal(after.payment_collections.flatMap((c: any) => c.payments)[0].captures.length, 1);

    // Another authorized order, cancelled in Medusa: its hold is voided and the payer's money goes back.
    const other = await checkout('pp_kasse_manual');
    await kasse.testHelpers.payments.simulate(other.paymentId, { outcome: 'authorized', from: PAYER });
    await t.kasse.webhooks.drain();
    const [toCancel] = await eventually('the second order', () => orderOf(other.cart), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    await ok('POST', `/admin/orders/${toCancel.id}/cancel`, {}, adminHeaders);
    await t.kasse.capture.settleSimulated();
    const voided = await kasse.payments.retrieve(other.paymentId);
    assert.equal(voided.status, 'cancelled');
    assert.equal(voided.authorization!.voided, true);
    assert.equal(voided.authorization!.captured_usd_cents, 0);
    const [cancelled] = (await orderOf(other.cart))!;
    assert.equal(cancelled.status, 'canceled');
  });

  test("a part captured on Kasse's API is recorded once in Medusa; Medusa's capture of the rest asks Kasse only for that", async () => {
    const { cart, session, paymentId } = await checkout('pp_kasse_manual');
    await kasse.testHelpers.payments.simulate(paymentId, { outcome: 'authorized', from: PAYER });
    await t.kasse.webhooks.drain();
    const [order] = await eventually('the order', () => orderOf(cart), { timeoutMs: 60_000, intervalMs: 500 });
    const medusaPaymentId = order.payment_collections.flatMap((c: any) => c.payments)[0].id;
    const captures = async () =>
      (await orderOf(cart))![0].payment_collections.flatMap((c: any) => c.payments)[0].captures as any[];

    // 10.00 of 25.50 captured on Kasse's API; it settles with payment.paid and payment.captured.
    await kasse.payments.capture(paymentId, { amount_usd_cents: 1000 });
    await t.kasse.capture.settleSimulated();
    assert.equal(await t.kasse.webhooks.drain(), 2);
    await logLines(new RegExp(`\\(payment\\.captured\\) → captured for ${session.id}`));
    await logLines(new RegExp(`\\(payment\\.paid\\) → authorized for ${session.id}`));
    const recorded = await eventually(
      "Medusa's record of the capture",
      async () => ((await captures()).length > 0 ? captures() : null),
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    assert.deepEqual(
      recorded.map((c: any) => c.amount),
      [10],
    );
    const partly = await kasse.payments.retrieve(paymentId);
    assert.equal(partly.authorization!.captured_usd_cents, 1000);
    assert.equal(partly.authorization!.pending_usd_cents, 0, "Medusa's record asked Kasse for nothing more");

    // The rest captured from Medusa's admin: Kasse captures those 15.50, and both agree at 25.50.
    await ok('POST', `/admin/payments/${medusaPaymentId}/capture`, { amount: 15.5 }, adminHeaders);
    assert.equal((await kasse.payments.retrieve(paymentId)).authorization!.pending_usd_cents, 1550);
    await t.kasse.capture.settleSimulated();
    assert.equal(await t.kasse.webhooks.drain(), 1);
    await logLines(new RegExp(`\\(payment\\.captured\\) → not_supported for ${session.id}`));
    const settled = await kasse.payments.retrieve(paymentId);
    assert.deepEqual(
      settled.authorization!.captures.map((c) => c.amount_usd_cents),
      [1000, 1550],
    );
    assert.deepEqual(
      (await captures()).map((c: any) => c.amount).sort((a: number, b: number) => a - b),
      [10, 15.5],
    );
    assert.equal((await orderOf(cart))![0].payment_status, 'captured');
  });

  test("a forged webhook, or a signed one of a payment not the session's, changes nothing", async () => {
    const { cart, paymentId } = await checkout();
    const payment = await kasse.payments.retrieve(paymentId);
    const body = JSON.stringify({
      id: `evt_${'F'.repeat(26)}`,
      type: 'payment.paid',
      created_at: new Date().toISOString(),
      data: { ...payment, status: 'paid' },
    });
    const res = await fetch(`http://127.0.0.1:${port}/hooks/payment/kasse_kasse`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'service-signature': Kasse.webhooks.sign(body, 'whsec_not_the_secret'),
      },
      body,
    });
    assert.equal(res.status, 200, 'Medusa answers every webhook and hands it to the provider later');
    await logLines(/webhook refused \(signature_mismatch\)/);
    assert.equal(await completedAt(cart), null, 'no order');
    assert.equal((await kasse.payments.retrieve(paymentId)).status, 'waiting');

    // An authorized order, and a payment made on the account's API naming its session (order_id and metadata), paid
    // for 1.00: its event is genuinely signed, but the session's Kasse payment is another one, so Medusa is told
    // nothing, and nothing of the order's hold is captured.
    const held = await checkout('pp_kasse_manual');
    await kasse.testHelpers.payments.simulate(held.paymentId, { outcome: 'authorized', from: PAYER });
    await t.kasse.webhooks.drain();
    await eventually('the authorized order', () => orderOf(held.cart), { timeoutMs: 60_000, intervalMs: 500 });
    const decoy = await kasse.payments.create({
      price_amount: 100,
      price_currency: 'USD',
      order_id: held.session.id,
      metadata: { medusa_session_id: held.session.id, medusa_amount: '1' },
    });
    await kasse.testHelpers.payments.simulate(decoy.id, { outcome: 'paid', from: PAYER });
    assert.equal(await t.kasse.webhooks.drain(), 1);
    await logLines(
      new RegExp(
        `\\(payment\\.paid\\) for ${held.session.id} ignored: the session's Kasse payment is ${held.paymentId}, not ${decoy.id}`,
      ),
    );
    const hold = (await kasse.payments.retrieve(held.paymentId)).authorization!;
    assert.deepEqual([hold.captured_usd_cents, hold.pending_usd_cents], [0, 0]);
    const [order] = (await orderOf(held.cart))!;
    assert.equal(order.payment_status, 'authorized');
    assert.deepEqual(order.payment_collections.flatMap((c: any) => c.payments)[0].captures, []);
  });
});
