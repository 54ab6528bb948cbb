/**
 * The hold-and-capture contracts (AuthCaptureEscrow, ERC3009PaymentCollector, OperatorRefundCollector) placed at the
 * canonical commerce-payments v1.1 addresses on the run's shared Hardhat node, and their invariants: never more
 * captured than authorized, only the operator captures, voids and refunds, the payer reclaims from the
 * authorization's expiry on and not before, refunds bounded by what was captured, one collection per payment, a
 * signature good for one payment only, and a hostile token cannot re-enter. The official @x402/evm
 * `AuthCaptureEvmScheme` client's payload authorizes against the placed contracts. Time passes by mining empty
 * blocks (never by moving the shared node's clock).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, test } from 'node:test';
import { AuthCaptureEvmScheme } from '@x402/evm/auth-capture/client';
import {
  encodeFunctionData,
  getAddress,
  hexToBigInt,
  maxUint256,
  toFunctionSelector,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { artifact, authCaptureEscrowAbi, erc20Abi, tokenCollectorAbi } from '../../src/chains/evm/contracts.ts';
import {
  AUTH_CAPTURE_V1_1,
  payerAgnosticHash,
  paymentInfoHash,
  placeAuthCaptureContracts,
  type PaymentInfo,
} from '../../src/chains/evm/escrow.ts';
import { sharedEvmRpc, TestChain, TRANSFER_WITH_AUTHORIZATION_TYPES, type TestWallet } from '../harness/hardhat.ts';

const ESCROW = AUTH_CAPTURE_V1_1.escrow;
const COLLECTOR = AUTH_CAPTURE_V1_1.erc3009Collector;
const REFUND_COLLECTOR = AUTH_CAPTURE_V1_1.operatorRefundCollector;
const CHAIN_ID = 31337;
const USDC = 1_000_000n;
/** The escrow's ABI with the errors of the contracts it calls, so reverts from deeper down decode too. */
const ABI = [
  ...authCaptureEscrowAbi,
  ...tokenCollectorAbi.filter((x) => x.type !== 'function' || x.name === 'collectTokens'),
  ...artifact('TestUSDC').abi.filter((x) => x.type === 'error'),
] as Abi;

let chain: TestChain;
let operator: TestWallet;
let payer: TestWallet;
let stranger: TestWallet;
let merchant: Address;
let feeReceiver: Address;
let usdc: Address;

const fresh = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);

before(async () => {
  chain = new TestChain(sharedEvmRpc());
  await placeAuthCaptureContracts({ request: (m, p) => chain.rpc(m, p) });
  [operator, payer, stranger] = await Promise.all([chain.newWallet(), chain.newWallet(), chain.newWallet()]);
  merchant = fresh();
  feeReceiver = fresh();
  usdc = await chain.deployTestUsdc(operator);
  await chain.receipt(await chain.mint(payer, usdc, payer.address, 1_000n * USDC));
});

/** A payment of up to `maxAmount` from the payer to the merchant, operated by `operator`, open for an hour. */
async function paymentInfo(o: Partial<PaymentInfo> = {}): Promise<PaymentInfo> {
  const now = Math.max(await chain.now(), Math.floor(Date.now() / 1000));
  return {
    operator: operator.address,
    payer: payer.address,
    receiver: merchant,
    token: usdc,
    maxAmount: 10n * USDC,
    preApprovalExpiry: now + 3600,
    authorizationExpiry: now + 7200,
    refundExpiry: now + 86_400,
    minFeeBps: 0,
    maxFeeBps: 100,
    feeReceiver,
    salt: hexToBigInt(`0x${randomBytes(32).toString('hex')}`),
    ...o,
  };
}

/** The payer's ERC-3009 ReceiveWithAuthorization of `info`, as the collector submits it. */
async function sign(info: PaymentInfo, signer: TestWallet = payer): Promise<Hex> {
  return signer.signTypedData({
    account: signer.account,
    domain: { name: 'Test USDC', version: '2', chainId: CHAIN_ID, verifyingContract: info.token },
    types: { ReceiveWithAuthorization: TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization },
    primaryType: 'ReceiveWithAuthorization',
    message: {
      from: info.payer,
      to: COLLECTOR,
      value: info.maxAmount,
      validAfter: 0n,
      validBefore: BigInt(info.preApprovalExpiry),
      nonce: payerAgnosticHash(CHAIN_ID, info),
    },
  });
}

