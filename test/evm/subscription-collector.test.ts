/**
 * SubscriptionCollector on the run's shared Hardhat node with TestUSDC's EIP-2612 permit: a payer grants once (one
 * permit, one signed `Terms`) and anyone relays it; the terms' operator charges at most the amount per period, once
 * per period, only to the terms' receiver, from start until end or a revoke; revokes (direct or signed and relayed)
 * cannot be forged or replayed, terms cannot be granted twice, and a batch charges what it can and reports the rest
 * without changing it. Periods are 30 s; time passes by mining empty blocks.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, test } from 'node:test';
import {
  decodeEventLog,
  getAddress,
  hashTypedData,
  parseSignature,
  toFunctionSelector,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { artifact, erc20Abi, subscriptionCollectorAbi } from '../../src/chains/evm/contracts.ts';
import {
  permitTypedData,
  revokeTypedData,
  termsTypedData,
  type SubscriptionTerms,
} from '../../src/chains/evm/subscription-collector.ts';
import { sharedEvmRpc, TestChain, type TestWallet } from '../harness/hardhat.ts';

const CHAIN_ID = 31337;
const USDC = 1_000_000n;
const PERIOD = 30;
const USDC_ERRORS = artifact('TestUSDC').abi.filter((x) => x.type === 'error');
const ABI = [...subscriptionCollectorAbi, ...USDC_ERRORS] as Abi;
const TOKEN_ABI = [...erc20Abi, ...USDC_ERRORS] as Abi;

let chain: TestChain;
let operator: TestWallet;
let payer: TestWallet;
let relayer: TestWallet;
let stranger: TestWallet;
let usdc: Address;
let collector: Address;

const fresh = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);
const salt = (): Hex => `0x${randomBytes(32).toString('hex')}`;

before(async () => {
  chain = new TestChain(sharedEvmRpc());
  [operator, payer, relayer, stranger] = await Promise.all([
    chain.newWallet(),
    chain.newWallet(),
    chain.newWallet(),
    chain.newWallet(),
  ]);
  usdc = await chain.deployTestUsdc(operator);
  collector = await chain.deployContract(operator, 'SubscriptionCollector');
  await chain.receipt(await chain.mint(payer, usdc, payer.address, 1_000n * USDC));
});

/** Three 30-second periods of 5 USDC from the payer to a new receiver, charged by `operator`, starting now. */
async function newTerms(o: Partial<SubscriptionTerms> = {}): Promise<SubscriptionTerms> {
  const start = await chain.now();
  return {
    payer: payer.address,
    token: usdc,
    receiver: fresh(),
    operator: operator.address,
    amountPerPeriod: 5n * USDC,
    period: PERIOD,
    start,
    end: start + 3 * PERIOD,
    salt: salt(),
    ...o,
  };
}

const signTerms = (t: SubscriptionTerms, signer: TestWallet = payer, at: Address = collector) =>
  signer.signTypedData({ account: signer.account, ...termsTypedData(CHAIN_ID, at, t) });

async function signPermit(owner: TestWallet, value: bigint, deadline?: bigint) {
  const nonce = await chain.client.readContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'nonces',
    args: [owner.address],
  });
  const d = deadline ?? BigInt((await chain.now()) + 3600);
  const sig = await owner.signTypedData({
    account: owner.account,
    ...permitTypedData(
      CHAIN_ID,
      { address: usdc, name: 'Test USDC', version: '2' },
      { owner: owner.address, spender: collector, value, nonce, deadline: d },
    ),
  });
  const { v, r, s } = parseSignature(sig);
  return { value, deadline: d, v: Number(v), r, s, sig };
}

const send = (from: TestWallet, fn: string, args: readonly unknown[]) => chain.write(from, collector, ABI, fn, args);
const refused = (from: TestWallet, fn: string, args: readonly unknown[], error: string) =>
  chain.refusedWith(from, collector, ABI, fn, args, error);
const id = (t: SubscriptionTerms) => hashTypedData(termsTypedData(CHAIN_ID, collector, t));

async function grantState(t: SubscriptionTerms) {
  const [status, nextPeriod, charges, charged] = await chain.client.readContract({
    address: collector,
    abi: subscriptionCollectorAbi,
    functionName: 'grants',
    args: [id(t)],
  });
  return { status, nextPeriod, charges, charged };
}

/** Terms granted by the payer (permit for the grant's total, relayed by `relayer`). */
async function granted(o: Partial<SubscriptionTerms> = {}, owner: TestWallet = payer): Promise<SubscriptionTerms> {
  const t = await newTerms({ payer: owner.address, ...o });
  const p = await signPermit(owner, t.amountPerPeriod * 3n);
  await send(relayer, 'grantWithPermit', [t, await signTerms(t, owner), p.value, p.deadline, p.v, p.r, p.s]);
  return t;
}

