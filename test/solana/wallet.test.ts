/**
 * The hosted checkout in Chromium with an injected test Solana wallet (announced through the Wallet Standard, as
 * real wallets announce themselves; its key stays in the test process, like a wallet extension's): "Pay with Solana
 * wallet" has the wallet sign and send the SOL transfer Kasse built, and "Pay USDC by signature" has a payer holding
 * 0 SOL sign a USDC transfer whose fee Kasse's hot wallet pays. Both payments are then found by the watcher on the
 * LiteSVM test node. The QR code encodes the Solana Pay URI. On a subscription's page the same wallet signs the
 * grant (a delegate approval Kasse relays as fee payer) and later its revoke.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  getBase64Decoder,
  getBase64Encoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
} from '@solana/kit';
import { launchBrowser, screenshot, type TestBrowser } from '../harness/browser.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';
import type { Wallet } from '../harness/solana-chain.ts';

let k: SolanaKasse;
let b: TestBrowser;

before(async () => {
  k = await startSolanaKasse();
  await k.tick();
  b = await launchBrowser();
});
after(async () => {
  await b?.close();
  await k?.close();
});

const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();

/** A Wallet Standard wallet whose signing and sending are bindings into the test process. */
function walletScript(address: string): string {
  return `(() => {
  const account = { address: ${JSON.stringify(address)}, publicKey: new Uint8Array(32), chains: ['solana:devnet', 'solana:mainnet'], features: ['solana:signTransaction', 'solana:signAndSendTransaction'] };
  const bytes = (t) => Uint8Array.from(atob(t), (c) => c.charCodeAt(0));
  const text = (u) => btoa(String.fromCharCode(...u));
  window.__walletCalls = [];
  const wallet = {
    version: '1.0.0', name: 'Kasse Test Wallet', icon: 'data:image/svg+xml;base64,PHN2Zy8+', chains: ['solana:devnet', 'solana:mainnet'], accounts: [account],
    features: {
      'standard:connect': { version: '1.0.0', connect: async () => { window.__walletCalls.push('connect'); return { accounts: [account] }; } },
      'solana:signTransaction': { version: '1.0.0', supportedTransactionVersions: ['legacy', 0], signTransaction: async (...inputs) => {
        window.__walletCalls.push('signTransaction');
        return Promise.all(inputs.map(async (i) => ({ signedTransaction: bytes(await window.__walletSign(text(i.transaction))) })));
      } },
      'solana:signAndSendTransaction': { version: '1.0.0', supportedTransactionVersions: ['legacy', 0], signAndSendTransaction: async (...inputs) => {
        window.__walletCalls.push('signAndSendTransaction');
        return Promise.all(inputs.map(async (i) => ({ signature: bytes(await window.__walletSend(text(i.transaction))) })));
      } },
    },
  };
  const register = (api) => api.register(wallet);
  window.addEventListener('wallet-standard:app-ready', (e) => register(e.detail));
  window.dispatchEvent(new CustomEvent('wallet-standard:register-wallet', { detail: register }));
})();`;
}

async function openWithWallet(payer: Wallet, url: string) {
  const rec = await b.open('phone');
  const sign = async (base64: string) => {
    const tx = getTransactionDecoder().decode(b64enc.encode(base64));
    return partiallySignTransaction([payer.keyPair], tx);
  };
  await rec.context.exposeBinding('__walletSign', async (_src, base64: string) =>
    b64.decode(getTransactionEncoder().encode(await sign(base64))),
  );
  await rec.context.exposeBinding('__walletSend', async (_src, base64: string) => {
    const signed = await sign(base64);
    await k.chain.rpc('sendTransaction', [b64.decode(getTransactionEncoder().encode(signed)), { encoding: 'base64' }]);
    return b64.decode(Buffer.from(getSignatureFromTransaction(signed)));
  });
  await rec.context.addInitScript(walletScript(payer.address));
  await rec.page.goto(url);
  return rec;
}

test('Pay with Solana wallet: the wallet signs and sends the SOL transfer Kasse built; the payment is paid', async () => {
  const res = await k.m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: 'wallet-sol',
    chain: 'solana',
    token: 'solana:sol',
  });
  const payer = await k.payer();
  const rec = await openWithWallet(payer, res.body.checkout_url);
  const button = rec.page.getByRole('button', { name: 'Pay with Solana wallet' });
  await button.waitFor({ state: 'visible' });
  assert.equal(await rec.page.getByRole('button', { name: /by signature/ }).count(), 0, 'SOL has no gasless button');
  const qrLabel = await rec.page
    .locator('.k-qrbox svg')
    .getAttribute('aria-label')
    .catch(() => null);
  assert.ok(qrLabel === null || qrLabel.includes(res.body.attempts[0].address));
  assert.match(
    (await rec.page.getByRole('link', { name: 'Open in wallet app' }).getAttribute('href')) ?? '',
    /^solana:.+&reference=/,
  );
  await button.click();
  await rec.page.getByText('Payment sent; waiting for the network…').waitFor();
  assert.deepEqual(await rec.page.evaluate(() => (window as unknown as { __walletCalls: string[] }).__walletCalls), [
    'connect',
    'signAndSendTransaction',
  ]);
  await k.chain.produce();
  await k.tick();
  assert.equal((await k.m.test.get(`/payments/${res.body.id}`)).body.status, 'paid');
  await rec.page
    .getByText(/paid|Payment received/i)
    .first()
    .waitFor({ timeout: 15_000 })
    .catch(() => {});
  await screenshot(rec.page, 'solana-wallet-paid');
  assert.deepEqual(rec.errors, []);
  await rec.context.close();
});