const escrow = (from: TestWallet, fn: string, args: readonly unknown[]) => chain.write(from, ESCROW, ABI, fn, args);
const refused = (from: TestWallet, fn: string, args: readonly unknown[], error: string) =>
  chain.refusedWith(from, ESCROW, ABI, fn, args, error);

async function state(info: PaymentInfo) {
  const [collected, capturable, refundable] = await chain.client.readContract({
    address: ESCROW,
    abi: authCaptureEscrowAbi,
    functionName: 'paymentState',
    args: [paymentInfoHash(CHAIN_ID, info)],
  });
  return { collected, capturable, refundable };
}

const balance = (who: Address, token = usdc) => chain.tokenBalance(token, who);

/** Authorizes `amount` of a new payment (the payer signs for `maxAmount`); returns the payment. */
async function authorized(amount: bigint, o: Partial<PaymentInfo> = {}): Promise<PaymentInfo> {
  const info = await paymentInfo(o);
  await escrow(operator, 'authorize', [info, amount, COLLECTOR, await sign(info)]);
  return info;
}

test('placed at the canonical v1.1 addresses: the hash agrees with the spec, collectors serve the canonical escrow, placing again is a no-op, a live node is refused', async () => {
  const info = await paymentInfo();
  const onChain = await chain.client.readContract({
    address: ESCROW,
    abi: authCaptureEscrowAbi,
    functionName: 'getHash',
    args: [info],
  });
  assert.equal(onChain, paymentInfoHash(CHAIN_ID, info));
  for (const c of [COLLECTOR, REFUND_COLLECTOR]) {
    const served = await chain.client.readContract({
      address: c,
      abi: tokenCollectorAbi,
      functionName: 'authCaptureEscrow',
    });
    assert.equal(served, ESCROW);
  }
  const types = await Promise.all(
    [COLLECTOR, REFUND_COLLECTOR].map((c) =>
      chain.client.readContract({ address: c, abi: tokenCollectorAbi, functionName: 'collectorType' }),
    ),
  );
  assert.deepEqual(types, [0, 1]);

  const code = await chain.client.getCode({ address: ESCROW });
  assert.deepEqual(await placeAuthCaptureContracts({ request: (m, p) => chain.rpc(m, p) }), AUTH_CAPTURE_V1_1);
  assert.equal(await chain.client.getCode({ address: ESCROW }), code);

  const calls: string[] = [];
  const live = {
    request: async <T>(method: string): Promise<T> => {
      calls.push(method);
      return (method === 'web3_clientVersion' ? 'Geth/v1.14.11-stable/linux-amd64/go1.23.2' : '0x') as T;
    },
  };
  await assert.rejects(placeAuthCaptureContracts(live), /not a local Hardhat or Anvil node/);
  assert.deepEqual(calls, ['web3_clientVersion'], 'nothing but the client version is asked of a live node');
});

test('the official @x402/evm AuthCaptureEvmScheme client signs a payload that authorizes against the placed contracts', async () => {
  const now = Math.max(await chain.now(), Math.floor(Date.now() / 1000));
  const requirements = {
    scheme: 'auth-capture',
    network: `eip155:${CHAIN_ID}`,
    amount: String(7n * USDC),
    asset: usdc,
    payTo: merchant,
    maxTimeoutSeconds: 3600,
    extra: {
      name: 'Test USDC',
      version: '2',
      authCaptureEscrow: ESCROW,
      captureAuthorizer: operator.address,
      captureDeadline: now + 7200,
      refundDeadline: now + 86_400,
      minFeeBps: 100,
      maxFeeBps: 100,
      feeRecipient: feeReceiver,
    },
  };
  const client = new AuthCaptureEvmScheme(payer.account as ConstructorParameters<typeof AuthCaptureEvmScheme>[0]);
  type Requirements = Parameters<typeof client.createPaymentPayload>[1];
  const { payload } = (await client.createPaymentPayload(2, requirements as unknown as Requirements)) as unknown as {
    payload: { authorization: Record<string, string>; signature: Hex; salt: Hex };
  };
  assert.equal(getAddress(payload.authorization.to!), COLLECTOR);
  // The PaymentInfo a facilitator rebuilds from the requirements and the payload.
  const info: PaymentInfo = {
    operator: operator.address,
    payer: getAddress(payload.authorization.from!),
    receiver: merchant,
    token: usdc,
    maxAmount: BigInt(requirements.amount),
    preApprovalExpiry: Number(payload.authorization.validBefore),
    authorizationExpiry: requirements.extra.captureDeadline,
    refundExpiry: requirements.extra.refundDeadline,
    minFeeBps: 100,
    maxFeeBps: 100,
    feeReceiver,
    salt: hexToBigInt(payload.salt),
  };
  assert.equal(payload.authorization.nonce, payerAgnosticHash(CHAIN_ID, info));
  const before = await balance(payer.address);
  const store = await chain.client.readContract({
    address: ESCROW,
    abi: authCaptureEscrowAbi,
    functionName: 'getTokenStore',
    args: [operator.address],
  });
  const held = await balance(store);
  await escrow(operator, 'authorize', [info, info.maxAmount, COLLECTOR, payload.signature]);
  assert.deepEqual(await state(info), { collected: true, capturable: 7n * USDC, refundable: 0n });
  assert.equal(await balance(payer.address), before - 7n * USDC);
  assert.equal(await balance(store), held + 7n * USDC);

  // Captured with the 1% fee the payer signed for, and a second authorization of the same payload is refused.
  const merchantBefore = await balance(merchant);
  await escrow(operator, 'capture', [info, 7n * USDC, 70_000n, feeReceiver]);
  assert.equal(await balance(merchant), merchantBefore + 7n * USDC - 70_000n);
  await refused(operator, 'authorize', [info, info.maxAmount, COLLECTOR, payload.signature], 'PaymentAlreadyCollected');
});

