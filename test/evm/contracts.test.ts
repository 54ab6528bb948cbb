/**
 * The Solidity contracts on a real chain (the run's shared Hardhat node; own wallets and contracts, so the other
 * file running beside it cannot disturb anything asserted here): offline CREATE2 derivation agrees with the factory,
 * sweeps deploy forwarders and move ERC-20 and native balances to the treasury, a deployed forwarder sweeps again,
 * only the owner sweeps, and TestUSDC's EIP-3009 transferWithAuthorization works with a viem signature.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, test } from 'node:test';
import { encodeFunctionData, getAddress, parseEther, type Address, type Hex } from 'viem';
import { english, generateMnemonic } from 'viem/accounts';
import {
  forwarderAddress,
  forwarderImplementation,
  forwarderSalt,
  forwarderSaltKey,
} from '../../src/chains/evm/address.ts';
import { erc20Abi, forwarderFactoryAbi } from '../../src/chains/evm/contracts.ts';
import {
  hardhatChain,
  sharedEvmRpc,
  TestChain,
  type TestWallet,
  TRANSFER_WITH_AUTHORIZATION_TYPES,
} from '../harness/hardhat.ts';

let chain: TestChain;
let operator: TestWallet;
let payer: TestWallet;
let usdc: Address;
let factory: Address;
let treasury: Address;
const saltKey = forwarderSaltKey(generateMnemonic(english));

before(async () => {
  chain = new TestChain(sharedEvmRpc());
  operator = await chain.newWallet();
  payer = await chain.newWallet();
  treasury = (await chain.newWallet('0')).address;
  usdc = await chain.deployTestUsdc(operator);
  factory = await chain.deployFactory(operator, treasury);
  await chain.receipt(await chain.mint(payer, usdc, payer.address, 1_000_000_000n));
});

async function sweep(from: TestWallet, salts: Hex[], tokens: Address[]) {
  const hash = await from.sendTransaction({
    to: factory,
    data: encodeFunctionData({ abi: forwarderFactoryAbi, functionName: 'sweep', args: [salts, tokens] }),
    account: from.account,
    chain: hardhatChain,
  });
  return chain.receipt(hash);
}

test('offline derivation matches the factory and is deterministic per mode, chain and index', async () => {
  const impl = await chain.client.readContract({
    address: factory,
    abi: forwarderFactoryAbi,
    functionName: 'implementation',
  });
  assert.equal(impl, forwarderImplementation(factory));
  for (const index of [0n, 1n, 7n, 123456789n]) {
    const salt = forwarderSalt(saltKey, 'test', 'base', index);
    const onChain = await chain.client.readContract({
      address: factory,
      abi: forwarderFactoryAbi,
      functionName: 'forwarderAddress',
      args: [salt],
    });
    assert.equal(forwarderAddress(factory, salt), onChain);
  }
  const a = forwarderSalt(saltKey, 'test', 'base', 1n);
  assert.equal(forwarderSalt(saltKey, 'test', 'base', 1n), a);
  assert.notEqual(forwarderSalt(saltKey, 'live', 'base', 1n), a);
  assert.notEqual(forwarderSalt(saltKey, 'test', 'ethereum', 1n), a);
  assert.notEqual(forwarderSalt(forwarderSaltKey(generateMnemonic(english)), 'test', 'base', 1n), a);
});

test('a batch sweep deploys forwarders and moves ERC-20 and native balances to the treasury; a second sweep works on deployed ones', async () => {
  const salts = [0n, 1n, 2n].map((i) => forwarderSalt(saltKey, 'test', 'sweep-test', i));
  const addrs = salts.map((s) => forwarderAddress(factory, s));
  await chain.receipt(await chain.sendToken(payer, usdc, addrs[0]!, 10_000_000n));
  await chain.receipt(await chain.sendToken(payer, usdc, addrs[1]!, 2_500_000n));
  await chain.receipt(await chain.sendEth(payer, addrs[1]!, parseEther('0.5')));
  await chain.receipt(await chain.sendEth(payer, addrs[2]!, parseEther('0.25')));
  for (const a of addrs)
    assert.equal(await chain.client.getCode({ address: a }), undefined, 'no code before the first sweep');

  const r = await sweep(operator, salts, [usdc]);
  assert.equal(await chain.tokenBalance(usdc, treasury), 12_500_000n);
  assert.equal(await chain.balance(treasury), parseEther('0.75'));
  for (const a of addrs) {
    assert.equal(await chain.tokenBalance(usdc, a), 0n);
    assert.equal(await chain.balance(a), 0n);
    assert.ok(((await chain.client.getCode({ address: a })) ?? '0x').length > 2, 'forwarder deployed');
  }
  process.stdout.write(`# sweep of 3 new forwarders (1 token): ${r.gasUsed} gas\n`);

  // Money arriving after the forwarder exists (native through receive(), which now runs code) is swept again.
  await chain.receipt(await chain.sendToken(payer, usdc, addrs[0]!, 1_000_000n));
  await chain.receipt(await chain.sendEth(payer, addrs[0]!, parseEther('0.1')));
  const again = await sweep(operator, [salts[0]!], [usdc]);
  assert.equal(await chain.tokenBalance(usdc, treasury), 13_500_000n);
  assert.equal(await chain.balance(treasury), parseEther('0.85'));
  process.stdout.write(`# second sweep of 1 deployed forwarder: ${again.gasUsed} gas\n`);
});

test('only the owner sweeps, and only the factory can flush a forwarder', async () => {
  const salt = forwarderSalt(saltKey, 'test', 'owner-test', 0n);
  await assert.rejects(sweep(payer, [salt], [usdc]));
  await sweep(operator, [salt], [usdc]);
  const forwarder = forwarderAddress(factory, salt);
  await assert.rejects(async () =>
    chain.receipt(
      await payer.sendTransaction({
        to: forwarder,
        data: encodeFunctionData({
          abi: [
            {
              type: 'function',
              name: 'flush',
              inputs: [{ type: 'address[]' }, { type: 'address' }],
              outputs: [],
              stateMutability: 'nonpayable',
            },
          ],
          functionName: 'flush',
          args: [[usdc], payer.address],
        }),
        account: payer.account,
        chain: hardhatChain,
        gas: 200_000n,
      }),
    ),
  );
});

test('TestUSDC: 6 decimals and EIP-3009 transferWithAuthorization, single use', async () => {
  assert.equal(await chain.client.readContract({ address: usdc, abi: erc20Abi, functionName: 'decimals' }), 6);
  const to = getAddress(`0x${randomBytes(20).toString('hex')}`);
  const nonce = `0x${randomBytes(32).toString('hex')}` as Hex;
  const message = {
    from: payer.address,
    to,
    value: 4_200_000n,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
    nonce,
  };
  const signature = await payer.signTypedData({
    account: payer.account,
    domain: { name: 'Test USDC', version: '2', chainId: 31337, verifyingContract: usdc },
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  const relayer = await chain.newWallet();
  const submit = async () =>
    chain.receipt(
      await relayer.sendTransaction({
        to: usdc,
        data: encodeFunctionData({
          abi: erc20Abi,
          functionName: 'transferWithAuthorization',
          args: [message.from, message.to, message.value, message.validAfter, message.validBefore, nonce, signature],
        }),
        account: relayer.account,
        chain: hardhatChain,
        gas: 200_000n,
      }),
    );
  await submit();
  assert.equal(await chain.tokenBalance(usdc, to), 4_200_000n);
  assert.equal(
    await chain.client.readContract({
      address: usdc,
      abi: erc20Abi,
      functionName: 'authorizationState',
      args: [payer.address, nonce],
    }),
    true,
  );
  await assert.rejects(submit(), 'a used authorization is refused');
});
