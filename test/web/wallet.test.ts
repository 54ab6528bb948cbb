/**
 * Browser-wallet payments on the checkout against a scripted EIP-1193 provider (window.ethereum injected before the
 * page loads): the buttons appear only with a wallet; "Pay with browser wallet" connects, switches to the coin's
 * chain and sends the exact ERC-20 transfer (or native value); "Pay by signature" signs EIP-3009
 * TransferWithAuthorization typed data (domain read from the token contract) and posts it to POST /p/<id>/gasless.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeFunctionData, erc20Abi, hashTypedData, type TypedDataDefinition } from 'viem';
import { launchBrowser, screenshot, startWebKasse, type TestBrowser, type WebKasse } from '../harness/browser.ts';

let w: WebKasse;
let b: TestBrowser;

before(async () => {
  w = await startWebKasse();
  b = await launchBrowser();
});
after(async () => {
  await b?.close();
  await w?.close();
});

const PAYER = '0x1111111111111111111111111111111111111111';

/** A scripted wallet: records every request in window.__calls; eth_call answers name() "USDC" and version() "2". */
const WALLET = `
(() => {
  const word = (n) => n.toString(16).padStart(64, '0');
  const abiString = (s) => { const hex = [...new TextEncoder().encode(s)].map((b) => b.toString(16).padStart(2, '0')).join('');
    return '0x' + word(32) + word(hex.length / 2) + hex.padEnd(Math.ceil(hex.length / 64) * 64 || 64, '0'); };
  window.__calls = [];
  let chain = '0x1';
  window.ethereum = { request: async ({ method, params }) => {
    window.__calls.push({ method, params });
    switch (method) {
      case 'eth_requestAccounts': return ['${PAYER}'];
      case 'eth_chainId': return chain;
      case 'wallet_switchEthereumChain': chain = params[0].chainId; return null;
      case 'eth_sendTransaction': return '0x' + 'ab'.repeat(32);
      case 'eth_call': {
        const sel = params[0].data;
        if (sel === '0x06fdde03') return abiString('USDC');
        if (sel === '0x54fd4d50') return abiString('2');
        throw Object.assign(new Error('execution reverted'), { code: -32000 });
      }
      case 'eth_signTypedData_v4': return '0x' + '12'.repeat(64) + '1b';
      default: throw new Error('unsupported ' + method);
    }
  } };
})();`;

async function payment(token: string) {
  const [chain] = token.split(':');
  const res = await w.m.test.post('/payments', {
    price_amount: 1234,
    price_currency: 'USD',
    order_id: 'w-1',
    chain,
    token,
  });
  assert.equal(res.status, 201);
  return res.body;
}