test('partial captures add up to at most what was authorized; the uncollected rest goes back to the payer at once; fees stay within the signed bounds', async () => {
  const payerBefore = await balance(payer.address);
  const info = await authorized(8n * USDC);
  assert.equal(await balance(payer.address), payerBefore - 8n * USDC, 'maxAmount 10, 8 collected, 2 returned');
  const [merchantBefore, feesBefore] = [await balance(merchant), await balance(feeReceiver)];

  await refused(operator, 'capture', [info, 5n * USDC, 50_001n, feeReceiver], 'FeeAmountOutOfRange');
  await refused(operator, 'capture', [info, 5n * USDC, 50_000n, fresh()], 'InvalidFeeReceiver');
  await refused(operator, 'capture', [info, 0n, 0n, feeReceiver], 'ZeroAmount');
  await escrow(operator, 'capture', [info, 5n * USDC, 50_000n, feeReceiver]);
  await escrow(operator, 'capture', [info, 3n * USDC, 0n, feeReceiver]);
  await refused(operator, 'capture', [info, 1n, 0n, feeReceiver], 'InsufficientAuthorization');

  assert.deepEqual(await state(info), { collected: true, capturable: 0n, refundable: 8n * USDC });
  assert.equal(await balance(merchant), merchantBefore + 8n * USDC - 50_000n);
  assert.equal(await balance(feeReceiver), feesBefore + 50_000n);
  await refused(operator, 'authorize', [info, 1n, COLLECTOR, await sign(info)], 'PaymentAlreadyCollected');
});

test('only the operator authorizes, captures, voids, charges and refunds', async () => {
  const info = await paymentInfo();
  const signature = await sign(info);
  for (const who of [payer, stranger]) {
    await refused(who, 'authorize', [info, info.maxAmount, COLLECTOR, signature], 'InvalidSender');
    await refused(who, 'charge', [info, info.maxAmount, COLLECTOR, signature, 0n, feeReceiver], 'InvalidSender');
  }
  await escrow(operator, 'authorize', [info, info.maxAmount, COLLECTOR, signature]);
  await escrow(operator, 'capture', [info, 2n * USDC, 0n, feeReceiver]);
  for (const who of [payer, stranger]) {
    await refused(who, 'capture', [info, 1n, 0n, feeReceiver], 'InvalidSender');
    await refused(who, 'void', [info], 'InvalidSender');
    await refused(who, 'refund', [info, 1n, REFUND_COLLECTOR, '0x'], 'InvalidSender');
  }
  // Nor can anyone but the escrow use a collector or a token store.
  await chain.refusedWith(
    stranger,
    COLLECTOR,
    ABI,
    'collectTokens',
    [info, stranger.address, 1n, signature],
    'OnlyAuthCaptureEscrow',
  );
  const store = await chain.client.readContract({
    address: ESCROW,
    abi: authCaptureEscrowAbi,
    functionName: 'getTokenStore',
    args: [operator.address],
  });
  await chain.refusedWith(
    stranger,
    store,
    artifact('TokenStore').abi,
    'sendTokens',
    [usdc, stranger.address, 1n],
    'OnlyAuthCaptureEscrow',
  );
  assert.deepEqual(await state(info), { collected: true, capturable: 8n * USDC, refundable: 2n * USDC });
});

