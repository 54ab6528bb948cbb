/**
 * Gasless USDC on a PRIVATE Hardhat node (automine is turned off in one test): a payer holding USDC and no ETH signs
 * an EIP-3009 TransferWithAuthorization (viem `signTypedData`) for a coin choice, posts it to the public checkout
 * endpoint `POST /p/<id>/gasless`, and the hot wallet relays it: 202 with the transaction hash, the watcher records
 * the Transfer as a deposit and the payment is paid. Every refusal (wrong to, wrong value, window outside the hold,
 * future valid_after, nonce reused in Kasse or on chain, insufficient balance, bad signature, foreign or non-gasless
 * coin choice, a second relay for one coin choice) answers 400/422 with `param` and changes nothing. A relay
 * front-run by the payer's own submission reverts and fails while the payment is still paid.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { encodeFunctionData, getAddress, type Address, type Hex } from 'viem';
import { erc20Abi } from '../../src/chains/evm/contracts.ts';
import { EvmSender } from '../../src/chains/evm/sender.ts';
import { ApiClient } from '../harness/app.ts';
import { ETH_USD, startEvmKasse, type EvmKasse } from '../harness/evm-kasse.ts';
import {
  hardhatChain,
  startHardhatNode,
  type HardhatNode,
  type TestWallet,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
} from '../harness/hardhat.ts';

let node: HardhatNode;
let k: EvmKasse;
let sender: EvmSender;
let checkout: ApiClient;
/** Holds USDC and no ETH at all. */
let payer: TestWallet;

before(async () => {
  node = await startHardhatNode();
  k = await startEvmKasse({ rpcUrl: node.url, tiers: [{ max_usd_cents: null, confirmations: 2 }], finality: 4 });
  // Validity windows are compared with Kasse's clock and with block timestamps: start the fake clock at chain time.
  const block = await k.chain.client.getBlock();
  k.t.clock.set(Number(block.timestamp) * 1000);
  k.coingecko.setPrice('ethereum', ETH_USD, k.t.clock.now());
  await k.tick();
  assert.ok(k.adapter.sender instanceof EvmSender);
  sender = k.adapter.sender;
  checkout = new ApiClient(k.t.urls.checkout, null);
  payer = await k.chain.newWallet('0');
  await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, payer.address, 1_000_000_000n));
});
after(async () => {
  await k?.close();
  await node?.stop();
});

let orderSeq = 0;
async function createPayment(token: 'base:usdc' | 'base:eth' = 'base:usdc', cents = 1500) {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `gasless-${++orderSeq}`,
    chain: 'base',
    token,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const attempt = res.body.attempts[0];
  return {
    id: res.body.id as string,
    attemptId: attempt.id as string,
    address: attempt.address as Address,
    amount: BigInt(attempt.pay_amount),
    expiresAt: new Date(attempt.expires_at),
  };
}

const nowSeconds = () => Math.floor(k.t.clock.now().getTime() / 1000);
const randomNonce = (): Hex => `0x${randomBytes(32).toString('hex')}`;

interface Authorization {
  attempt_id: string;
  from: string;
  to: string;
  value: string;
  valid_after: number;
  valid_before: number;
  nonce: Hex;
  signature: Hex;
}

