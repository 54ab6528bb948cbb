/**
 * The merchant's brand in real Chromium: an owner uploads a logo and sets a colour on the Settings page (decoded and
 * re-encoded; SVG, oversized files — a 5 MB one answered with the limit and a way back —, files with another file
 * appended and files that are not the format they claim refused; CSRF and role checked; audited); the logo is served content-addressed
 * with immutable caching; the checkout, a link page, the POS terminal and the customer's subscription page show the
 * logo and colour under their unchanged strict CSP with no CSP error; mails to customers carry them; tax-invoice and
 * statement PDFs embed the logo.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import { pictureEnd } from '../../src/modules/merchants/branding.ts';
import { contentSecurityPolicy } from '../../src/web/page.ts';
import { screenshot, type RecordedPage, type TestBrowser, type WebKasse } from '../harness/browser.ts';
import { csrfOf, get, startDashboard, type DashboardTeam } from '../harness/dashboard.ts';
import { ok } from '../harness/expect.ts';
import { ARTIFACTS, readPdf } from '../harness/pdf.ts';

let d: DashboardTeam<'owner' | 'viewer'>;
let w: WebKasse;
let b: TestBrowser;
let base: string;
let ownerPage: RecordedPage;
const COLOR = '#0b5d3b';

before(async () => {
  d = await startDashboard({ owner: 'owner', viewer: 'viewer' });
  ({ w, b, base } = d);
  ownerPage = await d.as('owner');
});
after(() => d?.close());

/** A 900 × 600 PNG with EXIF metadata (a camera's, say). */
const bigPng = () =>
  sharp({ create: { width: 900, height: 600, channels: 3, background: { r: 11, g: 93, b: 59 } } })
    .withMetadata({ exif: { IFD0: { Copyright: 'secret-camera-serial-1234' } } })
    .png()
    .toBuffer();

/** Chooses `file` in the Settings page's logo form and submits it. */
async function upload(name: string, mimeType: string, buffer: Buffer): Promise<void> {
  const { page } = ownerPage;
  await page.goto(`${base}/dashboard/test/settings`);
  await page.getByLabel('Logo file').setInputFiles({ name, mimeType, buffer });
  await page.getByRole('button', { name: 'Upload logo' }).click();
  await page.waitForLoadState('domcontentloaded');
}

const logoOf = async () => (await w.t.kasse.merchants.get(w.m.id)).logoSha256;

/** A ZIP archive of one stored file, laid out as `zip` writes it (local header, data, central directory, end). */
function zipOf(name: string, data: Buffer): Buffer {
  const n = Buffer.from(name);
  const crc = crc32(data);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(n.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(n.length, 28);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + n.length, 12);
  end.writeUInt32LE(local.length + n.length + data.length, 16);
  return Buffer.concat([local, n, data, central, n, end]);
}