const balance = (who: Address) => chain.tokenBalance(usdc, who);

test('one permit and one signed Terms, relayed by anyone, grant the collector; the grant id is the digest the payer signed', async () => {
  const t = await newTerms();
  const p = await signPermit(payer, 15n * USDC);
  const onChain = await chain.client.readContract({
    address: collector,
    abi: subscriptionCollectorAbi,
    functionName: 'grantId',
    args: [t],
  });
  assert.equal(onChain, id(t));
  const receipt = await send(relayer, 'grantWithPermit', [t, await signTerms(t), p.value, p.deadline, p.v, p.r, p.s]);
  const allowance = await chain.client.readContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'allowance',
    args: [payer.address, collector],
  });
  assert.equal(allowance, 15n * USDC);
  assert.deepEqual(await grantState(t), { status: 1, nextPeriod: 0, charges: 0, charged: 0n });
  const granted = receipt.logs
    .filter((l) => l.address.toLowerCase() === collector.toLowerCase())
    .map((l) => decodeEventLog({ abi: subscriptionCollectorAbi, data: l.data, topics: l.topics }));
  assert.equal(granted[0]?.eventName, 'Granted');

  // A permit someone submitted first (front-running the relay) does not stop the grant while its allowance stands.
  const t2 = await newTerms();
  const p2 = await signPermit(payer, 15n * USDC);
  await chain.write(stranger, usdc, erc20Abi, 'permit', [
    payer.address,
    collector,
    p2.value,
    p2.deadline,
    p2.v,
    p2.r,
    p2.s,
  ]);
  await send(relayer, 'grantWithPermit', [t2, await signTerms(t2), p2.value, p2.deadline, p2.v, p2.r, p2.s]);
  assert.equal((await grantState(t2)).status, 1);

  // TestUSDC's EIP-2612: expired, replayed and forged permits are refused.
  const permitRefused = (p: { value: bigint; deadline: bigint; v: number; r: Hex; s: Hex }, error: string) =>
    chain.refusedWith(
      relayer,
      usdc,
      TOKEN_ABI,
      'permit',
      [payer.address, collector, p.value, p.deadline, p.v, p.r, p.s],
      error,
    );
  await permitRefused(await signPermit(payer, 1n, BigInt((await chain.now()) - 1)), 'PermitExpired');
  await permitRefused(p2, 'InvalidSignature');
  await permitRefused(await signPermit(stranger, 1n), 'InvalidSignature');
});

test('the operator charges at most the amount per period, once per period, only to the terms receiver; a missed period does not add up', async () => {
  const t = await granted();
  const before = await balance(payer.address);
  for (const who of [payer, relayer, stranger]) await refused(who, 'charge', [t, 1n], 'NotOperator');
  await refused(operator, 'charge', [t, 5n * USDC + 1n], 'ExceedsAmountPerPeriod');
  await refused(operator, 'charge', [t, 0n], 'ZeroAmount');
  await refused(operator, 'charge', [{ ...t, receiver: stranger.address }, 1n], 'UnknownGrant');
  await refused(operator, 'charge', [{ ...t, amountPerPeriod: 50n * USDC }, 1n], 'UnknownGrant');

  await send(operator, 'charge', [t, 5n * USDC]);
  await refused(operator, 'charge', [t, 1n], 'AlreadyChargedThisPeriod');
  assert.equal(await balance(t.receiver), 5n * USDC);
  assert.equal(await balance(payer.address), before - 5n * USDC);

  // Period 1 passes uncharged; period 2 still allows one charge of at most one period's amount.
  await chain.mineUntil(t.start + 2 * PERIOD);
  await refused(operator, 'charge', [t, 10n * USDC], 'ExceedsAmountPerPeriod');
  await send(operator, 'charge', [t, 3n * USDC]);
  await refused(operator, 'charge', [t, 2n * USDC], 'AlreadyChargedThisPeriod');
  assert.deepEqual(await grantState(t), { status: 1, nextPeriod: 3, charges: 2, charged: 8n * USDC });

  // Nothing from the end on.
  await chain.mineUntil(t.end);
  await refused(operator, 'charge', [t, 1n], 'Ended');
  const why = await chain.client.readContract({
    address: collector,
    abi: subscriptionCollectorAbi,
    functionName: 'chargeError',
    args: [t, 1n, operator.address],
  });
  assert.equal(why, toFunctionSelector('Ended()'));
  assert.equal(await balance(t.receiver), 8n * USDC);
});

test('nothing is charged before the start', async () => {
  const now = await chain.now();
  const t = await granted({ start: now + 600, end: now + 600 + 3 * PERIOD });
  await refused(operator, 'charge', [t, 1n], 'NotStarted');
});

