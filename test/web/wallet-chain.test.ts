/**
 * Browser-wallet payments end to end: real Chromium on the hosted checkout of a real Kasse whose test-mode `base`
 * network is a PRIVATE local Hardhat node (automine off, exact confirmation counts), paying from an injected
 * EIP-1193 wallet that is a real one: `window.ethereum.request` forwards every call (page.exposeFunction) to a
 * wallet implemented here in Node over a viem account. It signs and sends real transactions to the node, signs real
 * EIP-712 typed data, refuses what a wallet refuses (wrong account, unknown chain, typed data for another chain,
 * node calls before switching to the node's chain) and passes read calls (eth_call, …) through to the node. Nothing
 * the page asks for is scripted.
 *
 * - Browser wallet: a payment from the public API, the coin picked on the page (ETH, then USDC as an ERC-20
 *   transfer), "Pay with browser wallet" → connect, switch chain, eth_sendTransaction; blocks are mined and the
 *   watcher ticked by hand; the page shows the confirmations live, then Paid, then goes to success_url; the deposit,
 *   the webhooks and the merchant's balance are checked through the API.
 * - Pay by signature: a payer holding USDC and no ETH signs TransferWithAuthorization (domain read from the token
 *   through the wallet); Kasse's hot wallet relays it and pays the gas; the page shows Paid; the payer's ETH is still 0
 *   and its USDC dropped by exactly pay_amount.
 * - The page follows the money: USDC picked, then ETH, then the USDC address paid from outside the page; the page,
 *   and the live status feed of the checkout, the modal and the POS view, show USDC, what arrived and its
 *   confirmations, never the ETH choice (nor "3 of 3" of a choice with nothing on it); paid, the receipt is USDC.
 * - A subscription that charges itself: the payer grants once on the subscription page (the wallet signs the
 *   EIP-2612 permit and the collector's Terms; Kasse relays them and pays the gas); three weekly periods are charged
 *   as the chain's time and Kasse's clock reach them, with the payer's and the receiver's USDC and the merchant's
 *   balance exact; the payer revokes on chain between periods, and the fourth is not charged but invoiced. Exactly
 *   once: this process and a worker process (test/harness/subscription-worker.ts) race a due charge, and a worker
 *   killed (SIGKILL) the moment the node accepted its charge leaves the same transaction to be followed. Bad grants
 *   are refused naming the field with nothing stored; a short balance fails a charge and a top-up pays the retry.
 *
 * - Hold and capture: a manual payment; the payer's wallet signs ReceiveWithAuthorization for the escrow's collector
 *   (the page says it is charged only when the merchant captures, released by the deadline otherwise); Kasse's hot
 *   wallet submits authorize; the merchant captures partly, again, voids, and refunds through the escrow, with the
 *   payer's, the hot wallet's and the escrow's USDC and the merchant's balance exact after every step.
 *
 * Time: the relay compares the authorization's window with Kasse's (fake) clock and the token with block time, so
 * the fake clock is set to the latest block's timestamp before a payment is created; no check is loosened.
 * Waits are for page states (locators) and for requests the page makes; mining and watcher ticks are explicit.
 * The page's timers run on Playwright's clock and are paused just before the payment turns paid, so the paid page is
 * screenshotted before its 1.5 s redirect to success_url, which then fires when the test runs the page clock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  decodeFunctionData,
  encodeFunctionData,
  getAddress,
  hexToBigInt,
  maxUint256,
  type Address,
  type Hash,
  type Hex,
  type TypedDataDefinition,
} from 'viem';
import { createSseParser, type SseMessage } from '../../sdk/src/index.ts';
import { erc20Abi, subscriptionCollectorAbi } from '../../src/chains/evm/contracts.ts';
import { AUTH_CAPTURE_V1_1, placeAuthCaptureContracts } from '../../src/chains/evm/escrow.ts';
import { ETH_USD, startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import {
  foreignRequests,
  launchBrowser,
  screenshot,
  SIZES,
  startMerchantSite,
  type RecordedPage,
  type TestBrowser,
} from '../harness/browser.ts';
import { startSubscriptionWorker, type SubscriptionWorker } from '../harness/subscriptions.ts';
import { hardhatChain, startHardhatNode, TestChain, type HardhatNode, type TestWallet } from '../harness/hardhat.ts';

/** Confirmations every payment here needs (one tier), so the page's "n of 3" is exact. */
const CONFIRMATIONS = 3;
const PRICE_CENTS = 1500;
/** The merchant's credit for PRICE_CENTS at the default fee (1 %: 15 cents). */
const CREDIT_CENTS = 1485;
/** The same for a converted coin, less the default spread as well (0.5 % of 1,500 is 7.5, rounded half up: 8). */
const CONVERTED_CREDIT_CENTS = 1477;
const HARDHAT_CHAIN_ID = 31337;

let node: HardhatNode;
let k: EvmKasse;
let b: TestBrowser;
let shop: Awaited<ReturnType<typeof startMerchantSite>>;
/** Holds ETH for gas and USDC. */
let payer: TestWallet;
/** Holds USDC and no ETH at all. */
let gaslessPayer: TestWallet;
/** Grants recurring charges (holds USDC, and ETH only for revoking on chain itself). */
let subscriber: TestWallet;
/** The SubscriptionCollector the network names (`evm.subscription_collector`). */
let collector: Address;

/** Kasse's fake clock at the latest block's time (and the fake price feed with it), as the relay's checks need. */
async function alignClockWithChain(): Promise<void> {
  const block = await k.chain.client.getBlock({ blockTag: 'latest' });
  k.t.clock.set(Number(block.timestamp) * 1000);
  k.coingecko.setPrice('ethereum', ETH_USD, k.t.clock.now());
}

before(async () => {
  node = await startHardhatNode();
  // The escrow of hold and capture at its canonical addresses, as `kasse evm deploy-escrow` places it.
  const direct = new TestChain(node.url);
  const escrow = await placeAuthCaptureContracts({ request: (m, p) => direct.rpc(m, p) });
  collector = getAddress(await direct.deployContract(await direct.newWallet('10'), 'SubscriptionCollector'));
  k = await startEvmKasse({
    rpcUrl: node.url,
    tiers: [{ max_usd_cents: null, confirmations: CONFIRMATIONS }],
    finality: 6,
    evm: {
      auth_capture: {
        escrow: escrow.escrow,
        erc3009_collector: escrow.erc3009Collector,
        operator_refund_collector: escrow.operatorRefundCollector,
      },
      subscription_collector: collector,
    },
  });
  payer = await k.chain.newWallet('10');
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, payer.address, 1_000_000_000n));
  gaslessPayer = await k.chain.newWallet('0');
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, gaslessPayer.address, 1_000_000_000n));
  subscriber = await k.chain.newWallet('1');
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, subscriber.address, 100_000_000n));
  await alignClockWithChain();
  await k.tick(); // the watcher's cursor starts at the head
  // From here on nothing is mined unless the test mines it.
  await k.chain.setAutomine(false);
  b = await launchBrowser();
  shop = await startMerchantSite({
    '/thanks': {
      type: 'text/html; charset=utf-8',
      body: '<!doctype html><title>Thanks</title><h1>Thank you for your order</h1>',
    },
  });
});
after(async () => {
  await b?.close();
  await shop?.close();
  await k?.close();
  await node?.stop();
});

// ---------------------------------------------------------------------------------------------------------------
// The injected wallet
// ---------------------------------------------------------------------------------------------------------------

interface ProviderRpcError {
  code: number;
  message: string;
  data?: unknown;
}
type WalletAnswer = { result: unknown; events?: Array<[string, unknown]> } | { error: ProviderRpcError };

class WalletError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Chains this wallet knows: Ethereum (where it starts, like a freshly installed wallet; no node behind it) and the local node. */
const KNOWN_CHAINS = new Set([1, HARDHAT_CHAIN_ID]);

/** Node methods a wallet answers from its RPC. Nothing that signs: the node's own unlocked accounts are never used. */
const READ_METHODS = new Set([
  'eth_blockNumber',
  'eth_call',
  'eth_estimateGas',
  'eth_feeHistory',
  'eth_gasPrice',
  'eth_getBalance',
  'eth_getBlockByHash',
  'eth_getBlockByNumber',
  'eth_getCode',
  'eth_getLogs',
  'eth_getStorageAt',
  'eth_getTransactionByHash',
  'eth_getTransactionCount',
  'eth_getTransactionReceipt',
  'eth_maxPriorityFeePerGas',
  'net_version',
]);