/** A TransferWithAuthorization for `p` signed by `signer` (claiming `from`), with overrides. */
async function authorize(
  p: Awaited<ReturnType<typeof createPayment>>,
  o: {
    signer?: TestWallet;
    from?: Address;
    to?: Address;
    value?: bigint;
    validAfter?: number;
    validBefore?: number;
    nonce?: Hex;
  } = {},
): Promise<Authorization> {
  const signer = o.signer ?? payer;
  const message = {
    from: o.from ?? signer.address,
    to: o.to ?? p.address,
    value: o.value ?? p.amount,
    validAfter: BigInt(o.validAfter ?? 0),
    validBefore: BigInt(o.validBefore ?? Math.floor(p.expiresAt.getTime() / 1000)),
    nonce: o.nonce ?? randomNonce(),
  };
  const signature = await signer.signTypedData({
    account: signer.account,
    domain: { name: 'Test USDC', version: '2', chainId: 31337, verifyingContract: k.usdc },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  return {
    attempt_id: p.attemptId,
    from: message.from,
    to: message.to,
    value: message.value.toString(),
    valid_after: Number(message.validAfter),
    valid_before: Number(message.validBefore),
    nonce: message.nonce,
    signature,
  };
}

function submit(paymentId: string, body: unknown) {
  return checkout.post(`/p/${paymentId}/gasless`, body);
}

async function counts() {
  const t = await k.t.kasse.db
    .selectFrom('evm_transfers')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  const g = await k.t.kasse.db
    .selectFrom('evm_gasless')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return { transfers: Number(t.n), relays: Number(g.n) };
}

async function paymentStatus(id: string) {
  return (await k.m.test.get(`/payments/${id}`)).body.status as string;
}

describe('a valid authorization', () => {
  test('is relayed by the hot wallet: 202 with the tx hash, a deposit, a paid payment, and the payer spends no ETH', async () => {
    const p = await createPayment();
    const usdcBefore = await k.chain.tokenBalance(k.usdc, payer.address);
    const hotEthBefore = await k.chain.balance(sender.address);
    const body = await authorize(p);
    const res = await submit(p.id, body);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.match(res.body.tx_hash, /^0x[0-9a-f]{64}$/);
    assert.equal(res.body.status, 'broadcast');
    const receipt = await k.chain.receipt(res.body.tx_hash);
    assert.equal(receipt.from.toLowerCase(), sender.address.toLowerCase(), 'the hot wallet sent it');

    await k.tick();
    await k.chain.mine(1);
    await k.tick();
    const pay = (await k.m.test.get(`/payments/${p.id}`)).body;
    assert.equal(pay.status, 'paid');
    const dep = pay.attempts[0].deposits[0];
    assert.equal(dep.tx_hash, res.body.tx_hash);
    assert.equal(dep.amount, p.amount.toString());
    assert.equal(dep.from.toLowerCase(), payer.address.toLowerCase());
    assert.equal(await k.chain.balance(payer.address), 0n, 'the payer holds and spent no ETH');
    assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), usdcBefore - p.amount);
    assert.ok((await k.chain.balance(sender.address)) < hotEthBefore, 'the hot wallet paid the gas');

    await sender.runDue();
    const relay = (await sender.get(
      (
        await k.t.kasse.db
          .selectFrom('evm_gasless')
          .select('transfer_id')
          .where('attempt_id', '=', p.attemptId)
          .executeTakeFirstOrThrow()
      ).transfer_id,
    ))!;
    assert.equal(relay.status, 'sent');
    assert.equal(relay.purpose, 'gasless');
    assert.equal(relay.tx_hash, res.body.tx_hash);

    // A retried POST of the very same authorization answers the same transaction instead of a refusal.
    const again = await submit(p.id, body);
    assert.equal(again.status, 202);
    assert.deepEqual(again.body, { tx_hash: res.body.tx_hash, status: 'sent' });
  });
});

describe('refusals change nothing', () => {
  async function refused(paymentId: string, body: unknown, status: number, param: string | null) {
    const before = await counts();
    const usdc = await k.chain.tokenBalance(k.usdc, payer.address);
    const res = await submit(paymentId, body);
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error.param, param, JSON.stringify(res.body));
    assert.equal(typeof res.body.error.code, 'string');
    assert.equal(typeof res.body.error.message, 'string');
    assert.deepEqual(await counts(), before, 'nothing recorded');
    assert.equal(await k.chain.tokenBalance(k.usdc, payer.address), usdc, 'nothing moved');
    return res.body.error;
  }

  test('wrong to, wrong value, window outside the hold, expired window, valid_after in the future', async () => {
    const p = await createPayment();
    await refused(p.id, await authorize(p, { to: getAddress(`0x${randomBytes(20).toString('hex')}`) }), 400, 'to');
    await refused(p.id, await authorize(p, { value: p.amount - 1n }), 400, 'value');
    await refused(p.id, await authorize(p, { value: p.amount + 1n }), 400, 'value');
    await refused(
      p.id,
      await authorize(p, { validBefore: Math.floor(p.expiresAt.getTime() / 1000) + 1 }),
      400,
      'valid_before',
    );
    await refused(p.id, await authorize(p, { validBefore: nowSeconds() - 1 }), 400, 'valid_before');
    await refused(p.id, await authorize(p, { validAfter: nowSeconds() + 60 }), 400, 'valid_after');
    assert.equal(await paymentStatus(p.id), 'waiting');
  });

  test('an authorization nonce already submitted to Kasse, or already used on chain', async () => {
    const paid = await createPayment();
    const first = await authorize(paid);
    assert.equal((await submit(paid.id, first)).status, 202);

    const p = await createPayment();
    const error = await refused(p.id, await authorize(p, { nonce: first.nonce }), 400, 'nonce');
    assert.match(error.message, /already submitted/);

    // The payer used this nonce elsewhere, relayed by someone else: Kasse has never seen it, the token has.
    const nonce = randomNonce();
    const elsewhere = await authorize(p, { to: k.payer.address, nonce });
    await k.chain.receipt(
      await k.payer.sendTransaction({
        to: k.usdc,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: 'transferWithAuthorization',
          args: [
            payer.address,
            k.payer.address,
            BigInt(elsewhere.value),
            0n,
            BigInt(elsewhere.valid_before),
            nonce,
            elsewhere.signature,
          ],
        }),
        account: k.payer.account,
        chain: hardhatChain,
      }),
    );
    const onChain = await refused(p.id, await authorize(p, { nonce }), 400, 'nonce');
    assert.match(onChain.message, /on chain/);
    assert.equal(await paymentStatus(p.id), 'waiting');
  });

  test('insufficient balance (422 from) and a signature that is not from (400 signature), also for a contract wallet', async () => {
    const p = await createPayment();
    const poor = await k.chain.newWallet('0');
    await refused(p.id, await authorize(p, { signer: poor }), 422, 'from');
    const stranger = await k.chain.newWallet('0');
    await refused(p.id, await authorize(p, { signer: stranger, from: payer.address }), 400, 'signature');
    const tampered = await authorize(p);
    await refused(p.id, { ...tampered, valid_after: 1 }, 400, 'signature');
    // A contract wallet (code at `from`) is judged by the token's ERC-1271 check in the eth_call simulation.
    const wallet = getAddress(`0x${randomBytes(20).toString('hex')}`);
    await k.chain.rpc('hardhat_setCode', [wallet, '0x00']);
    await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, wallet, p.amount));
    const simulated = await refused(p.id, await authorize(p, { signer: stranger, from: wallet }), 400, 'signature');
    assert.match(simulated.message, /would fail on chain: InvalidSignature/);
    assert.equal(await paymentStatus(p.id), 'waiting');
  });

  test('unknown payment, a coin choice of another payment, a coin that is not gasless, and malformed bodies', async () => {
    const p = await createPayment();
    const other = await createPayment();
    const body = await authorize(p);
    const missing = await submit(`pay_${'0'.repeat(36)}`, body);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
    await refused(other.id, body, 400, 'attempt_id');
    const eth = await createPayment('base:eth');
    await refused(eth.id, await authorize(eth, { value: eth.amount }), 422, 'attempt_id');
    await refused(p.id, { ...body, nonce: '0x1234' }, 400, 'nonce');
    await refused(p.id, { ...body, value: '-5' }, 400, 'value');
    const { signature: _drop, ...unsigned } = body;
    await refused(p.id, unsigned, 400, 'signature');
    await refused(p.id, { ...body, extra: true }, 400, 'extra');
  });
});