describe('browser wallet', () => {
  test('no wallet, no wallet buttons', async () => {
    const p = await payment('base:usdc');
    const { page } = await b.open('phone');
    await page.goto(p.checkout_url);
    await page.getByRole('heading', { name: 'Send exactly' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Pay with browser wallet' }).isVisible(), false);
    assert.equal(await page.getByRole('button', { name: /Pay by signature/ }).isVisible(), false);
    await page.context().close();
  });

  test('ERC-20 transfer: connect, switch chain, send the exact transfer', async () => {
    const p = await payment('base:usdc');
    const a = p.attempts[0];
    const { page, errors } = await b.open('phone');
    await page.addInitScript(WALLET);
    await page.goto(p.checkout_url);
    await page.getByRole('button', { name: 'Pay with browser wallet' }).click();
    await page.getByText('Transaction sent.').waitFor();
    const calls: Array<{ method: string; params: any[] }> = await page.evaluate(() => (window as any).__calls);
    assert.deepEqual(
      calls.map((c) => c.method),
      ['eth_requestAccounts', 'eth_chainId', 'wallet_switchEthereumChain', 'eth_sendTransaction'],
    );
    assert.deepEqual(calls[2]!.params, [{ chainId: '0x14a34' }]);
    const tx = calls[3]!.params[0];
    assert.equal(tx.from, PAYER);
    assert.equal(tx.to, '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'the USDC contract on Base Sepolia');
    assert.equal(tx.value, '0x0');
    const decoded = decodeFunctionData({ abi: erc20Abi, data: tx.data });
    assert.equal(decoded.functionName, 'transfer');
    assert.equal((decoded.args[0] as string).toLowerCase(), a.address.toLowerCase());
    assert.equal(decoded.args[1], BigInt(a.pay_amount));
    await screenshot(page, 'checkout-wallet-phone');
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  test('native coin: value is the exact amount in wei', async () => {
    const p = await payment('base:eth');
    const { page } = await b.open('phone');
    await page.addInitScript(WALLET);
    await page.goto(p.checkout_url);
    assert.equal(
      await page.getByRole('button', { name: /Pay by signature/ }).isVisible(),
      false,
      'gasless is for USDC only',
    );
    await page.getByRole('button', { name: 'Pay with browser wallet' }).click();
    await page.getByText('Transaction sent.').waitFor();
    const calls: any[] = await page.evaluate(() => (window as any).__calls);
    const tx = calls.find((c) => c.method === 'eth_sendTransaction').params[0];
    assert.equal(tx.to, p.attempts[0].address);
    assert.equal(BigInt(tx.value), BigInt(p.attempts[0].pay_amount));
    assert.equal(tx.data, undefined);
    await page.context().close();
  });

  test('pay by signature: EIP-3009 typed data posted to the gasless endpoint', async () => {
    const p = await payment('base:usdc');
    const a = p.attempts[0];
    const { page } = await b.open('phone');
    await page.addInitScript(WALLET);
    let posted: any = null;
    await page.route(`**/p/${p.id}/gasless`, async (route) => {
      posted = route.request().postDataJSON();
      await route.fulfill({
        status: 202,
        contentType: 'application/json',
        body: JSON.stringify({ tx_hash: `0x${'cd'.repeat(32)}`, status: 'broadcast' }),
      });
    });
    await page.goto(p.checkout_url);
    await page.getByRole('button', { name: 'Pay by signature (no gas fee)' }).click();
    await page.getByText('Signed. Kasse is sending your payment.').waitFor();
    const calls: any[] = await page.evaluate(() => (window as any).__calls);
    const sign = calls.find((c) => c.method === 'eth_signTypedData_v4');
    assert.equal(sign.params[0], PAYER);
    const typed = JSON.parse(sign.params[1]);
    assert.equal(typed.primaryType, 'TransferWithAuthorization');
    assert.deepEqual(typed.domain, {
      chainId: 84532,
      verifyingContract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      name: 'USDC',
      version: '2',
    });
    const validBefore = String(Math.floor(Date.parse(a.expires_at) / 1000));
    assert.deepEqual(
      { ...typed.message, nonce: 'n' },
      { from: PAYER, to: a.address, value: a.pay_amount, validAfter: '0', validBefore, nonce: 'n' },
    );
    // viem accepts it as EIP-712 typed data (the same hash a wallet signs).
    const { EIP712Domain: _, ...types } = typed.types;
    hashTypedData({ ...typed, types } as TypedDataDefinition);
    assert.deepEqual(posted, {
      attempt_id: a.id,
      from: PAYER,
      to: a.address,
      value: a.pay_amount,
      valid_after: 0,
      valid_before: Number(validBefore),
      nonce: typed.message.nonce,
      signature: `0x${'12'.repeat(64)}1b`,
    });
    assert.match(posted.nonce, /^0x[0-9a-f]{64}$/);
    await page.context().close();
  });

  test("a refused authorization shows the relay's message and the button can be used again", async () => {
    const p = await payment('base:usdc');
    const { page } = await b.open('phone');
    await page.addInitScript(WALLET);
    await page.goto(p.checkout_url);
    // The real relay refuses the fake signature (or the network it cannot reach) with an Error body.
    await page.getByRole('button', { name: 'Pay by signature (no gas fee)' }).click();
    const alert = page.locator('[data-wallet-error]');
    await page.waitForFunction(
      () => (document.querySelector('[data-wallet-error]')?.textContent ?? '') !== '',
      undefined,
      { timeout: 15_000 },
    );
    assert.ok(((await alert.textContent()) ?? '').length > 0);
    assert.equal(await page.getByRole('button', { name: 'Pay by signature (no gas fee)' }).isEnabled(), true);
    await page.context().close();
  });
});