test('the payer revokes directly or by a signature anyone relays; revoke signatures cannot be forged or replayed', async () => {
  const t = await granted();
  await send(operator, 'charge', [t, 5n * USDC]);
  for (const who of [operator, relayer, stranger]) await refused(who, 'revoke', [t], 'NotPayer');

  const forged = await stranger.signTypedData({
    account: stranger.account,
    ...revokeTypedData(CHAIN_ID, collector, id(t)),
  });
  await refused(relayer, 'revokeWithSignature', [t, forged], 'InvalidSignature');
  const other = await newTerms();
  const forOther = await payer.signTypedData({
    account: payer.account,
    ...revokeTypedData(CHAIN_ID, collector, id(other)),
  });
  await refused(relayer, 'revokeWithSignature', [t, forOther], 'InvalidSignature');

  const signed = await payer.signTypedData({ account: payer.account, ...revokeTypedData(CHAIN_ID, collector, id(t)) });
  await send(relayer, 'revokeWithSignature', [t, signed]);
  assert.equal((await grantState(t)).status, 2);
  await refused(relayer, 'revokeWithSignature', [t, signed], 'GrantRevoked');
  await chain.mineUntil(t.start + PERIOD);
  await refused(operator, 'charge', [t, 1n], 'GrantRevoked');
  assert.equal(await balance(t.receiver), 5n * USDC);

  // A direct revoke, even before the terms were submitted: they can then never be granted.
  const unsent = await newTerms();
  await send(payer, 'revoke', [unsent]);
  await refused(relayer, 'grant', [unsent, await signTerms(unsent)], 'GrantRevoked');
  await refused(payer, 'revoke', [unsent], 'GrantRevoked');
});

test('terms are granted once: replays, altered terms, other signers, another collector and invalid terms are refused', async () => {
  const t = await granted();
  const sig = await signTerms(t);
  await refused(relayer, 'grant', [t, sig], 'AlreadyGranted');
  await refused(relayer, 'grant', [{ ...t, amountPerPeriod: 50n * USDC }, sig], 'InvalidSignature');
  await refused(relayer, 'grant', [{ ...t, receiver: stranger.address }, sig], 'InvalidSignature');
  const unsigned = await newTerms();
  await refused(relayer, 'grant', [unsigned, await signTerms(unsigned, stranger)], 'InvalidSignature');

  // The same signature means nothing to another deployment (its domain names its own address).
  const second = await chain.deployContract(operator, 'SubscriptionCollector');
  await chain.refusedWith(relayer, second, ABI, 'grant', [t, sig], 'InvalidSignature');

  for (const bad of [
    { period: 0 },
    { end: t.start },
    { receiver: '0x0000000000000000000000000000000000000000' as Address },
    { amountPerPeriod: 0n },
  ]) {
    const b = { ...(await newTerms()), ...bad };
    await refused(relayer, 'grant', [b, await signTerms(b)], 'InvalidTerms');
  }
  const over = await newTerms({ end: (await chain.now()) - 1, start: (await chain.now()) - 100 });
  await refused(relayer, 'grant', [over, await signTerms(over)], 'Ended');
});

test('chargeBatch charges every grant it can once and reports the others, which stay unchanged', async () => {
  const broke = await chain.newWallet();
  const [a, b, c] = [await granted(), await granted(), await granted({}, broke)];
  const items = [a, b, c, a].map((terms) => ({ terms, amount: 4n * USDC }));

  // Called by anyone but the operator, nothing moves.
  const strangerRun = await send(stranger, 'chargeBatch', [items]);
  assert.equal(failures(strangerRun).length, 4);
  assert.equal(await balance(a.receiver), 0n);

  const receipt = await send(operator, 'chargeBatch', [items]);
  assert.deepEqual(
    failures(receipt).map((f) => [f.index, f.reason]),
    [
      [2n, toFunctionSelector('TransferFailed()')],
      [3n, toFunctionSelector('AlreadyChargedThisPeriod()')],
    ],
  );
  assert.equal(await balance(a.receiver), 4n * USDC);
  assert.equal(await balance(b.receiver), 4n * USDC);
  assert.equal(await balance(c.receiver), 0n);
  assert.deepEqual(await grantState(c), { status: 1, nextPeriod: 0, charges: 0, charged: 0n });

  // Funded within the period, the failed grant can still be charged for it.
  await chain.receipt(await chain.mint(operator, usdc, broke.address, 4n * USDC));
  await send(operator, 'charge', [c, 4n * USDC]);
  assert.equal(await balance(c.receiver), 4n * USDC);
});

function failures(receipt: Awaited<ReturnType<TestChain['receipt']>>) {
  return receipt.logs
    .filter((l) => l.address.toLowerCase() === collector.toLowerCase())
    .map((l) => decodeEventLog({ abi: subscriptionCollectorAbi, data: l.data, topics: l.topics }))
    .filter((e) => e.eventName === 'ChargeFailed')
    .map((e) => e.args as { index: bigint; reason: Hex });
}