describe('one coin choice, one relay', () => {
  test('a second authorization while one is in flight is refused; a relay front-run by the payer reverts and fails, yet the payment is paid', async () => {
    const p = await createPayment();
    const mine = await authorize(p);
    const nonce0 = await k.chain.client.getTransactionCount({ address: sender.address });
    await k.chain.setAutomine(false);
    try {
      const res = await submit(p.id, mine);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.status, 'broadcast');
      const second = await submit(p.id, await authorize(p));
      assert.equal(second.status, 422);
      assert.equal(second.body.error.param, 'attempt_id');

      // The payer's own relayer submits the same authorization with a higher tip: it is mined first.
      await k.payer.sendTransaction({
        to: k.usdc,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: 'transferWithAuthorization',
          args: [payer.address, p.address, p.amount, 0n, BigInt(mine.valid_before), mine.nonce, mine.signature],
        }),
        account: k.payer.account,
        chain: hardhatChain,
        gas: 200_000n,
        maxPriorityFeePerGas: 50_000_000_000n,
        maxFeePerGas: 200_000_000_000n,
      });
      await k.chain.mine(2);
    } finally {
      await k.chain.setAutomine(true);
    }
    const transferId = (
      await k.t.kasse.db
        .selectFrom('evm_gasless')
        .select('transfer_id')
        .where('attempt_id', '=', p.attemptId)
        .executeTakeFirstOrThrow()
    ).transfer_id;
    await sender.runDue();
    const relay = (await sender.get(transferId))!;
    assert.equal(relay.status, 'failed');
    assert.match(relay.error!, /reverted/);
    assert.equal(
      await k.chain.client.getTransactionCount({ address: sender.address }),
      nonce0 + 1,
      'the reverted relay used its nonce',
    );

    await k.tick();
    assert.equal(await paymentStatus(p.id), 'paid', "the watcher saw the payer's own transfer");
  });
});

describe('the public endpoint is limited per client address', () => {
  test('the 21st submission in a minute is 429 rate_limited with Retry-After; the next minute is open again', async () => {
    k.t.clock.set(Math.ceil(k.t.clock.now().getTime() / 60_000) * 60_000 + 60_000); // a fresh window
    const unknown = `pay_${'Z'.repeat(36)}`;
    const body = {
      attempt_id: 'att_x',
      from: `0x${'1'.repeat(40)}`,
      to: `0x${'2'.repeat(40)}`,
      value: '1',
      valid_after: 0,
      valid_before: 1,
      nonce: `0x${'3'.repeat(64)}`,
      signature: `0x${'4'.repeat(130)}`,
    };
    for (let i = 0; i < 20; i++) assert.equal((await submit(unknown, body)).status, 404, `submission ${i + 1}`);
    const limited = await submit(unknown, body);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limited');
    assert.equal(limited.headers.get('retry-after'), '60');
    k.t.clock.advance(60_000);
    assert.equal((await submit(unknown, body)).status, 404);
  });
});