/** Page side: an EIP-1193 provider whose `request` is answered by the Node wallet through an exposed function. */
const PROVIDER_SCRIPT = `(() => {
  const listeners = {};
  const provider = {
    isKasseTestWallet: true,
    async request(args) {
      if (!args || typeof args.method !== 'string') throw Object.assign(new Error('Invalid request'), { code: -32600 });
      const answer = await window.__kasseTestWallet(args.method, args.params === undefined ? [] : args.params);
      if (answer.error) throw Object.assign(new Error(answer.error.message), answer.error);
      for (const [event, value] of answer.events || []) for (const fn of listeners[event] || []) fn(value);
      return answer.result;
    },
    on(event, fn) { (listeners[event] = listeners[event] || []).push(fn); return provider; },
    removeListener(event, fn) { listeners[event] = (listeners[event] || []).filter((f) => f !== fn); return provider; },
  };
  Object.defineProperty(window, 'ethereum', { value: provider, configurable: false, writable: false });
})();`;

/** A browser wallet over one account, living in Node; attach it to a page before the page loads. */
class InjectedWallet {
  /** Every method the page asked for, in order. */
  readonly calls: string[] = [];
  /** Hashes of the transactions it sent. */
  readonly sent: Hash[] = [];
  /** The typed data it signed (as the page sent it). */
  readonly signed: Array<{ domain: Record<string, unknown>; primaryType: string; message: Record<string, unknown> }> =
    [];
  private chainId = 1;
  private connected = false;

  constructor(private readonly account: TestWallet) {}

  get address(): Address {
    return this.account.address;
  }

  async attach(page: Page): Promise<void> {
    await page.exposeFunction('__kasseTestWallet', (method: string, params: unknown) => this.handle(method, params));
    await page.addInitScript(PROVIDER_SCRIPT);
  }

  private async handle(method: string, params: unknown): Promise<WalletAnswer> {
    this.calls.push(method);
    const events: Array<[string, unknown]> = [];
    try {
      const result = await this.dispatch(method, Array.isArray(params) ? params : [], events);
      return { result: result ?? null, events };
    } catch (err) {
      if (err instanceof WalletError)
        return {
          error: { code: err.code, message: err.message, ...(err.data !== undefined ? { data: err.data } : {}) },
        };
      return { error: { code: -32603, message: err instanceof Error ? err.message : String(err) } };
    }
  }

  private async dispatch(method: string, params: any[], events: Array<[string, unknown]>): Promise<unknown> {
    switch (method) {
      case 'eth_requestAccounts':
        if (!this.connected)
          events.push(['connect', { chainId: this.hexChainId() }], ['accountsChanged', [this.address]]);
        this.connected = true;
        return [this.address];
      case 'eth_accounts':
        return this.connected ? [this.address] : [];
      case 'eth_chainId':
        return this.hexChainId();
      case 'wallet_switchEthereumChain': {
        const id = Number(BigInt(String(params[0]?.chainId)));
        if (!KNOWN_CHAINS.has(id))
          throw new WalletError(
            4902,
            `Unrecognized chain ID ${params[0]?.chainId}. Try adding the chain using wallet_addEthereumChain first.`,
          );
        if (id !== this.chainId) events.push(['chainChanged', `0x${id.toString(16)}`]);
        this.chainId = id;
        return null;
      }
      case 'eth_sendTransaction': {
        const tx = params[0] ?? {};
        this.authorized(tx.from);
        this.onNodeChain();
        const hash = await this.account.sendTransaction({
          account: this.account.account,
          chain: hardhatChain,
          to: tx.to as Address,
          value: tx.value ? hexToBigInt(tx.value as Hex) : 0n,
          data: (tx.data as Hex | undefined) || undefined,
          gas: tx.gas ? hexToBigInt(tx.gas as Hex) : undefined,
        });
        this.sent.push(hash);
        return hash;
      }
      case 'eth_signTypedData_v4': {
        this.authorized(params[0]);
        const typed = typeof params[1] === 'string' ? JSON.parse(params[1]) : params[1];
        // Like MetaMask: typed data bound to another chain than the selected one is refused.
        if (typed?.domain?.chainId !== undefined && Number(typed.domain.chainId) !== this.chainId) {
          throw new WalletError(
            -32602,
            `Provided chainId "${typed.domain.chainId}" must match the active chainId "${this.chainId}"`,
          );
        }
        const { EIP712Domain: _domainType, ...types } = typed.types as Record<string, unknown>;
        const signature = await this.account.signTypedData({
          account: this.account.account,
          domain: typed.domain,
          types,
          primaryType: typed.primaryType,
          message: typed.message,
        } as TypedDataDefinition & { account: TestWallet['account'] });
        this.signed.push({ domain: typed.domain, primaryType: typed.primaryType, message: typed.message });
        return signature;
      }
      default:
        if (!READ_METHODS.has(method)) throw new WalletError(4200, `The wallet does not support ${method}.`);
        this.onNodeChain();
        return this.forward(method, params);
    }
  }

  private hexChainId(): string {
    return `0x${this.chainId.toString(16)}`;
  }

  private authorized(from: unknown): void {
    if (!this.connected) throw new WalletError(4100, 'The requested account has not been authorized by the user.');
    if (typeof from !== 'string' || from.toLowerCase() !== this.address.toLowerCase())
      throw new WalletError(4100, `Unknown account ${String(from)}.`);
  }

  /** Only the local node is reachable: on any other chain the wallet has no RPC. */
  private onNodeChain(): void {
    if (this.chainId !== HARDHAT_CHAIN_ID)
      throw new WalletError(4901, `The wallet is not connected to chain ${this.hexChainId()}.`);
  }

