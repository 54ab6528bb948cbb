/**
 * The API reference: the OpenAPI document carries what a reader needs (operation ids, examples that match their
 * schemas, only the errors an operation can answer, the webhooks), and `{base_url}/docs` renders it with Redoc in
 * real Chromium under its CSP — sidebar navigation, deep links, search, request fields and samples — without a
 * single request to another host. Screenshots go to test-results/screenshots/.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { get } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { KASSE_HOME, loadConfig } from '../../src/config.ts';
import { ERROR_STATUS } from '../../src/core/errors.ts';
import { EVENT_TYPES } from '../../src/modules/payments/model.ts';
import { startTestKasse, type TestKasse } from '../harness/app.ts';
import { launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../harness/browser.ts';
import { assertDocumentedErrors, recordAnswer } from '../harness/documented-errors.ts';

const addFormats = addFormatsImport as unknown as (ajv: Ajv2020) => Ajv2020;

let t: TestKasse;
let doc: any;
before(async () => {
  t = await startTestKasse();
  doc = await (await fetch(`${t.urls.test}/openapi.json`)).json();
});
after(() => t.close());

const operations = () =>
  Object.entries<any>(doc.paths).flatMap(([path, ops]) =>
    Object.entries<any>(ops).map(([method, op]) => ({ path, method, op })),
  );

let ajv: Ajv2020 | undefined;

/** A validator of `schema` that resolves the document's `#/components/schemas/…` references. */
function validator(schema: unknown) {
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'kasse:doc', components: doc.components });
  }
  const rewrite = (node: any): any =>
    Array.isArray(node)
      ? node.map(rewrite)
      : node && typeof node === 'object'
        ? Object.fromEntries(
            Object.entries(node).map(([k, v]) => [
              k,
              k === '$ref' && typeof v === 'string' ? `kasse:doc${v}` : rewrite(v),
            ]),
          )
        : node;
  return ajv.compile(rewrite(schema));
}

function assertValid(schema: unknown, value: unknown, what: string) {
  const validate = validator(schema);
  assert.ok(validate(value), `${what}: ${JSON.stringify(validate.errors)}`);
}