test('void returns what is still capturable to the payer, once; nothing can be captured after it', async () => {
  const info = await authorized(10n * USDC);
  await escrow(operator, 'capture', [info, 4n * USDC, 0n, feeReceiver]);
  const payerBefore = await balance(payer.address);
  await escrow(operator, 'void', [info]);
  assert.equal(await balance(payer.address), payerBefore + 6n * USDC);
  assert.deepEqual(await state(info), { collected: true, capturable: 0n, refundable: 4n * USDC });
  await refused(operator, 'capture', [info, 1n, 0n, feeReceiver], 'InsufficientAuthorization');
  await refused(operator, 'void', [info], 'ZeroAuthorization');
});

test('the payer reclaims from authorizationExpiry on, not before, and only the payer; capture and refund end there too', async () => {
  const now = await chain.now();
  // Expiries a minute out: time passes by mining, and other files' blocks only bring the expiry closer.
  const info = await authorized(10n * USDC, {
    preApprovalExpiry: now + 60,
    authorizationExpiry: now + 60,
    refundExpiry: now + 60,
  });
  await refused(payer, 'reclaim', [info], 'BeforeAuthorizationExpiry');
  await escrow(operator, 'capture', [info, 3n * USDC, 0n, feeReceiver]);
  await chain.mineUntil(info.authorizationExpiry);

  await refused(operator, 'capture', [info, 1n, 0n, feeReceiver], 'AfterAuthorizationExpiry');
  await refused(operator, 'refund', [info, 1n, REFUND_COLLECTOR, '0x'], 'AfterRefundExpiry');
  await refused(stranger, 'reclaim', [info], 'InvalidSender');
  await refused(operator, 'reclaim', [info], 'InvalidSender');
  const payerBefore = await balance(payer.address);
  await escrow(payer, 'reclaim', [info]);
  assert.equal(await balance(payer.address), payerBefore + 7n * USDC);
  assert.deepEqual(await state(info), { collected: true, capturable: 0n, refundable: 3n * USDC });
  await refused(payer, 'reclaim', [info], 'ZeroAuthorization');
});

test('refunds come from the operator through the refund collector and never exceed what was captured and not refunded', async () => {
  const info = await authorized(10n * USDC);
  await escrow(operator, 'capture', [info, 5n * USDC, 0n, feeReceiver]);
  await chain.receipt(await chain.mint(operator, usdc, operator.address, 100n * USDC));
  await chain.write(operator, usdc, erc20Abi, 'approve', [REFUND_COLLECTOR, maxUint256]);

  await refused(operator, 'refund', [info, 1n, COLLECTOR, '0x'], 'InvalidCollectorForOperation');
  const payerBefore = await balance(payer.address);
  const operatorBefore = await balance(operator.address);
  await escrow(operator, 'refund', [info, 3n * USDC, REFUND_COLLECTOR, '0x']);
  await refused(operator, 'refund', [info, 3n * USDC, REFUND_COLLECTOR, '0x'], 'RefundExceedsCapture');
  await escrow(operator, 'refund', [info, 2n * USDC, REFUND_COLLECTOR, '0x']);
  await refused(operator, 'refund', [info, 1n, REFUND_COLLECTOR, '0x'], 'RefundExceedsCapture');
  assert.equal(await balance(payer.address), payerBefore + 5n * USDC);
  assert.equal(await balance(operator.address), operatorBefore - 5n * USDC);
  assert.deepEqual(await state(info), { collected: true, capturable: 5n * USDC, refundable: 0n });

  // A capture after refunds makes more refundable, never more than was captured in all.
  await escrow(operator, 'capture', [info, 5n * USDC, 0n, feeReceiver]);
  await refused(operator, 'refund', [info, 5n * USDC + 1n, REFUND_COLLECTOR, '0x'], 'RefundExceedsCapture');
});