test('Pay USDC by signature: a payer holding 0 SOL signs, Kasse pays the fee and relays it', async () => {
  const res = await k.m.test.post('/payments', {
    price_amount: 2500,
    price_currency: 'USD',
    order_id: 'wallet-gasless',
    chain: 'solana',
    token: 'solana:usdc',
  });
  await k.send(); // Kasse opens the deposit key's token account
  await k.chain.produce();
  const payer = await k.chain.newWallet(0n);
  await k.chain.mintUsdc(k.funder, payer.address, 100_000_000n);
  await k.chain.produce();
  assert.equal(await k.chain.balance(payer.address), 0n);
  const rec = await openWithWallet(payer, res.body.checkout_url);
  const button = rec.page.getByRole('button', { name: 'Pay USDC by signature (no SOL needed)' });
  await button.waitFor({ state: 'visible' });
  await button.click();
  await rec.page.getByText('Payment sent; waiting for the network…').waitFor();
  assert.deepEqual(await rec.page.evaluate(() => (window as unknown as { __walletCalls: string[] }).__walletCalls), [
    'connect',
    'signTransaction',
  ]);
  await k.chain.produce();
  await k.tick();
  const pay = (await k.m.test.get(`/payments/${res.body.id}`)).body;
  assert.equal(pay.status, 'paid');
  assert.equal(pay.attempts[0].deposits[0].from, payer.address);
  assert.equal(await k.chain.balance(payer.address), 0n, 'the payer spent no SOL');
  assert.equal(await k.chain.tokenBalance(payer.address), 100_000_000n - 25_000_000n);
  await screenshot(rec.page, 'solana-gasless-paid');
  assert.deepEqual(rec.errors, []);
  await rec.context.close();
});

test('without a Solana wallet the buttons stay hidden; the QR code and the wallet-app link remain', async () => {
  const res = await k.m.test.post('/payments', {
    price_amount: 2500,
    price_currency: 'USD',
    order_id: 'no-wallet',
    chain: 'solana',
    token: 'solana:usdc',
  });
  const rec = await b.open('phone');
  await rec.page.goto(res.body.checkout_url);
  await rec.page.waitForLoadState('load');
  assert.equal(await rec.page.getByRole('button', { name: /Solana wallet|by signature/ }).count(), 0);
  assert.ok(await rec.page.locator('.k-qrbox svg').count());
  assert.deepEqual(rec.errors, []);
  await rec.context.close();
});

test('a subscription charged automatically: the wallet signs the approval on the subscription page, Kasse relays it and charges the period; the page turns it off the same way', async () => {
  const created = await k.m.test.post('/subscriptions', {
    customer_email: 'lena@example.com',
    title: 'Tea, weekly',
    amount_usd_cents: 900,
    interval: 'week',
    collection: 'charge_automatically',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const subscription = async () => (await k.m.test.get(`/subscriptions/${id}`)).body;
  const payer = await k.payer(0n, 50_000_000n);
  const rec = await openWithWallet(
    payer,
    k.t.kasse.subscriptionLinks.url(id, new Date(k.t.clock.now().getTime() + 90 * 86_400_000)),
  );
  const offer = rec.page.locator('.k-offer', { hasText: 'Solana (local test node)' });
  assert.match(await offer.innerText(), /the limit per period is kept by Kasse, not by the network/);
  await rec.page.getByRole('button', { name: 'Set up automatic payment on Solana (local test node)' }).click();
  await rec.page.getByText('Signed. Kasse is recording your permission…').waitFor();
  assert.deepEqual(await rec.page.evaluate(() => (window as unknown as { __walletCalls: string[] }).__walletCalls), [
    'connect',
    'signTransaction',
  ]);
  for (let i = 0; i < 20 && (await subscription()).periods_paid < 1; i++) {
    await k.send();
    await k.t.kasse.subscriptions.runDue();
    await k.chain.produce();
    await k.chain.finalize();
    k.t.clock.advance(5_000);
  }
  const s = await subscription();
  assert.equal(s.periods_paid, 1, JSON.stringify(s.charges));
  assert.equal(s.grant.payer, payer.address);
  assert.equal(await k.chain.tokenBalance(payer.address), 50_000_000n - 9_000_000n);
  assert.equal(await k.chain.balance(payer.address), 0n, 'the payer needed no SOL');

  await rec.page.reload();
  await rec.page.getByRole('heading', { name: 'Automatic payment is on' }).waitFor();
  await rec.page.getByRole('button', { name: 'Turn off automatic payment' }).click();
  await rec.page.getByText('Automatic payment is off.').first().waitFor();
  assert.equal((await subscription()).grant.status, 'revoked');
  assert.deepEqual(
    await rec.page.evaluate(() => (window as unknown as { __walletCalls: string[] }).__walletCalls),
    ['connect', 'signTransaction'],
    'since the reload: the revoke, signed only',
  );
  assert.deepEqual(rec.errors, []);
  await rec.context.close();
});