describe('Settings: logo and colour', () => {
  test('an SVG is refused with a clear message, and nothing changes', async () => {
    await upload(
      'logo.svg',
      'image/svg+xml',
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    );
    await ownerPage.page.getByRole('alert').waitFor();
    assert.match((await ownerPage.page.getByRole('alert').textContent()) ?? '', /PNG, JPEG or WebP.*SVG.*refused/);
    assert.equal(await logoOf(), null);
  });

  test('a file over 256 kB is refused', async () => {
    const noisy = await sharp(Buffer.from(Array.from({ length: 400 * 400 * 3 }, (_, i) => (i * 7919) % 251)), {
      raw: { width: 400, height: 400, channels: 3 },
    })
      .png({ compressionLevel: 0 })
      .toBuffer();
    assert.ok(noisy.length > 256 * 1024);
    await upload('big.png', 'image/png', noisy);
    assert.match((await ownerPage.page.getByRole('alert').textContent()) ?? '', /at most 256 kB/);
    assert.equal(await logoOf(), null);
  });

  test('a 5 MB file is refused with the limit and a way back to Settings', async () => {
    const { page } = ownerPage;
    await page.goto(`${base}/dashboard/test/settings`);
    await page
      .getByLabel('Logo file')
      .setInputFiles({ name: 'huge.png', mimeType: 'image/png', buffer: Buffer.alloc(5 * 1024 * 1024, 7) });
    const [res] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/dashboard/test/settings/logo')),
      page.getByRole('button', { name: 'Upload logo' }).click(),
    ]);
    assert.equal(res.status(), 413);
    await page.getByRole('heading', { name: 'File too large' }).waitFor();
    assert.match(
      await page.locator('main').innerText(),
      /The logo may be at most 256 kB; the file sent was larger \(5\.0 MB\)\. Nothing was changed\./,
    );
    await page.getByRole('link', { name: 'Back to Settings' }).click();
    await page.waitForURL(/\/dashboard\/test\/settings#logo$/);
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    assert.equal(await logoOf(), null);
  });

  test('a picture with another file appended, or not the format it claims, is refused; nothing changes', async () => {
    const picture = (format: 'png' | 'jpeg' | 'webp') =>
      sharp({ create: { width: 120, height: 40, channels: 3, background: '#0b5d3b' } })
        .withMetadata({ exif: { IFD0: { Copyright: 'camera' } } })
        [format](format === 'jpeg' ? { progressive: true } : {})
        .toBuffer();
    // What the structure walk reads as each picture's end is the end of the file sharp wrote.
    for (const format of ['png', 'jpeg', 'webp'] as const) {
      const bytes = await picture(format);
      assert.equal(pictureEnd(bytes, format), bytes.length, format);
    }
    const zip = zipOf('notes.txt', Buffer.from('not a picture\n'));
    for (const [format, name, type] of [
      ['png', 'logo.png', 'image/png'],
      ['jpeg', 'logo.jpg', 'image/jpeg'],
      ['webp', 'logo.webp', 'image/webp'],
    ] as const) {
      await upload(name, type, Buffer.concat([await picture(format), zip]));
      assert.match(
        (await ownerPage.page.getByRole('alert').textContent()) ?? '',
        new RegExp(`has ${zip.length} bytes of other data after the end of its (PNG|JPEG|WebP) picture`),
        name,
      );
    }
    await upload('logo.png', 'image/png', await picture('jpeg'));
    assert.match((await ownerPage.page.getByRole('alert').textContent()) ?? '', /sent as PNG but holds a JPEG picture/);
    // A browser that does not know the type sends the name's: a .webp file holding a PNG is refused too.
    await upload('logo.webp', 'application/octet-stream', await picture('png'));
    assert.match((await ownerPage.page.getByRole('alert').textContent()) ?? '', /sent as WebP but holds a PNG picture/);
    assert.equal(await logoOf(), null);
  });

  test('a form without the CSRF token, or from a role that may not, changes nothing', async () => {
    const png = await bigPng();
    const forged = await ownerPage.context.request.post(`${base}/dashboard/test/settings/logo`, {
      multipart: { logo: { name: 'a.png', mimeType: 'image/png', buffer: png } },
      maxRedirects: 0,
      headers: { origin: base },
    });
    assert.equal(forged.status(), 403);
    const vp = await d.as('viewer');
    try {
      await vp.page.goto(`${base}/dashboard/test/settings`);
      assert.equal(await vp.page.getByRole('button', { name: 'Upload logo' }).count(), 0);
      const res = await vp.context.request.post(`${base}/dashboard/test/settings/logo`, {
        multipart: { _csrf: await csrfOf(vp.page), logo: { name: 'a.png', mimeType: 'image/png', buffer: png } },
        maxRedirects: 0,
        headers: { origin: base },
      });
      // A refused form is shown after a redirect (POST/redirect/GET), with the refusal's status.
      assert.equal(res.status(), 303);
      const shown = await get(vp.page, new URL(res.headers().location!, base).toString());
      assert.equal(shown.status, 403);
      assert.match(shown.body, /Your role does not allow this action/);
    } finally {
      await vp.context.close();
    }
    assert.equal(await logoOf(), null);
  });

  test('a PNG is re-encoded (metadata dropped, at most 512 px) and served immutable from the checkout host', async () => {
    await upload('logo.png', 'image/png', await bigPng());
    await ownerPage.page.getByText('The logo was saved.').waitFor();
    const sha = await logoOf();
    assert.match(sha ?? '', /^[0-9a-f]{64}$/);
    const account = await ok(w.m.test.get('/account'));
    assert.equal(account.branding.logo_url, `${base}/brand/logo/${sha}.png`);
    const res = await fetch(account.branding.logo_url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const bytes = Buffer.from(await res.arrayBuffer());
    const meta = await sharp(bytes).metadata();
    assert.equal(meta.format, 'png');
    assert.deepEqual([meta.width, meta.height], [512, 341]);
    assert.equal(meta.exif, undefined, 'no EXIF served');
    assert.ok(!bytes.includes('secret-camera-serial-1234'));
    const [entry] = (await w.t.kasse.audit.list(w.m.id, { action: 'settings.branding' })).data;
    assert.deepEqual(entry!.details, { logo_sha256: { from: null, to: sha } });
    assert.equal((await fetch(`${base}/brand/logo/${'0'.repeat(64)}.png`)).status, 404);
    assert.equal((await fetch(`${base}/brand/logo/..%2f..%2fetc.png`)).status, 404);
  });

  test('a colour too light is refused on the form with the nearest that passes; a dark one is saved', async () => {
    const { page } = ownerPage;
    await page.goto(`${base}/dashboard/test/settings`);
    await page.getByLabel('Brand colour').fill('#7fd1ff');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /nearest colour that passes is #[0-9a-f]{6}/);
    assert.equal((await w.t.kasse.merchants.get(w.m.id)).brandColor, null);
    await page.getByLabel('Brand colour').fill(COLOR);
    await page.getByLabel('Underpayment tolerance (basis points)').fill('75');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings were saved.').waitFor();
    const saved = await w.t.kasse.merchants.get(w.m.id);
    assert.equal(saved.brandColor, COLOR);
    assert.equal(saved.underpaymentToleranceBps, 75);
    await w.m.test.patch('/account', { underpayment_tolerance_bps: 0 });
  });
});