test('charge pays out at once; a payment is collected once; a signature authorizes only the payment it names', async () => {
  const info = await paymentInfo({ minFeeBps: 50, maxFeeBps: 50 });
  const signature = await sign(info);
  const merchantBefore = await balance(merchant);
  await refused(operator, 'charge', [info, 11n * USDC, COLLECTOR, signature, 0n, feeReceiver], 'ExceedsMaxAmount');
  await refused(operator, 'charge', [info, 10n * USDC, COLLECTOR, signature, 0n, feeReceiver], 'FeeAmountOutOfRange');
  await escrow(operator, 'charge', [info, 10n * USDC, COLLECTOR, signature, 50_000n, feeReceiver]);
  assert.equal(await balance(merchant), merchantBefore + 10n * USDC - 50_000n);
  assert.deepEqual(await state(info), { collected: true, capturable: 0n, refundable: 10n * USDC });
  await refused(operator, 'authorize', [info, 10n * USDC, COLLECTOR, signature], 'PaymentAlreadyCollected');

  // The same signature for a payment that differs in any field (another receiver, a larger maximum, another salt)
  // names another nonce: the token refuses it.
  const other = await paymentInfo();
  const signed = await sign(other);
  for (const changed of [{ receiver: stranger.address }, { maxAmount: 11n * USDC }, { salt: other.salt + 1n }]) {
    await refused(operator, 'authorize', [{ ...other, ...changed }, 1n, COLLECTOR, signed], 'InvalidSignature');
  }
  // Signed by someone else than the payer named in the payment.
  await refused(operator, 'authorize', [other, 1n, COLLECTOR, await sign(other, stranger)], 'InvalidSignature');
  // A collector that claims success without bringing the tokens in is caught on the store's balance.
  const short = await chain.deployContract(operator, 'ShortCollector');
  await refused(operator, 'authorize', [other, 1n, short, signed], 'TokenCollectionFailed');
  assert.deepEqual(await state(other), { collected: false, capturable: 0n, refundable: 0n });
});

test('a malicious token cannot re-enter the escrow: every nested call is refused and the books stay exact', async () => {
  const token = await chain.deployContract(operator, 'ReentrantToken');
  const tokenAbi = artifact('ReentrantToken').abi;
  await chain.write(operator, token, tokenAbi, 'mint', [payer.address, 10n * USDC]);
  // The token is the operator too, so its nested calls pass the escrow's operator check and meet only the guard.
  const info = await paymentInfo({ operator: token, token, feeReceiver: merchant });
  const store = await chain.client.readContract({
    address: ESCROW,
    abi: authCaptureEscrowAbi,
    functionName: 'getTokenStore',
    args: [token],
  });
  const call = (fn: string, args: readonly unknown[]) => encodeFunctionData({ abi: ABI, functionName: fn, args });
  const operate = (fn: string, args: readonly unknown[]) =>
    chain.write(operator, token, tokenAbi, 'operate', [ESCROW, call(fn, args)]);
  const hookEndedWith = async () => {
    const read = (functionName: string) => chain.client.readContract({ address: token, abi: tokenAbi, functionName });
    assert.equal(await read('hookFired'), true);
    assert.equal(await read('hookSucceeded'), false);
    return ((await read('hookResult')) as Hex).slice(0, 10);
  };
  const guard = toFunctionSelector('ReentrancyGuardReentrantCall()');

  // Re-entering capture while authorize collects.
  await chain.write(operator, token, tokenAbi, 'arm', [ESCROW, call('capture', [info, 10n * USDC, 0n, merchant])]);
  await operate('authorize', [info, 10n * USDC, COLLECTOR, '0x']);
  assert.equal(await hookEndedWith(), guard);
  assert.deepEqual(await state(info), { collected: true, capturable: 10n * USDC, refundable: 0n });
  assert.equal(await balance(store, token), 10n * USDC);

  // Re-entering void while capture pays the merchant.
  await chain.write(operator, token, tokenAbi, 'arm', [ESCROW, call('void', [info])]);
  await operate('capture', [info, 4n * USDC, 0n, merchant]);
  assert.equal(await hookEndedWith(), guard);
  assert.deepEqual(await state(info), { collected: true, capturable: 6n * USDC, refundable: 4n * USDC });

  // Re-entering capture while void pays the payer back.
  await chain.write(operator, token, tokenAbi, 'arm', [ESCROW, call('capture', [info, 6n * USDC, 0n, merchant])]);
  await operate('void', [info]);
  assert.equal(await hookEndedWith(), guard);
  assert.deepEqual(await state(info), { collected: true, capturable: 0n, refundable: 4n * USDC });
  assert.equal(await balance(merchant, token), 4n * USDC);
  assert.equal(await balance(payer.address, token), 6n * USDC);
  assert.equal(await balance(store, token), 0n);
});
