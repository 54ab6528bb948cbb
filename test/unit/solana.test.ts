/**
 * Solana pieces that need no chain: SLIP-0010 keys (a published vector), Solana Pay URIs, transfers read from block
 * balances (including a transfer made by an inner instruction, which only balances show), and the `solana` settings.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseSolanaSettings } from '../../src/chains/solana/config.ts';
import { SolanaKeys } from '../../src/chains/solana/keys.ts';
import { transferRequestUri } from '../../src/chains/solana/pay.ts';
import { transfersOf } from '../../src/chains/solana/blocks.ts';
import type { TokenConfig } from '../../src/chains/types.ts';
import { parseTransferRequestUri } from '../harness/transfer-request.ts';

const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';

describe('keys', () => {
  test("the hot wallet is the mnemonic's first Solana account (m/44'/501'/0'/0', as wallet apps derive it)", () => {
    assert.equal(new SolanaKeys(MNEMONIC).hotWallet().address, 'HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk');
  });
  test('deposit keys: the same seed gives the same key; modes, indices and seeds give different keys', () => {
    const a = new SolanaKeys(MNEMONIC);
    const b = new SolanaKeys(MNEMONIC);
    assert.equal(a.deposit('test', 7n).address, b.deposit('test', 7n).address);
    const all = new Set([
      a.deposit('test', 7n).address,
      a.deposit('live', 7n).address,
      a.deposit('test', 8n).address,
      a.hotWallet().address,
      new SolanaKeys('legal winner thank year wave sausage worth useful legal winner thank yellow').deposit('test', 7n)
        .address,
    ]);
    assert.equal(all.size, 5);
    assert.throws(() => a.deposit('test', 2n ** 31n), RangeError);
    assert.equal(a.reference('X'), b.reference('X'));
    assert.notEqual(a.reference('X'), a.reference('Y'));
  });
});

describe('Solana Pay URIs', () => {
  const usdc = { kind: 'spl' as const, contract: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', decimals: 6 };
  test('SOL and SPL transfer requests, percent-encoded label and message, amounts in whole coins', () => {
    const to = 'HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk';
    assert.equal(
      transferRequestUri({
        recipient: to,
        amount: 1_500_000_000n,
        token: { kind: 'native', contract: null, decimals: 9 },
      }),
      `solana:${to}?amount=1.5`,
    );
    const uri = transferRequestUri({
      recipient: to,
      amount: 25_000_000n,
      token: usdc,
      reference: to,
      label: 'Café & Co',
      message: 'Order #12',
    });
    assert.equal(
      uri,
      `solana:${to}?amount=25&spl-token=${usdc.contract}&reference=${to}&label=Caf%C3%A9%20%26%20Co&message=Order%20%2312`,
    );
    assert.deepEqual(parseTransferRequestUri(uri), {
      recipient: to,
      amount: '25',
      splToken: usdc.contract,
      references: [to],
      label: 'Café & Co',
      message: 'Order #12',
    });
    assert.equal(
      transferRequestUri({ recipient: to, amount: 1n, token: { kind: 'native', contract: null, decimals: 9 } }),
      `solana:${to}?amount=0.000000001`,
    );
  });
});

describe('transfers from block balances', () => {
  const token = (id: string, kind: TokenConfig['kind'], contract: string | null): TokenConfig => ({
    id,
    chain: 'solana',
    symbol: id.split(':')[1]!.toUpperCase(),
    name: id,
    decimals: kind === 'native' ? 9 : 6,
    kind,
    contract,
    minAmount: 1n,
    stable: kind !== 'native',
    coingeckoId: null,
    binanceSymbol: null,
    gasless: false,
  });
  const SOL = token('solana:sol', 'native', null);
  const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
  const USDC = token('solana:usdc', 'spl', MINT);
  const keys = (...k: string[]) => k.map((pubkey, i) => ({ pubkey, signer: i === 0 }));
  const bal = (accountIndex: number, mint: string, owner: string, amount: string) => ({
    accountIndex,
    mint,
    owner,
    uiTokenAmount: { amount },
  });

  test('a program moving SOL and tokens inside inner instructions: only balances tell, and they are read', () => {
    // A router program call: payer → (CPI) System transfer to the key, (CPI) Token transfer to the key's account.
    const tx = {
      meta: {
        err: null,
        preBalances: [10_000_000, 0, 2_039_280, 2_039_280, 1],
        postBalances: [8_994_000, 1_000_000, 2_039_280, 2_039_280, 1],
        preTokenBalances: [bal(2, MINT, 'Payer', '9000000'), bal(3, MINT, 'Key', '0')],
        postTokenBalances: [bal(2, MINT, 'Payer', '4000000'), bal(3, MINT, 'Key', '5000000')],
      },
      transaction: { accountKeys: keys('Payer', 'Key', 'PayerAta', 'KeyAta', 'RouterProgram'), signatures: ['Sig'] },
    };
    const found = transfersOf([tx], SOL, new Map([[MINT, USDC]]));
    assert.deepEqual(
      found.map((t) => ({ to: t.to, token: t.token.id, index: t.index, amount: t.amount, from: t.from })),
      [
        { to: 'Key', token: 'solana:sol', index: 1, amount: 1_000_000n, from: 'Payer' },
        { to: 'Key', token: 'solana:usdc', index: 3, amount: 5_000_000n, from: 'Payer' },
      ],
    );
  });

  test('failed transactions, other mints, decreases and accounts created by the transfer', () => {
    const failed = {
      meta: {
        err: { InstructionError: [0, 'Custom'] },
        preBalances: [5, 0],
        postBalances: [0, 5],
        preTokenBalances: [],
        postTokenBalances: [],
      },
      transaction: { accountKeys: keys('A', 'B'), signatures: ['F'] },
    };
    const other = {
      meta: {
        err: null,
        preBalances: [5, 0],
        postBalances: [5, 0],
        preTokenBalances: [],
        postTokenBalances: [bal(1, 'OtherMint', 'B', '7')],
      },
      transaction: { accountKeys: keys('A', 'BAta'), signatures: ['O'] },
    };
    const created = {
      meta: {
        err: null,
        preBalances: [5, 0],
        postBalances: [5, 0],
        preTokenBalances: [],
        postTokenBalances: [bal(1, MINT, 'B', '7')],
      },
      transaction: { accountKeys: keys('A', 'BAta'), signatures: ['C'] },
    };
    const found = transfersOf([failed, other, created], null, new Map([[MINT, USDC]]));
    assert.deepEqual(
      found.map((t) => [t.signature, t.to, t.amount]),
      [['C', 'B', 7n]],
    );
  });

  test('balances that do not match the accounts are a node answer that does not fit, not a deposit of the balance', () => {
    const short = (preBalances: number[], postBalances: number[]) => ({
      meta: { err: null, preBalances, postBalances, preTokenBalances: [], postTokenBalances: [] },
      transaction: { accountKeys: keys('Payer', 'Key'), signatures: ['Short'] },
    });
    for (const tx of [short([5_000_000], [4_000_000, 1_000_000]), short([5_000_000, 0], [4_000_000])])
      assert.throws(
        () => transfersOf([tx], SOL, new Map()),
        (e: Error) => e.name === 'InconsistentChainError' && /transaction Short lists 2 accounts/.test(e.message),
      );
  });
});

describe('settings', () => {
  test('defaults, values and refusals name the field', () => {
    assert.deepEqual(parseSolanaSettings(undefined, 'x'), {
      treasury: null,
      startSlot: null,
      rpcTimeoutMs: 10000,
      maxSlotsPerTick: 1000,
      sweepIntervalSeconds: 0,
      ataCloseAfterSeconds: 172800,
    });
    assert.equal(
      parseSolanaSettings({ treasury: 'HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk', start_slot: 5 }, 'x').startSlot,
      5n,
    );
    assert.throws(
      () => parseSolanaSettings({ treasury: '0xabc' }, 'n.solana'),
      /n\.solana\.treasury must be a Solana address/,
    );
    assert.throws(() => parseSolanaSettings({ sweep_interval_s: -1 }, 'n.solana'), /sweep_interval_s/);
    assert.throws(() => parseSolanaSettings({ nope: 1 }, 'n.solana'), /n\.solana\.nope is not a known setting/);
  });
});