/**
 * Opens `url` in `rec` (a fresh phone page unless given), checks the strict CSP, the logo and the accent colour, and
 * that the browser reported no error on it.
 */
async function assertBranded(url: string, name: string, given?: RecordedPage): Promise<void> {
  const rec = given ?? (await b.open('phone'));
  const errorsBefore = rec.errors.length;
  try {
    const res = await rec.page.goto(url);
    assert.equal(res!.status(), 200, url);
    await assertBrandedHere(rec, res!.headers()['content-security-policy']!, name);
    assert.deepEqual(rec.errors.slice(errorsBefore), [], `${name}: no console error (CSP violations included)`);
  } finally {
    if (!given) await rec.context.close();
  }
}

async function assertBrandedHere(rec: RecordedPage, csp: string, name: string): Promise<void> {
  assert.ok(csp === contentSecurityPolicy('none') || csp === contentSecurityPolicy('test'), csp);
  assert.match(csp, /style-src 'self'; img-src 'self' data:/);
  const logo = rec.page.getByRole('img', { name: 'Corner Café' });
  await logo.waitFor();
  await rec.page.waitForFunction(() => {
    const img = document.querySelector<HTMLImageElement>('img.k-logo');
    return !!img && img.complete && img.naturalWidth === 512;
  });
  const accent = await rec.page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--accent'));
  assert.equal(accent.trim(), COLOR, `${name}: the brand colour is the accent`);
  const button = rec.page.locator('.k-btn:not(.k-alt)').first();
  if ((await button.count()) > 0)
    assert.equal(
      await button.evaluate((el) => getComputedStyle(el).backgroundColor),
      'rgb(11, 93, 59)',
      `${name}: buttons in the brand colour`,
    );
  await screenshot(rec.page, `brand-${name}`);
}

