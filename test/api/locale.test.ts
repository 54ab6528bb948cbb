/**
 * The payer's language through the API: `locale` on CreatePayment, CreateLink and CreateSubscription is echoed in
 * the canonical spelling, inherited by the payments a link or a subscription creates, refused (400, the Error body
 * naming the supported tags, nothing created) when not supported; the checkout page speaks the payment's locale,
 * else the browser's; a subscription's invoice email arrives over SMTP in its language.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LOCALES } from '../../src/core/i18n/index.ts';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse, type TestKasse, type TestMerchant } from '../harness/app.ts';
import { assertError } from '../harness/expect.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../harness/smtp.ts';

let t: TestKasse;
let m: TestMerchant;
let smtp: SmtpReceiver;

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestKasse({
    env: { KASSE_SMTP_URL: smtp.url, KASSE_MAIL_FROM: 'Billing <billing@kasse.test>' },
    clock: new FakeClock('2026-03-01T09:00:00Z'),
  });
  m = await t.merchant({ name: 'Café Lumen', rateLimit: 100_000 });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

const payment = (extra: Record<string, unknown>) =>
  m.test.post('/payments', { price_amount: 1999, price_currency: 'USD', order_id: 'loc-1', ...extra });

/** A refused locale: 400 invalid_request on `locale`, the message listing every supported tag. */
function refusedLocale(res: { status: number; body: any }) {
  assertError(res, 400, 'invalid_request', 'locale');
  for (const l of LOCALES) assert.ok(res.body.error.message.includes(l), res.body.error.message);
}

async function page(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.urls.checkout}${path}`, { headers: { accept: 'text/html', ...headers } });
  return { status: res.status, text: await res.text() };
}

describe('payments', () => {
  test('locale is echoed in its canonical spelling, on creation and on reads; absent when not given', async () => {
    const created = await payment({ locale: 'pt-br', order_id: 'loc-echo' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.locale, 'pt-BR');
    assert.equal((await m.test.get(`/payments/${created.body.id}`)).body.locale, 'pt-BR');
    const plain = await payment({ order_id: 'loc-plain' });
    assert.equal(plain.status, 201);
    assert.equal('locale' in plain.body, false);
  });

  test('an unsupported tag is 400 naming the supported ones, and creates nothing', async () => {
    for (const bad of ['xx', 'pt', 'en-US-x-private', '', 'zh-TW'])
      refusedLocale(await payment({ locale: bad, order_id: 'loc-bad' }));
    assertError(await payment({ locale: 7, order_id: 'loc-bad' }), 400, 'invalid_request', 'locale');
    assert.deepEqual((await m.test.get('/payments?order_id=loc-bad')).body.data, []);
  });

  test('the checkout speaks the payment’s locale, else the browser’s, and the payer’s pick wins', async () => {
    const es = (await payment({ locale: 'es', description: 'Dos cafés', order_id: 'loc-page' })).body;
    const asked = await page(`/p/${es.id}`, { 'accept-language': 'de' });
    assert.match(asked.text, /<html lang="es" dir="ltr"/);
    assert.match(asked.text, /Elige una moneda/);
    const none = (await payment({ order_id: 'loc-page-2' })).body;
    assert.match(
      (await page(`/p/${none.id}`, { 'accept-language': 'fr-CA;q=0.4, pt;q=0.9' })).text,
      /<html lang="pt-BR"/,
    );
    assert.match((await page(`/p/${none.id}`)).text, /<html lang="en"/);
    const picked = await page(`/p/${es.id}?lang=de`, { 'accept-language': 'fr' });
    assert.match(picked.text, /<html lang="de"/);
    assert.match(picked.text, /Kryptowährung wählen/);
  });
});

describe('links', () => {
  test('locale is echoed and the payments a link creates inherit it; the page speaks it', async () => {
    const res = await m.test.post('/links', { kind: 'fixed', title: 'Poster', amount_usd_cents: 1500, locale: 'DE' });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.locale, 'de');
    assert.equal((await m.test.get(`/links/${res.body.id}`)).body.locale, 'de');
    const linkPage = await page(`/l/${res.body.slug}`, { 'accept-language': 'en' });
    assert.match(linkPage.text, /<html lang="de"/);
    const paid = await fetch(`${t.urls.checkout}/l/${res.body.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(paid.status, 201);
    const { payment_id } = await paid.json();
    assert.equal((await m.test.get(`/payments/${payment_id}`)).body.locale, 'de');
    const plain = await m.test.post('/links', { kind: 'fixed', title: 'Plain', amount_usd_cents: 1500 });
    assert.equal('locale' in plain.body, false);
  });

  test('an unsupported tag is 400 and creates no link', async () => {
    const before = (await m.test.get('/links')).body.data.length;
    refusedLocale(
      await m.test.post('/links', { kind: 'fixed', title: 'Bad', amount_usd_cents: 1500, locale: 'klingon' }),
    );
    assert.equal((await m.test.get('/links')).body.data.length, before);
  });
});

describe('subscriptions', () => {
  test('locale is echoed, its payments inherit it, and the invoice email arrives in Spanish', async () => {
    const email = 'cliente@example.com';
    const res = await m.test.post('/subscriptions', {
      customer_email: email,
      customer_name: 'Ana',
      title: 'Club del café',
      amount_usd_cents: 123456,
      interval: 'month',
      locale: 'es',
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.locale, 'es');
    const first = res.body.invoices[0];
    assert.equal((await m.test.get(`/payments/${first.payment_id}`)).body.locale, 'es');
    await t.kasse.email.runOnce();
    const mail = await smtp.waitFor((x) => x.to === email);
    // Intl separates amount and currency with a no-break space.
    const text = mail.text.replace(/\u00a0/g, ' ');
    assert.equal(
      mail.subject.replace(/\u00a0/g, ' '),
      'Factura de Café Lumen: Club del café, 1234,56 US$ vence el 1 de marzo de 2026',
    );
    assert.ok(
      text.includes('Hola, Ana: tu pago de 1234,56 US$ a Café Lumen por Club del café vence el 1 de marzo de 2026.'),
      mail.text,
    );
    assert.ok(mail.text.includes('Pagar ahora: '), mail.text);
    assert.ok(mail.text.includes('Ver o cancelar tu suscripción: '), mail.text);
    assert.match(mail.html, /<html lang="es" dir="ltr">/);
    const customerPage = /Ver o cancelar tu suscripción: (\S+)/.exec(mail.text)![1]!;
    const sub = await page(new URL(customerPage).pathname, { 'accept-language': 'en' });
    assert.match(sub.text, /<html lang="es"/);
    assert.match(sub.text, /Cancelar suscripción/);
  });

  test('an unsupported tag is 400 and creates no subscription', async () => {
    refusedLocale(
      await m.test.post('/subscriptions', {
        customer_email: 'nobody@example.com',
        title: 'T',
        amount_usd_cents: 100,
        interval: 'month',
        locale: 'es-ES-valencia',
      }),
    );
    assert.deepEqual((await m.test.get('/subscriptions?customer_email=nobody@example.com')).body.data, []);
  });
});

test('the OpenAPI document describes locale on the three create bodies', async () => {
  const doc = (await m.test.get('/openapi.json')).body;
  const body = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema;
  for (const path of ['/payments', '/links', '/subscriptions']) {
    const schema = body(path);
    const props = schema.properties ?? doc.components.schemas[schema.$ref?.split('/').pop()]?.properties;
    assert.ok(props?.locale, `${path} takes locale`);
    assert.match(props.locale.description, /pt-BR/);
  }
});
