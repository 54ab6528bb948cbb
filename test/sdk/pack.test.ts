/**
 * sdk/ is a publishable package: `npm pack` builds it (ESM and type declarations) into a tarball with only what a
 * user needs; a fresh project installs that tarball offline (it has no dependencies), imports it as `@kasse/sdk`,
 * talks to a running Kasse with it, and type-checks against its declarations alone.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { startTestKasse, type TestKasse } from '../harness/app.ts';
import { KASSE_HOME } from '../../src/config.ts';

const run = promisify(execFile);
const SDK = join(KASSE_HOME, 'sdk');
const TSC = join(KASSE_HOME, 'node_modules', '.bin', 'tsc');

let t: TestKasse;
let dir: string;
before(async () => {
  t = await startTestKasse();
  dir = mkdtempSync(join(tmpdir(), 'kasse-sdk-pack-'));
});
after(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

test('npm pack builds a package that installs, runs and type-checks in a project of its own', async () => {
  const manifest = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8'));
  assert.equal(manifest.name, '@kasse/sdk');
  assert.equal(manifest.type, 'module');
  assert.equal(manifest.private, undefined, 'publishable');
  assert.deepEqual(manifest.dependencies ?? {}, {}, 'no runtime dependencies');

  const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: SDK,
    env: { ...process.env, npm_config_loglevel: 'error' },
  });
  const [info] = JSON.parse(packed.stdout);
  const files: string[] = info.files.map((f: { path: string }) => f.path).sort();
  for (const f of [
    'package.json',
    'README.md',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/generated/openapi.d.ts',
    'dist/webhooks.js',
  ])
    assert.ok(files.includes(f), `${f} is in the package`);
  assert.ok(
    !files.some((f) => f.startsWith('src/') || f.startsWith('scripts/') || (f.endsWith('.ts') && !f.endsWith('.d.ts'))),
    `only the build and the README: ${files.join(', ')}`,
  );

  const app = join(dir, 'app');
  await run('mkdir', ['-p', app]);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({
      name: 'shop',
      private: true,
      type: 'module',
      dependencies: { '@kasse/sdk': `file:${join(dir, info.filename)}` },
    }),
  );
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: app,
    env: { ...process.env, npm_config_loglevel: 'error' },
  });

  // Plain Node, ESM, against a running Kasse.
  const m = await t.merchant({ name: 'Packed' });
  writeFileSync(
    join(app, 'main.js'),
    `import { Kasse, KasseNotFoundError } from '@kasse/sdk';
const kasse = new Kasse(process.env.KEY, { baseUrl: process.env.API });
const account = await kasse.account.retrieve();
const payment = await kasse.payments.create({ price_amount: 2500, price_currency: 'USD', order_id: '1001' });
const missing = await kasse.payments.retrieve('pay_000000000000000000000000000000000000').catch((e) => e instanceof KasseNotFoundError);
const body = JSON.stringify({ id: 'evt_1', type: 'payment.paid', created_at: '2026-03-01T12:00:00Z', data: payment });
const event = Kasse.webhooks.constructEvent(body, Kasse.webhooks.sign(body, 'whsec_x'), 'whsec_x');
console.log(JSON.stringify({ account: account.id, status: payment.status, missing, event: event.data.id === payment.id }));
`,
  );
  const out = await run(process.execPath, ['main.js'], {
    cwd: app,
    env: { ...process.env, KEY: m.testKey, API: t.urls.test },
  });
  assert.deepEqual(JSON.parse(out.stdout), { account: m.id, status: 'waiting', missing: true, event: true });

  // TypeScript against the shipped declarations only (no skipLibCheck, no Node types).
  writeFileSync(
    join(app, 'check.ts'),
    `import { Kasse, KasseError, type KasseEvent, type Payment } from '@kasse/sdk';
const kasse = new Kasse('kasse_test_x', { baseUrl: 'http://127.0.0.1:8081/v1' });
export async function flow(): Promise<Payment> {
  const p = await kasse.payments.create({ price_amount: 2500, price_currency: 'USD', order_id: '1001' });
  for await (const q of kasse.payments.list({ status: 'paid', limit: 10 })) q.attempts.map((a) => a.pay_amount);
  const event: KasseEvent = Kasse.webhooks.constructEvent('{}', 't=1,v1=00', 'whsec_x');
  if (event.type === 'payment.paid') event.data.paid_at?.toUpperCase();
  try {
    await kasse.payments.cancel(p.id);
  } catch (err) {
    if (err instanceof KasseError) console.log(err.code, err.param, err.status, err.requestId);
  }
  // @ts-expect-error price_currency is USD only
  await kasse.payments.create({ price_amount: 1, price_currency: 'EUR', order_id: 'x' });
  return p;
}
`,
  );
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        types: [],
      },
      files: ['check.ts'],
    }),
  );
  await run(TSC, ['-p', 'tsconfig.json'], { cwd: app }).catch((err: { stdout?: string }) =>
    assert.fail(`the package's types do not check:\n${err.stdout}`),
  );

  // The README's complete order flow compiles against the package as written (it uses Node's http module).
  const readme = readFileSync(join(SDK, 'README.md'), 'utf8');
  const flow = /## A complete order flow[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)![1]!;
  writeFileSync(join(app, 'shop.ts'), flow);
  writeFileSync(
    join(app, 'tsconfig.shop.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        strict: true,
        noEmit: true,
        types: ['node'],
        typeRoots: [join(KASSE_HOME, 'node_modules', '@types')],
      },
      files: ['shop.ts'],
    }),
  );
  await run(TSC, ['-p', 'tsconfig.shop.json'], { cwd: app }).catch((err: { stdout?: string }) =>
    assert.fail(`the README's order flow does not compile:\n${err.stdout}`),
  );
});