describe('payer pages, mails and PDFs', () => {
  test('the checkout, a link page, the POS terminal and the subscription page show the brand', async () => {
    const p = await ok(
      w.m.test.post('/payments', { price_amount: 1500, price_currency: 'USD', order_id: 'b-1', description: 'Beans' }),
      201,
    );
    await assertBranded(p.checkout_url, 'checkout');
    const link = await ok(w.m.test.post('/links', { kind: 'fixed', title: 'Beans', amount_usd_cents: 1500 }), 201);
    await assertBranded(link.url, 'link');
    // The POS terminal is for signed-in staff: the owner's browser opens it and starts a sale.
    const pos = await ok(w.m.test.post('/links', { kind: 'pos', title: 'Front counter' }), 201);
    await assertBranded(pos.url, 'pos', ownerPage);
    for (const k of ['4', '5', '0']) await ownerPage.page.locator(`.k-keypad [data-key="${k}"]`).click();
    await ownerPage.page.getByRole('button', { name: 'Charge $4.50' }).click();
    await ownerPage.page.getByText('Scan to pay $4.50').waitFor();
    await assertBranded(ownerPage.page.url(), 'pos-sale', ownerPage);
    await ok(
      w.m.test.post('/subscriptions', {
        customer_email: 'ana@example.com',
        title: 'Coffee club',
        amount_usd_cents: 1900,
        interval: 'month',
      }),
      201,
    );
    const mail = (await w.t.kasse.email.list(w.m.id)).data.find((m) => m.to === 'ana@example.com')!;
    assert.ok(mail.html!.includes(`<img src="${base}/brand/logo/${await logoOf()}.png" alt="Corner Café"`), mail.html!);
    assert.ok(mail.html!.includes(`background:${COLOR}`), 'the mail button in the brand colour');
    const customerUrl = /See or cancel your subscription: (\S+)/.exec(mail.text)![1]!;
    await assertBranded(customerUrl, 'subscription');
  });

  test('tax-invoice and statement PDFs embed the logo', async () => {
    await ok(
      w.m.test.patch('/account', {
        tax_profile: {
          seller_name: 'Corner Café',
          address: '12 Marine Drive, Mumbai 400002',
          tax_id: '27AAPFU0939F1ZV',
          state_code: '27',
          invoice_prefix: 'CC',
        },
      }),
    );
    const p = await ok(w.m.test.post('/payments', { price_amount: 1000, price_currency: 'USD', order_id: 'i-1' }), 201);
    await ok(w.m.test.post(`/test/payments/${p.id}/simulate`, { outcome: 'paid' }));
    const inv = await ok(
      w.m.test.post(`/payments/${p.id}/tax_invoice`, { place_of_supply: 'intra', fx_rate: '83.00' }),
      201,
    );
    const res = await fetch(`${w.t.urls.test}/tax_invoices/${inv.id}/pdf`, {
      headers: { authorization: `Bearer ${w.m.testKey}` },
    });
    assertLogoIn(Buffer.from(await res.arrayBuffer()), 'brand-tax-invoice', /TAX INVOICE/);
    const statement = await ownerPage.context.request.get(`${base}/dashboard/test/statements/2026-03/pdf`);
    assert.equal(statement.status(), 200, await statement.text());
    assertLogoIn(await statement.body(), 'brand-statement', /Statement — March 2026/);
  });
});

/** The PDF still reads as text and holds one image: the logo at its stored size. */
function assertLogoIn(bytes: Buffer, name: string, text: RegExp): void {
  const read = readPdf(bytes, name);
  assert.match(read.text, text);
  const file = join(ARTIFACTS, `${name}.pdf`);
  writeFileSync(file, bytes);
  const list = execFileSync('pdfimages', ['-list', file], { encoding: 'utf8' }).trim().split('\n').slice(2);
  assert.equal(list.length, 1, list.join('\n'));
  assert.match(list[0]!, /\s512\s+341\s/);
}