  /** A read call passed through to the node as is, its JSON-RPC error (code, message, revert data) included. */
  private async forward(method: string, params: unknown[]): Promise<unknown> {
    const res = await fetch(node.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: unknown; error?: ProviderRpcError };
    if (body.error) throw new WalletError(body.error.code, body.error.message, body.error.data);
    return body.result;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

let orderSeq = 0;
async function createPayment(label: string) {
  const order = `${label}-${++orderSeq}`;
  const successUrl = `${shop.url}/thanks?order=${order}`;
  const res = await k.m.test.post('/payments', {
    price_amount: PRICE_CENTS,
    price_currency: 'USD',
    order_id: order,
    success_url: successUrl,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.deepEqual(res.body.attempts, [], 'no coin yet: the payer picks it on the page');
  return { id: res.body.id as string, checkoutUrl: res.body.checkout_url as string, successUrl };
}

async function getPayment(id: string) {
  const res = await k.m.test.get(`/payments/${id}`);
  assert.equal(res.status, 200);
  return res.body;
}

async function getBalance(): Promise<{
  available_usd_cents: number;
  custody: Array<{ token: string; amount: string }>;
}> {
  const res = await k.m.test.get('/balance');
  assert.equal(res.status, 200);
  return res.body;
}
const custodyOf = (bal: Awaited<ReturnType<typeof getBalance>>, token: string) =>
  BigInt(bal.custody.find((c) => c.token === token)?.amount ?? '0');

/** Waits until the page's live status line (role=status) contains `text`. */
async function statusShows(page: Page, text: string): Promise<void> {
  await page.getByRole('status').filter({ hasText: text }).waitFor({ timeout: 15_000 });
}

/** Opens the checkout with the wallet injected and picks `token` in the coin picker. */
async function openAndPick(
  size: 'phone' | 'desktop',
  wallet: InjectedWallet,
  p: Awaited<ReturnType<typeof createPayment>>,
  token: string,
) {
  const rec = await b.open(size);
  await wallet.attach(rec.page);
  // The page's timers run on Playwright's clock, so the paid page's delayed redirect fires when the test says so.
  await rec.page.clock.install();
  await rec.page.goto(p.checkoutUrl);
  await rec.page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
  await rec.page
    .locator('fieldset', { hasText: 'Base (local Hardhat)' })
    .locator(`button[name="token"][value="${token}"]`)
    .click();
  await rec.page.getByRole('heading', { name: 'Send exactly' }).waitFor();
  const attempt = (await getPayment(p.id)).attempts[0];
  assert.equal(attempt.token, token);
  assert.equal(await rec.page.locator('#k-address').textContent(), attempt.address);
  return { rec, attempt };
}

/** Mines one block, ticks the watcher, and waits for the page to show `n` confirmations (or Paid at the last). */
async function confirmOneBlock(page: Page, n: number): Promise<void> {
  if (n === CONFIRMATIONS) {
    // Freeze the page's timers before it learns it is paid: its redirect then waits for clock.runFor below.
    const pageNow = await page.evaluate(() => Date.now());
    await page.clock.pauseAt(pageNow + 1000);
  }
  await k.chain.mine(1);
  const r = await k.tick();
  assert.equal(r.reorgFrom, null);
  assert.equal(r.scanned, 1);
  if (n < CONFIRMATIONS) {
    await statusShows(page, `Payment detected. ${n} of ${CONFIRMATIONS} confirmations.`);
    await page.getByRole('heading', { name: 'Payment detected' }).waitFor();
  } else {
    await page.getByRole('heading', { name: 'Paid' }).waitFor({ timeout: 15_000 });
    await statusShows(page, 'Paid. Thank you!');
  }
}

/**
 * The paid page at both sizes (its timers frozen), then the redirect to success_url exactly 1.5 s of page time
 * later, and a clean record: no console or page errors, no dialogs, and no request to any host but the checkout
 * (the wallet talked to the node, not the page).
 */
async function finishPaid(
  rec: RecordedPage,
  p: { checkoutUrl: string; successUrl: string },
  name: string,
  size: 'phone' | 'desktop',
) {
  const { page } = rec;
  const other = size === 'phone' ? 'desktop' : 'phone';
  await screenshot(page, `${name}-${size}`);
  await page.setViewportSize(SIZES[other]);
  await page.getByRole('heading', { name: 'Paid' }).waitFor();
  await screenshot(page, `${name}-${other}`);
  await page.setViewportSize(SIZES[size]);
  assert.equal(await page.getByRole('link', { name: 'Continue' }).getAttribute('href'), p.successUrl);
  await page.clock.runFor(1499);
  assert.equal(page.url(), p.checkoutUrl);
  assert.ok(!rec.requests.includes(p.successUrl), 'no redirect before 1.5 s');
  const beforeRedirect = [...rec.requests];
  await page.clock.runFor(1);
  await page.waitForURL(p.successUrl, { timeout: 15_000 });
  await page.getByRole('heading', { name: 'Thank you for your order' }).waitFor();
  assert.deepEqual(foreignRequests(beforeRedirect, k.t.urls.checkout), []);
  assert.deepEqual(rec.errors, []);
  assert.deepEqual(rec.dialogs, []);
}

/** The first state the payment's live status feed sends (`query`: the view's own parameters, as its page asks). */
async function feedState(id: string, query: string): Promise<Record<string, any>> {
  const ctl = new AbortController();
  // A connection of its own, let go with the feed, so the server's close waits for nothing.
  const agent = new Agent();
  try {
    const res = await undiciFetch(`${k.t.urls.checkout}/p/${id}/events?${query}`, {
      signal: ctl.signal,
      dispatcher: agent,
    });
    assert.equal(res.status, 200);
    const messages: SseMessage[] = [];
    const parser = createSseParser((m) => messages.push(m));
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    while (!messages.some((m) => m.event === 'state')) {
      const { value, done } = await reader.read();
      assert.ok(!done, 'the feed ended before sending the state');
      parser.push(decoder.decode(value, { stream: true }));
    }
    return JSON.parse(messages.find((m) => m.event === 'state')!.data);
  } finally {
    ctl.abort();
    void agent.destroy();
  }
}

const receiptOf = (hash: Hash) => k.chain.rpc<unknown>('eth_getTransactionReceipt', [hash]);

// ---------------------------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------------------------

describe('pay with browser wallet on the local chain', () => {
  for (const { token, size } of [
    { token: 'base:eth', size: 'phone' },
    { token: 'base:usdc', size: 'desktop' },
  ] as const) {
    test(`${token}: the wallet sends the exact transfer, the page follows the confirmations to Paid and success_url`, async () => {
      const symbol = token.split(':')[1]!;
      const p = await createPayment(`wallet-${symbol}`);
      const wallet = new InjectedWallet(payer);
      const { rec, attempt } = await openAndPick(size, wallet, p, token);
      const { page } = rec;
      const amount = BigInt(attempt.pay_amount);
      const balance0 = await getBalance();
      const eth0 = await k.chain.balance(payer.address);
      const usdc0 = await k.chain.tokenBalance(k.usdc, payer.address);
      const gasless = page.getByRole('button', { name: 'Pay by signature (no gas fee)' });
      assert.equal(await gasless.isVisible(), token === 'base:usdc', 'pay by signature is offered for USDC only');

      await page.getByRole('button', { name: 'Pay with browser wallet' }).click();
      await statusShows(page, 'Transaction sent. Waiting for the network to see it.');
      assert.deepEqual(wallet.calls, [
        'eth_requestAccounts',
        'eth_chainId',
        'wallet_switchEthereumChain',
        'eth_sendTransaction',
      ]);
      assert.equal(wallet.sent.length, 1);
      const hash = wallet.sent[0]!;

      // The transaction the page built is in the node's pool, not mined yet, and pays exactly pay_amount.
      const tx = await k.chain.client.getTransaction({ hash });
      assert.equal(tx.blockNumber, null);
      assert.equal(getAddress(tx.from), payer.address);
      if (token === 'base:eth') {
        assert.equal(getAddress(tx.to!), getAddress(attempt.address));
        assert.equal(tx.value, amount);
      } else {
        assert.equal(getAddress(tx.to!), getAddress(k.usdc));
        assert.equal(tx.value, 0n);
        const call = decodeFunctionData({ abi: erc20Abi, data: tx.input });
        assert.equal(call.functionName, 'transfer');
        assert.deepEqual(call.args, [getAddress(attempt.address), amount]);
      }
      assert.equal(await receiptOf(hash), null);
      await k.tick();
      assert.equal((await getPayment(p.id)).attempts[0].deposits.length, 0, 'nothing is seen before it is mined');

      for (let n = 1; n <= CONFIRMATIONS; n++) {
        await confirmOneBlock(page, n);
        if (n === 1) await screenshot(page, `wallet-chain-${symbol}-confirming-${size}`);
      }
      await finishPaid(rec, p, `wallet-chain-${symbol}-paid`, size);

      const pay = await getPayment(p.id);
      assert.equal(pay.status, 'paid');
      assert.equal(pay.paid_attempt_id, attempt.id);
      const receipt = await k.chain.receipt(hash);
      assert.equal(pay.attempts[0].deposits.length, 1);
      const dep = pay.attempts[0].deposits[0];
      assert.equal(dep.tx_hash, hash);
      assert.equal(dep.token, token);
      assert.equal(dep.amount, amount.toString());
      assert.equal(getAddress(dep.from), payer.address);
      assert.equal(dep.block_number, receipt.blockNumber.toString());
      assert.equal(dep.confirmations, CONFIRMATIONS);
      assert.equal(dep.status, 'confirmed');
      assert.equal(pay.attempts[0].received_amount, amount.toString());
      assert.equal(pay.attempts[0].overpaid, false);
      const events = k.eventTypes(p.id);
      assert.deepEqual(events.slice(events.indexOf('payment.confirming')), ['payment.confirming', 'payment.paid']);

      // The merchant is credited the price less the fee (and the conversion spread for ETH), and holds exactly the coins that arrived.
      const balance1 = await getBalance();
      assert.deepEqual([k.t.config.feeBps, k.t.config.swapFeeBps], [100, 50], 'the default fee and spread');
      assert.equal(
        balance1.available_usd_cents - balance0.available_usd_cents,
        token === 'base:eth' ? CONVERTED_CREDIT_CENTS : CREDIT_CENTS,
      );
      assert.equal(custodyOf(balance1, token) - custodyOf(balance0, token), amount);
      // The payer paid the amount plus the gas of its own transaction.
      const gas = receipt.gasUsed * receipt.effectiveGasPrice;
      if (token === 'base:eth') {
        assert.equal(await k.chain.balance(payer.address), eth0 - amount - gas);
      } else {
        assert.equal(await k.chain.balance(payer.address), eth0 - gas);
        assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), usdc0 - amount);
      }
      await rec.context.close();
    });
  }
});

describe('pay by signature on the local chain', () => {
  test('a payer with USDC and no ETH signs; the hot wallet relays and pays the gas; the page shows Paid', async () => {
    await alignClockWithChain();
    const p = await createPayment('gasless');
    const wallet = new InjectedWallet(gaslessPayer);
    const { rec, attempt } = await openAndPick('desktop', wallet, p, 'base:usdc');
    const { page } = rec;
    const amount = BigInt(attempt.pay_amount);
    const sender = k.adapter.sender!;
    assert.equal(await k.chain.balance(gaslessPayer.address), 0n, 'the payer holds no ETH');
    const usdc0 = await k.chain.tokenBalance(k.usdc, gaslessPayer.address);
    const hotEth0 = await k.chain.balance(sender.address);
    const balance0 = await getBalance();

    const relayed = page.waitForResponse(
      (r) => r.url() === `${k.t.urls.checkout}/p/${p.id}/gasless` && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Pay by signature (no gas fee)' }).click();
    const answer = await relayed;
    const body = await answer.json();
    assert.equal(answer.status(), 202, JSON.stringify(body));
    assert.equal(body.status, 'broadcast');
    assert.match(body.tx_hash, /^0x[0-9a-f]{64}$/);
    await statusShows(page, 'Signed. Kasse is sending your payment.');

    // The page connected, switched to the node's chain, read the token's EIP-712 domain through the wallet and asked
    // for a signature of exactly the coin choice; the payer sent no transaction.
    // (TestUSDC answers eip712Domain(), ERC-5267, so one eth_call reads the whole domain.)
    assert.deepEqual(wallet.calls, [
      'eth_requestAccounts',
      'eth_chainId',
      'wallet_switchEthereumChain',
      'eth_call',
      'eth_signTypedData_v4',
    ]);
    assert.deepEqual(wallet.sent, []);
    assert.equal(wallet.signed.length, 1);
    const signed = wallet.signed[0]!;
    assert.equal(signed.primaryType, 'TransferWithAuthorization');
    assert.deepEqual(
      { ...signed.domain, verifyingContract: getAddress(String(signed.domain.verifyingContract)) },
      { chainId: HARDHAT_CHAIN_ID, verifyingContract: getAddress(k.usdc), name: 'Test USDC', version: '2' },
    );
    assert.equal(signed.message.from, gaslessPayer.address);
    assert.equal(signed.message.to, attempt.address);
    assert.equal(signed.message.value, attempt.pay_amount);
    assert.equal(signed.message.validBefore, String(Math.floor(Date.parse(attempt.expires_at) / 1000)));

    // The relay is the hot wallet's transaction, in the pool until mined.
    const hash = body.tx_hash as Hash;
    const tx = await k.chain.client.getTransaction({ hash });
    assert.equal(tx.blockNumber, null);
    assert.equal(getAddress(tx.from), getAddress(sender.address));
    assert.equal(getAddress(tx.to!), getAddress(k.usdc));
    await k.tick();
    assert.equal((await getPayment(p.id)).attempts[0].deposits.length, 0);

    for (let n = 1; n <= CONFIRMATIONS; n++) {
      await confirmOneBlock(page, n);
      if (n === 1) await screenshot(page, 'wallet-chain-gasless-confirming-desktop');
    }
    await finishPaid(rec, p, 'wallet-chain-gasless-paid', 'desktop');

    const pay = await getPayment(p.id);
    assert.equal(pay.status, 'paid');
    const dep = pay.attempts[0].deposits[0];
    assert.equal(pay.attempts[0].deposits.length, 1);
    assert.equal(dep.tx_hash, hash);
    assert.equal(dep.amount, amount.toString());
    assert.equal(
      getAddress(dep.from),
      gaslessPayer.address,
      'the Transfer is from the payer, though the hot wallet sent the transaction',
    );
    assert.equal(dep.status, 'confirmed');

    const receipt = await k.chain.receipt(hash);
    assert.equal(await k.chain.balance(gaslessPayer.address), 0n, 'the payer still holds no ETH');
    assert.equal(
      await k.chain.tokenBalance(k.usdc, gaslessPayer.address),
      usdc0 - amount,
      'the payer paid exactly pay_amount',
    );
    assert.equal(
      await k.chain.balance(sender.address),
      hotEth0 - receipt.gasUsed * receipt.effectiveGasPrice,
      'the hot wallet paid the gas',
    );
    const balance1 = await getBalance();
    assert.equal(k.t.config.feeBps, 100, 'the default fee');
    assert.equal(balance1.available_usd_cents - balance0.available_usd_cents, CREDIT_CENTS);
    assert.equal(custodyOf(balance1, 'base:usdc') - custodyOf(balance0, 'base:usdc'), amount);

    // The relay settles as sent in the hot-wallet sender.
    await sender.runDue();
    const relay = await k.t.kasse.db
      .selectFrom('evm_gasless')
      .select('transfer_id')
      .where('attempt_id', '=', attempt.id)
      .executeTakeFirstOrThrow();
    const transfer = (await sender.get(relay.transfer_id))!;
    assert.equal(transfer.purpose, 'gasless');
    assert.equal(transfer.tx_hash, hash);
    assert.equal(transfer.status, 'sent');
    await rec.context.close();
  });
});

describe('the page follows the money', () => {
  test('USDC chosen, then ETH, then the USDC address paid: every view shows USDC, what arrived and its confirmations', async () => {
    const p = await createPayment('follow');
    const { rec, attempt: usdc } = await openAndPick('desktop', new InjectedWallet(payer), p, 'base:usdc');
    const { page } = rec;

    // The payer changes their mind: ETH, a new address.
    const chosen = page.waitForResponse(
      (r) => r.url() === `${k.t.urls.checkout}/p/${p.id}/attempts` && r.request().method() === 'POST',
    );
    await page.getByText('Pay with another coin').click();
    await page.locator('.k-more button[name="token"][value="base:eth"]').click();
    assert.equal((await chosen).status(), 201);
    const eth = (await getPayment(p.id)).attempts[1];
    assert.equal(eth.token, 'base:eth');
    await page.locator('#k-address', { hasText: eth.address }).waitFor();

    // …but pays the USDC address from before, in full.
    const hash = await k.chain.sendToken(payer, k.usdc, usdc.address, BigInt(usdc.pay_amount));
    await confirmOneBlock(page, 1);
    const main = page.locator('#k-main');
    const seen = `We see your payment of ${usdc.pay_amount_display} USDC.`;
    await main.getByText(seen).waitFor();
    assert.equal(await main.locator('.k-confirms').textContent(), `1 of ${CONFIRMATIONS} confirmations`);
    assert.equal(
      await main.locator('.k-deps li').textContent(),
      `${usdc.pay_amount_display} USDC · pending · view transaction`,
    );
    assert.ok(!(await main.textContent())!.includes('ETH'), 'nothing of the ETH choice is shown');

    // The live status feed says the same to every view: the checkout, the modal and the POS sale screen.
    const line = `Payment detected. 1 of ${CONFIRMATIONS} confirmations.`;
    for (const query of ['view=checkout', 'view=checkout&embed=1', 'view=pos&slug=']) {
      const state = await feedState(p.id, query);
      assert.equal(state.status, 'confirming', query);
      assert.equal(state.phase, 'seen', query);
      assert.equal(state.say, line, query);
      if (!query.startsWith('view=pos')) {
        assert.ok(state.html.includes(seen), `${query}: ${state.html}`);
        assert.ok(state.html.includes(`1 of ${CONFIRMATIONS} confirmations`), query);
        assert.ok(!state.html.includes('ETH'), query);
      }
    }

    for (let n = 2; n <= CONFIRMATIONS; n++) await confirmOneBlock(page, n);
    const paidWith = `${usdc.pay_amount_display} USDC on Base (local Hardhat)`;
    assert.equal(await page.locator('.k-receipt dd', { hasText: 'USDC' }).textContent(), paidWith);
    const pay = await getPayment(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.paid_attempt_id, usdc.id);
    assert.equal(pay.attempts[0].deposits[0].tx_hash, hash);
    assert.deepEqual(rec.errors, []);
    await rec.context.close();
  });
});

describe('hold and capture on the local chain', () => {
  const usdcOf = (a: Address) => k.chain.tokenBalance(k.usdc, a);

  test('the payer authorizes by signature; the merchant captures partly, again, voids and refunds; balances exact', async () => {
    await alignClockWithChain();
    const res = await k.m.test.post('/payments', {
      price_amount: PRICE_CENTS,
      price_currency: 'USD',
      order_id: `hold-${++orderSeq}`,
      capture_method: 'manual',
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const p = res.body;
    const wallet = new InjectedWallet(gaslessPayer);
    const rec = await b.open('desktop');
    await wallet.attach(rec.page);
    const { page } = rec;
    await page.goto(p.checkout_url);
    await page.getByRole('heading', { name: 'Choose a coin' }).waitFor();
    const offered = await page
      .locator('button[name="token"]')
      .evaluateAll((bs) => bs.map((b) => b.getAttribute('value')));
    assert.deepEqual(offered, ['base:usdc'], 'only a coin that can be held is offered');
    await page.locator('button[name="token"][value="base:usdc"]').click();
    await page.getByRole('heading', { name: 'Authorize the payment' }).waitFor();
    const attempt = (await getPayment(p.id)).attempts[0];
    const amount = BigInt(attempt.pay_amount);
    const sender = k.adapter.sender!;
    assert.equal(getAddress(attempt.address), sender.address, 'captures are paid to the hot wallet');
    const deadline = new Date(p.authorization.capture_before);
    const note = await page.locator('[data-hold-note]').textContent();
    assert.match(
      note!,
      new RegExp(
        `^Authorize ${attempt.pay_amount_display} USDC: you are charged only when the merchant captures it, and it is released by .+ otherwise\\.$`,
      ),
    );
    assert.ok(note!.includes(String(deadline.getUTCFullYear())), note!);
    assert.equal(await page.locator('#k-address').count(), 0, 'no address to send to');

    const payer0 = await usdcOf(gaslessPayer.address);
    const hot0 = await usdcOf(sender.address);
    const balance0 = await getBalance();
    const posted = page.waitForResponse((r) => r.url() === `${k.t.urls.checkout}/p/${p.id}/hold`);
    await page.getByRole('button', { name: 'Authorize with wallet (no gas fee)' }).click();
    const answer = await posted;
    assert.equal(answer.status(), 202, await answer.text());
    await statusShows(page, 'Signed. Kasse is locking your authorization.');
    const signed = wallet.signed.at(-1)!;
    assert.equal(signed.primaryType, 'ReceiveWithAuthorization');
    assert.equal(getAddress(String(signed.message.to)), AUTH_CAPTURE_V1_1.erc3009Collector);
    assert.equal(signed.message.value, attempt.pay_amount);
    assert.deepEqual(wallet.sent, [], 'the payer sent no transaction');

    // Kasse's hot wallet submits authorize; confirmed, the payment is authorized and the money sits in escrow.
    await k.settleQueue();
    await page.getByRole('heading', { name: 'Authorized' }).waitFor({ timeout: 15_000 });
    let pay = await getPayment(p.id);
    assert.equal(pay.status, 'authorized');
    assert.equal(await usdcOf(gaslessPayer.address), payer0 - amount);
    assert.equal(await k.chain.balance(gaslessPayer.address), 0n, 'the payer paid no gas');
    assert.deepEqual(k.eventTypes(p.id), ['payment.authorized']);
    await screenshot(page, 'wallet-chain-hold-authorized-desktop');

    // Capture 600 cents, then 400 more; then void the rest.
    const part1 = (amount * 600n) / BigInt(PRICE_CENTS);
    const part2 = (amount * 400n) / BigInt(PRICE_CENTS);
    assert.equal((await k.m.test.post(`/payments/${p.id}/capture`, { amount_usd_cents: 600 })).status, 200);
    await k.settleQueue();
    assert.equal((await k.m.test.post(`/payments/${p.id}/capture`, { amount_usd_cents: 400 })).status, 200);
    await k.settleQueue();
    pay = await getPayment(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.authorization.captured_usd_cents, 1000);
    assert.equal(await usdcOf(sender.address), hot0 + part1 + part2);
    assert.equal((await getBalance()).available_usd_cents - balance0.available_usd_cents, 594 + 396);
    assert.equal((await k.m.test.post(`/payments/${p.id}/void`)).status, 200);
    await k.settleQueue();
    pay = await getPayment(p.id);
    assert.equal(pay.authorization.voided, true);
    assert.equal(await usdcOf(gaslessPayer.address), payer0 - part1 - part2, 'the rest went back to the payer');
    assert.equal(await usdcOf(AUTH_CAPTURE_V1_1.escrow), 0n);
    assert.deepEqual(k.eventTypes(p.id), [
      'payment.authorized',
      'payment.paid',
      'payment.captured',
      'payment.captured',
    ]);

    // The refund goes back through the escrow (within refund_before), from the hot wallet's captured money.
    const refund = await k.m.test.post(`/payments/${p.id}/refund`, {});
    assert.equal(refund.status, 202, JSON.stringify(refund.body));
    assert.equal(refund.body.amount, (part1 + part2).toString());
    await k.settleQueue();
    pay = await getPayment(p.id);
    assert.equal(pay.status, 'refunded');
    assert.equal(await usdcOf(gaslessPayer.address), payer0, 'the payer has everything back');
    assert.equal(await usdcOf(sender.address), hot0);
    assert.equal((await getBalance()).available_usd_cents, balance0.available_usd_cents);
    const refundTx = await k.t.kasse.db
      .selectFrom('evm_transfers')
      .select(['to_address', 'status'])
      .where('id', '=', refund.body.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual(refundTx, { to_address: AUTH_CAPTURE_V1_1.escrow, status: 'sent' }, 'through the escrow');
    assert.deepEqual(rec.errors, []);
    await rec.context.close();
  });
});

describe('a subscription that charges itself on the local chain', () => {
  const WEEK_S = 7 * 86_400;
  const AMOUNT = 15_000_000n; // PRICE_CENTS in USDC at the peg

  const subscription = async (id: string) => {
    const res = await k.m.test.get(`/subscriptions/${id}`);
    assert.equal(res.status, 200);
    return res.body;
  };
  /** Runs the hot wallet's sender, then the subscriptions' due work (scheduler, relays, charges); delivers webhooks. */
  async function runDue() {
    await k.adapter.sender!.runDue();
    const r = await k.t.kasse.subscriptions.runDue();
    await k.t.kasse.webhooks.drain();
    return r;
  }
  /**
   * Runs the due work and mines a block 5 s later (Kasse's clock with it, so a charge followed every 5 s is looked at
   * again) until `done` holds: the relays need CONFIRMATIONS blocks.
   */
  async function mineUntil(done: () => Promise<boolean>, what: string) {
    for (let i = 0; i < 4 * CONFIRMATIONS; i++) {
      await runDue();
      if (await done()) return;
      await timeReaches((await k.chain.now()) + 5);
    }
    assert.fail(`${what}: not reached after ${4 * CONFIRMATIONS} blocks`);
  }
  /** The chain's next block at `at` (Unix seconds), then Kasse's clock at it. */
  async function timeReaches(at: number) {
    await k.chain.rpc('evm_setNextBlockTimestamp', [at]);
    await k.chain.mine(1);
    await alignClockWithChain();
  }

  /** A fresh payer holding `usdc` (smallest units) and no ETH. */
  async function fundedPayer(usdc: bigint): Promise<TestWallet> {
    const w = await k.chain.newWallet('0');
    const hash = await k.chain.mint(k.payer, k.usdc, w.address, usdc);
    await k.chain.mine(1);
    await k.chain.receipt(hash);
    return w;
  }
  /** A weekly subscription charged automatically, and its page's URL. */
  async function chargedSubscription(email: string, cents = PRICE_CENTS) {
    const res = await k.m.test.post('/subscriptions', {
      customer_email: email,
      title: 'Tea, weekly',
      amount_usd_cents: cents,
      interval: 'week',
      grace_days: 2,
      collection: 'charge_automatically',
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const page = k.t.kasse.subscriptionLinks.url(res.body.id, new Date(k.t.clock.now().getTime() + 90 * 86_400_000));
    return { id: res.body.id as string, startedAt: Date.parse(res.body.started_at) / 1000, page };
  }
  const postJson = async (url: string, body: unknown) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: new URL(url).origin },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  /** What the page asks a wallet to sign, signed by `w` (typed data as the page passes it to the wallet). */
  async function signedOffer(page: string, w: TestWallet) {
    const offer = await postJson(`${page}/grant/offer`, { network: 'base', payer: w.address });
    assert.equal(offer.status, 200, JSON.stringify(offer.body));
    const sign = (typed: any) => {
      const { EIP712Domain: _d, ...types } = typed.types;
      return w.account.signTypedData!({
        domain: typed.domain,
        types,
        primaryType: typed.primaryType,
        message: typed.message,
      });
    };
    const o = offer.body;
    const signatures = {
      permit: await sign(o.sign.permit),
      terms: await sign(o.sign.terms),
      permit_deadline: o.sign.permit_deadline,
    };
    const permitValue = o.sign.permit_value;
    return {
      body: {
        network: 'base',
        payer: w.address,
        terms: o.terms,
        signatures: { ...signatures, permit_value: permitValue },
      },
      offer: o,
      sign,
    };
  }
  /** The mail of `kind` in the outbox for subscription `id`. */
  const mailsOf = async (id: string, kind: string, period?: number) =>
    (
      await k.t.kasse.db
        .selectFrom('email_outbox')
        .select(['kind', 'dedupe_key'])
        .where('kind', '=', kind)
        .where(
          'dedupe_key',
          'like',
          period === undefined ? `subscription:${id}:%` : `subscription:${id}:period:${period}:%`,
        )
        .execute()
    ).length;
  const allowance = async (owner: string) =>
    k.chain.client.readContract({
      address: k.usdc as Address,
      abi: erc20Abi,
      functionName: 'allowance',
      args: [owner as Address, collector],
    });
  const hotNonce = async () =>
    Number(
      await k.chain.client.getTransactionCount({ address: k.adapter.sender!.address as Address, blockTag: 'pending' }),
    );
  const chargeTransfers = async (period: number, id: string) => {
    const charges = (await subscription(id)).charges.filter((c: any) => c.period === period);
    return k.t.kasse.db
      .selectFrom('evm_transfers')
      .select(['id', 'status', 'tx_hash'])
      .where('purpose', '=', 'charge')
      .where(
        'id',
        'in',
        charges.map((c: any) => c.id),
      )
      .execute();
  };

  /**
   * Two other Kasse processes on this database working this chain (test/harness/subscription-worker.ts): one plain,
   * one that dies (SIGKILL) as soon as the node accepted a transaction of its hot wallet.
   */
  let started: { a: SubscriptionWorker; killed: SubscriptionWorker } | null = null;
  function workers() {
    if (started) return started;
    const opts = {
      databaseUrl: k.t.databaseUrl,
      secrets: k.secrets,
      env: {
        KASSE_NETWORKS_FILE: k.networksFile,
        KASSE_COINGECKO_URL: k.coingecko.url,
        KASSE_BINANCE_URL: k.binance.url,
      },
    };
    started = {
      a: startSubscriptionWorker(opts),
      killed: startSubscriptionWorker({ ...opts, crash: 'after-send' }),
    };
    for (const w of Object.values(started)) w.ready.catch(() => {});
    return started;
  }
  after(() => {
    for (const w of Object.values(started ?? {}))
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill();
  });

  test('granted once on the page with the wallet: three periods charge themselves, exact on chain and in the ledger; a revoke on chain stops the fourth', async () => {
    await alignClockWithChain();
    const created = await k.m.test.post('/subscriptions', {
      customer_email: 'asha@example.com',
      title: 'Coffee beans, weekly',
      amount_usd_cents: PRICE_CENTS,
      interval: 'week',
      grace_days: 2,
      collection: 'charge_automatically',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.id as string;
    assert.equal(created.body.grant.status, 'none');
    const startedAt = Date.parse(created.body.started_at) / 1000;
    const usdc0 = await k.chain.tokenBalance(k.usdc, subscriber.address);
    const eth0 = await k.chain.balance(subscriber.address);
    const credit0 = (await getBalance()).available_usd_cents;

    // The payer opens the subscription page (the link its emails carry) and grants with the browser wallet.
    const wallet = new InjectedWallet(subscriber);
    const rec = await b.open('desktop');
    await wallet.attach(rec.page);
    const url = k.t.kasse.subscriptionLinks.url(id, new Date(k.t.clock.now().getTime() + 90 * 86_400_000));
    await rec.page.goto(url);
    await rec.page.getByRole('heading', { name: 'Pay automatically' }).waitFor();
    const offer = rec.page.locator('.k-offer', { hasText: 'Base (local Hardhat)' });
    assert.match(await offer.innerText(), /Paid only to .+ address 0x[0-9a-fA-F]{40}\./);
    await rec.page.getByRole('button', { name: 'Set up automatic payment on Base (local Hardhat)' }).click();
    await rec.page.getByText('Your permission is being recorded on the network.').waitFor({ timeout: 15_000 });
    assert.deepEqual(
      wallet.signed.map((x) => x.primaryType),
      ['Permit', 'Terms'],
      'the permit, then the terms: nothing sent from the wallet',
    );
    assert.deepEqual(wallet.sent, []);
    const [permit, termsSigned] = wallet.signed as [(typeof wallet.signed)[0], (typeof wallet.signed)[0]];
    const terms = termsSigned.message as Record<string, string>;
    assert.equal(getAddress(String(permit.message.spender)), collector);
    assert.equal(String(permit.message.value), String(12n * AMOUNT), 'the grant total: twelve periods');
    assert.equal(getAddress(terms.payer!), subscriber.address);
    assert.equal(getAddress(terms.token!), getAddress(k.usdc));
    assert.equal(String(terms.amountPerPeriod), AMOUNT.toString());
    assert.equal(Number(terms.period), WEEK_S);
    assert.equal(Number(terms.start), startedAt);
    assert.equal(Number(terms.end), startedAt + 12 * WEEK_S);
    assert.equal(getAddress(String(termsSigned.domain.verifyingContract)), collector);
    const receiver = getAddress(terms.receiver!);
    const receiverUsdc0 = await k.chain.tokenBalance(k.usdc, receiver);

    // Kasse relays the grant (its hot wallet pays the gas); once it has its confirmations the due period is charged.
    await mineUntil(async () => (await subscription(id)).periods_paid === 1, 'period 1 charged');
    let s = await subscription(id);
    assert.equal(s.grant.status, 'active');
    assert.equal(s.grant.payer, subscriber.address);
    assert.equal(s.grant.amount_per_period, AMOUNT.toString());
    const txs: string[] = [s.charges[0].transaction];

    for (let period = 2; period <= 3; period++) {
      await timeReaches(startedAt + (period - 1) * WEEK_S + 1);
      await mineUntil(async () => (await subscription(id)).periods_paid === period, `period ${period} charged`);
      s = await subscription(id);
      txs.push(s.charges.at(-1).transaction);
    }
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.attempt, c.status]),
      [
        [1, 1, 'succeeded'],
        [2, 1, 'succeeded'],
        [3, 1, 'succeeded'],
      ],
      'each period charged once',
    );
    assert.equal(s.grant.charges, 3);
    assert.equal(s.periods_invoiced, 3);
    // Exact on chain: the payer paid three periods and no gas; the merchant's address received them.
    assert.equal(await k.chain.tokenBalance(k.usdc, subscriber.address), usdc0 - 3n * AMOUNT);
    assert.equal(await k.chain.tokenBalance(k.usdc, receiver), receiverUsdc0 + 3n * AMOUNT);
    assert.equal(await k.chain.balance(subscriber.address), eth0, 'the payer spent no gas');
    // Exact in the ledger: each period's payment is paid by its charge, the merchant credited three times.
    for (const [i, inv] of s.invoices.entries()) {
      assert.equal(inv.status, 'paid');
      const p = await getPayment(inv.payment_id);
      assert.deepEqual(
        p.attempts.at(-1).deposits.map((d: any) => [d.tx_hash, d.amount, d.token]),
        [[txs[i], AMOUNT.toString(), 'base:usdc']],
      );
      const tx = await k.chain.client.getTransaction({ hash: txs[i] as Hash });
      assert.equal(tx.to && getAddress(tx.to), collector, 'charged through the collector');
      assert.notEqual(getAddress(tx.from), subscriber.address);
    }
    assert.equal((await getBalance()).available_usd_cents, credit0 + 3 * CREDIT_CENTS);
    const hooks = () => k.receiver!.events.filter((e) => e.data?.id === id).map((e) => e.type as string);
    assert.deepEqual(hooks(), [
      'subscription.created',
      'subscription.invoiced',
      'subscription.granted',
      'subscription.paid',
      'subscription.invoiced',
      'subscription.paid',
      'subscription.invoiced',
      'subscription.paid',
    ]);

    // The page shows the grant in force and its charges.
    await rec.page.reload();
    await rec.page.getByRole('heading', { name: 'Automatic payment is on' }).waitFor();
    assert.match(await rec.page.locator('.k-grant').innerText(), /Charges so far\s*3/);
    await screenshot(rec.page, 'subscription-charged-desktop');

    // The payer revokes on chain, with their own wallet, between the third and fourth periods.
    const onChainTerms = {
      payer: getAddress(terms.payer!),
      token: getAddress(terms.token!),
      receiver,
      operator: getAddress(terms.operator!),
      amountPerPeriod: BigInt(terms.amountPerPeriod!),
      period: Number(terms.period),
      start: Number(terms.start),
      end: Number(terms.end),
      salt: terms.salt as Hex,
    };
    const revoke = await subscriber.writeContract({
      address: collector,
      abi: subscriptionCollectorAbi,
      functionName: 'revoke',
      args: [onChainTerms],
      account: subscriber.account,
      chain: hardhatChain,
    });
    await k.chain.mine(1);
    await k.chain.receipt(revoke);

    await timeReaches(startedAt + 3 * WEEK_S + 1);
    await runDue();
    s = await subscription(id);
    assert.equal(s.periods_invoiced, 4);
    assert.equal(s.periods_paid, 3, 'the fourth is not charged');
    assert.equal(s.grant.status, 'revoked');
    assert.deepEqual(
      [s.charges.at(-1).period, s.charges.at(-1).status, s.charges.at(-1).failure_reason],
      [4, 'failed', 'grant_revoked'],
    );
    assert.equal(s.charges.at(-1).transaction, null, 'refused before anything was sent');
    assert.equal(s.invoices[3].status, 'waiting', 'the period is to be paid by hand');
    assert.equal(await k.chain.tokenBalance(k.usdc, subscriber.address), usdc0 - 3n * AMOUNT);
    assert.deepEqual(hooks().slice(8), [
      'subscription.invoiced',
      'subscription.charge_failed',
      'subscription.grant_ended',
    ]);
    // The fifth period is invoiced by email like any subscription's: no charge is even tried.
    await timeReaches(startedAt + 4 * WEEK_S + 1);
    await runDue();
    s = await subscription(id);
    assert.equal(s.periods_invoiced, 5);
    assert.equal(s.charges.length, 4);
    await rec.page.reload();
    await rec.page.getByText('Automatic payment is off.').waitFor();
    assert.deepEqual(rec.errors, []);
    await rec.page.close();
  });

  test('exactly once: two processes race a due charge; one killed (SIGKILL) just after the node took its charge is followed to the outcome, never sent again', async () => {
    const payer = await fundedPayer(100_000_000n);
    await alignClockWithChain();
    const sub = await chargedSubscription('race@example.com');
    const grant = await signedOffer(sub.page, payer);
    const res = await postJson(`${sub.page}/grant`, grant.body);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 1, 'period 1 charged');
    const usdc1 = await k.chain.tokenBalance(k.usdc, payer.address);

    const { a, killed } = workers();
    try {
      await Promise.all([a.ready, killed.ready]);
      // Period 2 falls due; this process and another run their pass at the same moment: one charge, one transaction.
      await timeReaches(sub.startedAt + WEEK_S + 1);
      const nonce2 = await hotNonce();
      const [ra, rb] = await Promise.all([a.go(k.t.clock.now()).then((r) => r.result), runDue()]);
      assert.equal((await subscription(sub.id)).periods_invoiced, 2);
      assert.equal(ra.charges.submitted + rb.charges.submitted, 1, JSON.stringify([ra, rb]));
      assert.equal(await hotNonce(), nonce2 + 1, 'one charge transaction');
      await mineUntil(async () => (await subscription(sub.id)).periods_paid === 2, 'period 2 charged');
      assert.equal((await chargeTransfers(2, sub.id)).length, 1);

      // Period 3: the process dies the moment the node accepted its charge, before it recorded the broadcast.
      await timeReaches(sub.startedAt + 2 * WEEK_S + 1);
      const nonce3 = await hotNonce();
      const { signal } = await killed.go(k.t.clock.now());
      assert.equal(signal, 'SIGKILL');
      assert.equal(await hotNonce(), nonce3 + 1, 'the charge is in the node’s pool');
      const [left] = await chargeTransfers(3, sub.id);
      assert.equal(left!.status, 'signed', 'its sending was never recorded');
      let s = await subscription(sub.id);
      assert.deepEqual([s.charges.at(-1).period, s.charges.at(-1).status], [3, 'pending']);
      // Its leases run out; this process follows the same transaction to its outcome.
      await timeReaches((await k.chain.now()) + 121);
      await mineUntil(async () => (await subscription(sub.id)).periods_paid === 3, 'period 3 charged');
      s = await subscription(sub.id);
      const transfers = await chargeTransfers(3, sub.id);
      assert.deepEqual(
        transfers.map((x) => [x.status, x.tx_hash]),
        [['sent', left!.tx_hash]],
        'the very transaction the killed process signed',
      );
      assert.equal(s.charges.at(-1).transaction, left!.tx_hash);
      assert.equal(await hotNonce(), nonce3 + 1, 'nothing sent again');
      assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), usdc1 - 2n * AMOUNT, 'charged once each');
      assert.deepEqual(
        s.charges.map((c: any) => [c.period, c.status]),
        [
          [1, 'succeeded'],
          [2, 'succeeded'],
          [3, 'succeeded'],
        ],
      );
    } finally {
      for (const w of [a, killed]) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill();
    }
  });

  test('bad grants are refused with the Error body and store nothing; a short balance fails the charge, a top-up within grace pays the retry', async () => {
    const payer = await fundedPayer(20_000_000n); // one period and a third
    await alignClockWithChain();
    const sub = await chargedSubscription('short@example.com');
    const good = await signedOffer(sub.page, payer);
    const grants = async () =>
      Number(
        (
          await k.t.kasse.db
            .selectFrom('evm_transfers')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('purpose', '=', 'grant')
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await grants();
    const other = (await k.chain.newWallet('0')).address;
    const refused = async (body: any, param: string) => {
      const r = await postJson(`${sub.page}/grant`, body);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param);
      assert.equal(typeof r.body.error.message, 'string');
    };
    const b = good.body;
    await refused({ ...b, terms: { ...b.terms, receiver: other } }, 'terms.receiver');
    await refused({ ...b, terms: { ...b.terms, amount_per_period: '30000000' } }, 'terms.amount_per_period');
    await refused({ ...b, terms: { ...b.terms, period_seconds: 86_400 } }, 'terms.period_seconds');
    // Terms signed for another receiver, sent beside Kasse's terms.
    const foreign = { ...good.offer.sign.terms, message: { ...good.offer.sign.terms.message, receiver: other } };
    await refused({ ...b, signatures: { ...b.signatures, terms: await good.sign(foreign) } }, 'signatures.terms');
    // An expired permit: its deadline has passed by the time it arrives.
    const expired = Math.floor(k.t.clock.now().getTime() / 1000) - 1;
    const stale = {
      ...good.offer.sign.permit,
      message: { ...good.offer.sign.permit.message, deadline: String(expired) },
    };
    await refused(
      { ...b, signatures: { ...b.signatures, permit: await good.sign(stale), permit_deadline: String(expired) } },
      'signatures.permit_deadline',
    );
    assert.equal((await subscription(sub.id)).grant.status, 'none');
    assert.equal(await grants(), before, 'nothing recorded, nothing relayed');

    assert.equal((await postJson(`${sub.page}/grant`, b)).status, 202);
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 1, 'period 1 charged');
    // Period 2: 5 USDC left of the 15 due. The charge fails before anything is sent; the retry is an hour later.
    await timeReaches(sub.startedAt + WEEK_S + 1);
    await runDue();
    let s = await subscription(sub.id);
    const [failed, retry] = s.charges.slice(1);
    assert.deepEqual(
      [failed.status, failed.failure_reason, failed.transaction, retry.status, retry.attempt],
      ['failed', 'insufficient_funds', null, 'pending', 2],
    );
    const hook = k.receiver!.events.find((e) => e.type === 'subscription.charge_failed' && e.data?.id === sub.id);
    assert.equal(hook?.data.charges[1].failure_reason, 'insufficient_funds');
    assert.equal(s.status, 'active');
    // Topped up; the retry an hour after the due time pays the period.
    const hash = await k.chain.mint(k.payer, k.usdc, payer.address, 10_000_000n);
    await k.chain.mine(1);
    await k.chain.receipt(hash);
    await timeReaches(sub.startedAt + WEEK_S + 3601);
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 2, 'period 2 charged on retry');
    s = await subscription(sub.id);
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.attempt, c.status]),
      [
        [1, 1, 'succeeded'],
        [2, 1, 'failed'],
        [2, 2, 'succeeded'],
      ],
    );
    assert.equal(s.status, 'active');
    assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), 0n, '20 + 10 − 2 × 15');
  });

  test('a weekly renewal checked while the latest block is still just before its due time waits for the next block: never failed, no mail; then charged once', async () => {
    const payer = await fundedPayer(100_000_000n);
    await alignClockWithChain();
    const sub = await chargedSubscription('boundary@example.com');
    const grant = await signedOffer(sub.page, payer);
    assert.equal((await postJson(`${sub.page}/grant`, grant.body)).status, 202);
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 1, 'period 1 charged');
    const usdc1 = await k.chain.tokenBalance(k.usdc, payer.address);
    // The latest block is 3 s before period 2's due time; Kasse's clock is 1 s past it.
    const due2 = sub.startedAt + WEEK_S;
    await k.chain.rpc('evm_setNextBlockTimestamp', [due2 - 3]);
    await k.chain.mine(1);
    k.t.clock.set((due2 + 1) * 1000);
    await runDue();
    let s = await subscription(sub.id);
    assert.equal(s.periods_invoiced, 2);
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.attempt, c.status]),
      [
        [1, 1, 'succeeded'],
        [2, 1, 'pending'],
      ],
      'not failed: looked at again',
    );
    assert.equal(
      k.receiver!.events.filter((e) => e.type === 'subscription.charge_failed' && e.data?.id === sub.id).length,
      0,
    );
    assert.equal(await mailsOf(sub.id, 'subscription.charge_failed'), 0, 'no pay-by-hand mail');
    // A block past the due time: the period's slot is open on chain, and the charge goes through once.
    await timeReaches(due2 + 61);
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 2, 'period 2 charged');
    s = await subscription(sub.id);
    assert.deepEqual(
      s.charges.map((c: any) => [c.period, c.attempt, c.status]),
      [
        [1, 1, 'succeeded'],
        [2, 1, 'succeeded'],
      ],
    );
    assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), usdc1 - AMOUNT);
  });

  test('one payer, two grants: the second permit adds to the allowance the first still needs, and both go on being charged', async () => {
    const SMALL = 1_000_000n; // 100 cents
    const payer = await fundedPayer(100_000_000n);
    await alignClockWithChain();
    const a = await chargedSubscription('two-grants-a@example.com');
    const ga = await signedOffer(a.page, payer);
    assert.equal(ga.offer.sign.permit_value, String(12n * AMOUNT), 'nothing allowed before');
    assert.equal((await postJson(`${a.page}/grant`, ga.body)).status, 202);
    await mineUntil(async () => (await subscription(a.id)).periods_paid === 1, 'A: period 1 charged');
    assert.equal(await allowance(payer.address), 11n * AMOUNT);

    const b = await chargedSubscription('two-grants-b@example.com', 100);
    const gb = await signedOffer(b.page, payer);
    assert.equal(gb.offer.sign.permit_value, String(11n * AMOUNT + 12n * SMALL), 'what A still needs, plus B’s total');
    // A permit for B's total alone would take A's allowance away: refused, nothing recorded.
    const { permit_value: _v, ...without } = gb.body.signatures;
    const short = await postJson(`${b.page}/grant`, { ...gb.body, signatures: without });
    assert.equal(short.status, 400, JSON.stringify(short.body));
    assert.equal(short.body.error.param, 'signatures.permit_value');
    assert.equal((await subscription(b.id)).grant.status, 'none');
    assert.equal((await postJson(`${b.page}/grant`, gb.body)).status, 202);
    await mineUntil(async () => (await subscription(b.id)).periods_paid === 1, 'B: period 1 charged');
    assert.equal(await allowance(payer.address), 11n * AMOUNT + 11n * SMALL);

    // Period 2 of both: A is still charged, and B too.
    await timeReaches(Math.max(a.startedAt, b.startedAt) + WEEK_S + 1);
    await mineUntil(
      async () => (await subscription(a.id)).periods_paid === 2 && (await subscription(b.id)).periods_paid === 2,
      'period 2 of A and B charged',
    );
    for (const id of [a.id, b.id])
      assert.deepEqual(
        (await subscription(id)).charges.map((c: any) => [c.period, c.status]),
        [
          [1, 'succeeded'],
          [2, 'succeeded'],
        ],
      );
    assert.equal(await allowance(payer.address), 10n * AMOUNT + 10n * SMALL);
  });

  test('revoked on the page while its charge waits in the transfer queue (the hot wallet short of gas): the charge is refused, never sent', async () => {
    const payer = await fundedPayer(100_000_000n);
    await alignClockWithChain();
    const sub = await chargedSubscription('revoke-queued@example.com');
    const grant = await signedOffer(sub.page, payer);
    assert.equal((await postJson(`${sub.page}/grant`, grant.body)).status, 202);
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 1, 'period 1 charged');
    const usdc1 = await k.chain.tokenBalance(k.usdc, payer.address);
    const hot = k.adapter.sender!.address as Address;
    const gas = await k.chain.balance(hot);
    await k.chain.rpc('hardhat_setBalance', [hot, '0x0']);
    try {
      await timeReaches(sub.startedAt + WEEK_S + 1);
      await runDue();
      let s = await subscription(sub.id);
      assert.deepEqual([s.charges.at(-1).period, s.charges.at(-1).status], [2, 'pending']);
      const [queued] = await chargeTransfers(2, sub.id);
      assert.equal(queued!.status, 'pending', 'handed to the queue, not signed: no gas');

      // The payer revokes on the page.
      const offer = await postJson(`${sub.page}/revoke/offer`, {});
      assert.equal(offer.status, 200, JSON.stringify(offer.body));
      const revoke = await grant.sign(offer.body.sign.revoke);
      const revoked = await postJson(`${sub.page}/revoke`, { signatures: { revoke } });
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
      s = await subscription(sub.id);
      assert.equal(s.grant.status, 'revoked');
      assert.deepEqual(
        [s.charges.at(-1).status, s.charges.at(-1).failure_reason, s.charges.at(-1).transaction],
        ['failed', 'grant_revoked', null],
      );
      assert.equal((await chargeTransfers(2, sub.id))[0]!.status, 'failed', 'withdrawn from the queue');
      assert.equal(await mailsOf(sub.id, 'subscription.invoice', 2), 1, 'period 2 falls back to its invoice');

      // Gas again: the revoke is relayed; the charge is never sent.
      await k.chain.rpc('hardhat_setBalance', [hot, `0x${gas.toString(16)}`]);
      for (let i = 0; i < 2 * CONFIRMATIONS; i++) {
        await runDue();
        await timeReaches((await k.chain.now()) + 5);
      }
      assert.deepEqual(
        (await chargeTransfers(2, sub.id)).map((x) => [x.status, x.tx_hash]),
        [['failed', null]],
        'never signed, never sent',
      );
      assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), usdc1);
      assert.equal((await subscription(sub.id)).periods_paid, 1);
    } finally {
      await k.chain.rpc('hardhat_setBalance', [hot, `0x${gas.toString(16)}`]);
    }
  });

  test('a payer who allowed the collector without limit grants: the permit keeps the allowance unlimited', async () => {
    const payer = await fundedPayer(100_000_000n);
    await k.chain.setBalance(payer.address, 10n ** 18n);
    const approve = await payer.sendTransaction({
      to: k.usdc as Address,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [collector, maxUint256] }),
      account: payer.account,
      chain: hardhatChain,
    });
    await k.chain.mine(1);
    await k.chain.receipt(approve);
    await alignClockWithChain();
    const sub = await chargedSubscription('unlimited@example.com');
    const grant = await signedOffer(sub.page, payer);
    assert.equal(grant.offer.sign.permit_value, String(maxUint256), 'no more than uint256 can hold');
    assert.equal((await postJson(`${sub.page}/grant`, grant.body)).status, 202);
    await mineUntil(async () => (await subscription(sub.id)).periods_paid === 1, 'period 1 charged');
    assert.equal(await allowance(payer.address), maxUint256);
  });
});