describe('links to the reference', () => {
  test('the README’s and the docs’ links to the reference are exact: the default listeners of npm start, paths Kasse serves', async () => {
    const defaults = loadConfig({});
    const expected = new Set([
      `http://${defaults.host}:${defaults.ports.test}/v1/docs`,
      `http://${defaults.host}:${defaults.ports.live}/v1/docs`,
      `http://${defaults.host}:${defaults.ports.test}/v1/openapi.json`,
    ]);
    for (const file of ['README.md', 'docs/developer-tools.md']) {
      const text = readFileSync(join(KASSE_HOME, file), 'utf8');
      const links = new Set([...text.matchAll(/<(http:\/\/[^>]+\/v1\/[^>]*)>/g)].map((x) => x[1]!));
      assert.deepEqual(links, expected, file);
      // Each link names its API next to it.
      assert.match(text, new RegExp(`${defaults.ports.test}/v1/docs>[^<]*test API`));
      assert.match(text, new RegExp(`${defaults.ports.live}/v1/docs>[^<]*live API`));
    }
    // The same paths on this Kasse's listeners answer what the links promise.
    for (const link of expected) {
      const url = new URL(link);
      const base = url.port === String(defaults.ports.test) ? t.urls.test : t.urls.live;
      const res = await fetch(base + url.pathname.replace(/^\/v1/, ''));
      assert.equal(res.status, 200, link);
      assert.match(res.headers.get('content-type') ?? '', link.endsWith('docs') ? /text\/html/ : /application\/json/);
    }
  });

  test('relative links of the README, the developer docs and the SDK README point at files that exist', () => {
    for (const file of ['README.md', 'docs/developer-tools.md', 'sdk/README.md']) {
      const url = pathToFileURL(join(KASSE_HOME, file));
      for (const [, target] of readFileSync(url, 'utf8').matchAll(/\]\(((?!https?:|#)[^)]+)\)/g)) {
        assert.ok(existsSync(new URL(target!.split('#')[0]!, url)), `${file} links to ${target}`);
      }
    }
  });
});

describe('the OpenAPI document', () => {
  test('every operation has an id, a summary, a description, a tag and a curl sample', () => {
    const ids = new Set<string>();
    for (const { path, method, op } of operations()) {
      const name = `${method.toUpperCase()} ${path}`;
      assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]+$/, `${name} has an operationId`);
      assert.ok(!ids.has(op.operationId), `${op.operationId} is unique`);
      ids.add(op.operationId);
      assert.ok(op.summary && op.description, `${name} is described`);
      assert.ok(op.tags?.length, `${name} is in a section`);
      assert.ok(
        doc.tags.some((tag: any) => tag.name === op.tags[0] && tag.description),
        `${op.tags[0]} has a description`,
      );
      const curl = op['x-codeSamples']?.[0]?.source ?? '';
      assert.ok(
        curl.startsWith('curl ') && curl.includes(`${doc.servers[0].url}${path.split('{')[0]}`),
        `${name} has a curl sample`,
      );
    }
  });

  test('each operation lists only the errors it can answer, each code with an example body', () => {
    const statuses = (path: string, method: string) =>
      Object.keys(doc.paths[path][method].responses)
        .filter((s) => Number(s) >= 400)
        .map(Number);
    const codes = (path: string, method: string, status: number) =>
      Object.keys(doc.paths[path][method].responses[status].content['application/json'].examples);
    // Reads of the account and lists: only what the key guard and input validation can say.
    assert.deepEqual(statuses('/account', 'get'), [400, 401, 403, 429]);
    assert.deepEqual(statuses('/payments', 'get'), [400, 401, 403, 429]);
    // An object by id can also be missing.
    assert.deepEqual(statuses('/payments/{id}', 'get'), [400, 401, 403, 404, 429]);
    // Creating a payment: idempotency, the coin's minimum, prices and paused networks; never 404.
    assert.deepEqual(statuses('/payments', 'post'), [400, 401, 403, 409, 422, 429, 503]);
    assert.deepEqual(codes('/payments', 'post', 409), ['idempotency_conflict']);
    assert.deepEqual(codes('/payments', 'post', 422), ['amount_too_small']);
    assert.deepEqual(codes('/payments', 'post', 503), ['price_unavailable', 'chain_paused']);
    assert.deepEqual(codes('/payments/{id}/attempts', 'post', 409), ['too_many_attempts']);
    assert.deepEqual(codes('/payments/{id}/attempts', 'post', 422).sort(), ['amount_too_small', 'invalid_state']);
    assert.deepEqual(statuses('/payments/{id}/cancel', 'post'), [400, 401, 403, 404, 422, 429]);
    assert.ok(
      doc.paths['/payments/{id}/cancel'].post.responses['429'].headers['Retry-After'],
      '429 documents Retry-After',
    );
    for (const { path, method, op } of operations()) {
      for (const [status, res] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue;
        const examples = res.content['application/json'].examples;
        for (const [code, ex] of Object.entries<any>(examples)) {
          assert.equal(
            ERROR_STATUS[code as keyof typeof ERROR_STATUS],
            Number(status),
            `${method} ${path}: ${code} belongs to ${status}`,
          );
          assert.equal(ex.value.error.code, code);
          assertValid({ $ref: '#/components/schemas/Error' }, ex.value, `${method} ${path} ${code} example`);
        }
      }
    }
  });

  test('every component schema and request body has an example, and every example matches its schema', () => {
    for (const [name, schema] of Object.entries<any>(doc.components.schemas)) {
      assert.ok(Array.isArray(schema.examples) && schema.examples.length > 0, `${name} has an example`);
      for (const ex of schema.examples) assertValid(schema, ex, `${name} example`);
    }
    for (const { path, method, op } of operations()) {
      const body = op.requestBody?.content?.['application/json']?.schema;
      if (!body) continue;
      assert.ok(body.examples?.length, `${method} ${path} has a request example`);
      for (const ex of body.examples) assertValid(body, ex, `${method} ${path} request example`);
      for (const p of op.parameters ?? [])
        if (p.example !== undefined) assertValid(p.schema, p.example, `${method} ${path} parameter ${p.name}`);
    }
  });

  test('documents every webhook Kasse sends, with its headers and a body that matches the Event schema', () => {
    assert.deepEqual(Object.keys(doc.webhooks), [...EVENT_TYPES]);
    for (const [type, hook] of Object.entries<any>(doc.webhooks)) {
      assert.deepEqual(
        hook.post.parameters.map((p: any) => p.name),
        ['Service-Signature', 'Service-Event-Id', 'Service-Event-Type'],
      );
      const media = hook.post.requestBody.content['application/json'];
      assert.equal(media.example.type, type);
      assertValid(media.schema, media.example, `${type} example`);
    }
  });

  test('the live document has no test-only operation; the test document has the simulator and the event stream', async () => {
    const live = await (await fetch(`${t.urls.live}/openapi.json`)).json();
    assert.ok(doc.paths['/test/payments/{id}/simulate'] && doc.paths['/test/events/stream']);
    assert.ok(!Object.keys(live.paths).some((p) => p.startsWith('/test/')));
    assert.equal(live.servers[0].url, t.urls.live);
  });

  test('an error answer its operation does not document fails the test that received it', async () => {
    recordAnswer(t.urls.test, 'GET', '/account', 409, {
      error: { code: 'idempotency_conflict', message: '', param: null },
    });
    await assert.rejects(assertDocumentedErrors([t.urls.test]), /GET \/account answered 409 idempotency_conflict/);
    recordAnswer(t.urls.test, 'POST', '/payments', 409, {
      error: { code: 'idempotency_conflict', message: '', param: null },
    });
    await assertDocumentedErrors([t.urls.test]);
  });
});

/** The reference is one long page: the screenshot is of what the window shows. */
const screenshot = (page: import('playwright-core').Page, name: string) =>
  page.screenshot({ path: `${SCREENSHOT_DIR}/${name}.png` });

describe('the reference page', () => {
  let browser: TestBrowser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser.close());

  test('is served by Kasse with its scripts from the same host under a strict script policy', async () => {
    for (const base of [t.urls.test, t.urls.live]) {
      const res = await fetch(`${base}/docs`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-eval|script-src[^;]*unsafe-inline/);
      const html = await res.text();
      const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((x) => x[1]!);
      assert.equal(scripts.length, 2);
      assert.ok(!/<script>/.test(html), 'no inline script');
      for (const src of scripts) {
        assert.ok(src.startsWith('/v1/docs/assets/'), src);
        const asset = await fetch(new URL(src, base), { headers: { 'accept-encoding': 'gzip' } });
        assert.equal(asset.status, 200);
        assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
        assert.match(asset.headers.get('content-type') ?? '', /javascript/);
      }
    }
    // The bundle is Redoc's, from node_modules; a name outside the two is not served.
    const bundle = await fetch(`${t.urls.test}/docs/assets/redoc.standalone.js`, {
      headers: { 'accept-encoding': 'identity' },
    });
    assert.match((await bundle.text()).slice(0, 20000), /ReDoc|redoc/);
    assert.equal((await fetch(`${t.urls.test}/docs/assets/..%2Fpackage.json`)).status, 404);
    assert.equal((await fetch(`${t.urls.test}/docs/assets/kasse.ts`)).status, 404);
    const plain = await (
      await fetch(`${t.urls.test}/docs/assets/reference.js`, { headers: { 'accept-encoding': 'identity' } })
    ).text();
    const raw = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      get(`${t.urls.test}/docs/assets/reference.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        const chunks: Buffer[] = [];
        res
          .on('data', (c: Buffer) => chunks.push(c))
          .on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
    assert.equal(raw.encoding, 'gzip');
    assert.equal(gunzipSync(raw.body).toString(), plain);
  });

  test('in Chromium: sidebar navigation, deep links and search work, and no request leaves the host', async () => {
    const rec = await browser.open('desktop');
    try {
      const failed: string[] = [];
      rec.page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
      await rec.page.goto(`${t.urls.test}/docs`);
      const nav = rec.page.locator('.menu-content');
      await nav.waitFor({ timeout: 60_000 });
      await rec.page.getByRole('heading', { name: /Kasse test API/ }).waitFor();

      // The sidebar: the conventions, then the API's sections, then the webhooks.
      for (const label of [
        'Authentication',
        'Errors',
        'Idempotency',
        'Pagination',
        'Payments',
        'Payment links',
        'Events',
        'Test mode',
        'Webhooks',
      ]) {
        await nav.getByText(label, { exact: true }).first().waitFor();
      }
      await nav.getByText('Payments', { exact: true }).click();
      await nav.getByText('Create a payment', { exact: true }).click();
      await rec.page.waitForURL(/#tag\/Payments\/operation\/createPayment$/);
      const section = rec.page.locator('[data-section-id="tag/Payments/operation/createPayment"]');
      await section.getByRole('heading', { name: 'Create a payment' }).waitFor();
      // The body as fields, with their constraints; the errors this operation can answer and no other.
      await section.getByText('price_amount', { exact: true }).first().waitFor();
      await section.getByText('[ 1 .. 100000000 ]').first().waitFor();
      for (const status of ['201', '409', '422', '503'])
        await section
          .getByRole('button', { name: new RegExp(`^${status}`) })
          .first()
          .waitFor();
      assert.equal(await section.getByRole('button', { name: /^404/ }).count(), 0);
      // The request sample is the example of the document.
      await section.getByText('"Two mugs"').first().waitFor();
      await screenshot(rec.page, 'api-reference-create-payment');

      // A deep link opens on its operation.
      await rec.page.goto(`${t.urls.test}/docs#tag/Test-mode/operation/streamEvents`);
      await rec.page
        .locator('[data-section-id="tag/Test-mode/operation/streamEvents"]')
        .getByRole('heading', { name: 'Stream events (test API only)' })
        .waitFor();

      // Search (its index runs in a worker from a blob).
      await rec.page.getByPlaceholder('Search...').fill('refund');
      await nav.getByText('Refund a payment').first().waitFor();

      await rec.page.goto(`${t.urls.test}/docs#tag/Webhooks/paths/payment.paid/post`);
      await rec.page.getByText('Service-Signature').first().waitFor();
      await screenshot(rec.page, 'api-reference-webhook');

      const offHost = rec.requests.filter(
        (u) => /^https?:/.test(u) && new URL(u).origin !== new URL(t.urls.test).origin,
      );
      assert.deepEqual(offHost, [], 'every request goes to the Kasse host');
      assert.deepEqual(failed, []);
      assert.deepEqual(rec.errors, [], 'no console error, CSP violations included');
      assert.ok(rec.requests.some((u) => u.endsWith('/v1/openapi.json')));
    } finally {
      await rec.context.close();
    }
  });

  test('on a phone the reference fits the screen', async () => {
    const rec = await browser.open('phone');
    try {
      await rec.page.goto(`${t.urls.test}/docs`);
      await rec.page.getByRole('heading', { name: /Kasse test API/ }).waitFor({ timeout: 60_000 });
      const width = await rec.page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390 + 1, `no horizontal scrolling (${width}px)`);
      await screenshot(rec.page, 'api-reference-phone');
      assert.deepEqual(rec.errors, []);
    } finally {
      await rec.context.close();
    }
  });
});
