/**
 * The UTXO family's addresses and signing, offline: BIP-84 derivation against the published test vectors (the
 * BIP's "abandon … about" mnemonic), the network checks of `isValidAddress` (a mainnet address is not a testnet
 * one, a broken checksum is refused), BIP-21 URIs, the `utxo` settings of the networks files, and a P2WPKH input
 * signed with a BIP-84 key verifying under BIP-143.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { secp256k1 } from '@noble/curves/secp256k1';
import { bech32m, hex } from '@scure/base';
import { p2wpkh, SigHash, Transaction, WIF } from '@scure/btc-signer';
import {
  accountKey,
  bip21Uri,
  childKey,
  isValidOnAnyNetwork,
  isValidUtxoAddress,
  p2wpkhAddress,
  rootKey,
} from '../../src/chains/utxo/address.ts';
import { parseUtxoSettings } from '../../src/chains/utxo/config.ts';
import utxo from '../../src/chains/utxo/index.ts';
import { utxoParams } from '../../src/chains/utxo/params.ts';
import { satoshis } from '../../src/chains/utxo/rpc.ts';
import { ConfigError } from '../../src/config.ts';
import { parseNetworks } from '../../src/chains/networks.ts';

const MNEMONIC = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
const btc = utxoParams('bitcoin', 'mainnet');

describe('BIP-84 test vectors', () => {
  const account = accountKey(rootKey(MNEMONIC), btc, 0);

  test("account m/84'/0'/0' extended keys (as xprv/xpub; the BIP writes them with zprv/zpub version bytes)", () => {
    // The same key material as the BIP's zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs
    assert.equal(
      account.publicExtendedKey,
      'xpub6CatWdiZiodmUeTDp8LT5or8nmbKNcuyvz7WyksVFkKB4RHwCD3XyuvPEbvqAQY3rAPshWcMLoP2fMFMKHPJ4ZeZXYVUhLv1VMrjPC7PW6V',
    );
  });

  test("first receiving address m/84'/0'/0'/0/0: keys and address", () => {
    const key = childKey(account, 0, 0n);
    assert.equal(WIF(btc.address).encode(key.privateKey!), 'KyZpNDKnfs94vbrwhJneDi77V6jF64PWPF8x5cdJb8ifgg2DUc9d');
    assert.equal(hex.encode(key.publicKey!), '0330d54fd0dd420a6e5f8d3624f5f3482cae350f79d5f0753bf5beef9c2d91af3c');
    assert.equal(p2wpkhAddress(key.publicKey!, btc), 'bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu');
  });

  test("second receiving address m/84'/0'/0'/0/1 and first change address m/84'/0'/0'/1/0", () => {
    const second = childKey(account, 0, 1n);
    assert.equal(WIF(btc.address).encode(second.privateKey!), 'Kxpf5b8p3qX56DKEe5NqWbNUP9MnqoRFzZwHRtsFqhzuvUJsYZCy');
    assert.equal(hex.encode(second.publicKey!), '03e775fd51f0dfb8cd865d9ff1cca2a158cf651fe997fdc9fee9c1d3b5e995ea77');
    assert.equal(p2wpkhAddress(second.publicKey!, btc), 'bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g');
    const change = childKey(account, 1, 0n);
    assert.equal(WIF(btc.address).encode(change.privateKey!), 'KxuoxufJL5csa1Wieb2kp29VNdn92Us8CoaUG3aGtPtcF3AzeXvF');
    assert.equal(hex.encode(change.publicKey!), '03025324888e429ab8e3dbaf1f7802648b9cd01e9b418485c5fa4c1b9b5700e1a6');
    assert.equal(p2wpkhAddress(change.publicKey!, btc), 'bc1q8c6fshw2dlwun7ekn9qwf37cu2rn755upcp6el');
  });

  test('test networks use coin type 1 and their own prefixes; Litecoin mainnet uses coin type 2', () => {
    const root = rootKey(MNEMONIC);
    const tb = utxoParams('bitcoin', 'testnet');
    const a = p2wpkhAddress(childKey(accountKey(root, tb, 0), 0, 0n).publicKey!, tb);
    assert.match(a, /^tb1q/);
    assert.equal(utxoParams('bitcoin', 'regtest').coinType, 1);
    assert.equal(utxoParams('litecoin', 'mainnet').coinType, 2);
    const ltc = utxoParams('litecoin', 'mainnet');
    assert.match(p2wpkhAddress(childKey(accountKey(root, ltc, 0), 0, 0n).publicKey!, ltc), /^ltc1q/);
  });

  test("indexes outside BIP-32's non-hardened range are refused", () => {
    assert.throws(() => childKey(account, 0, 2n ** 31n), /range/);
  });
});

describe('address checks', () => {
  const testnet = utxoParams('bitcoin', 'testnet');
  test('network and checksum', () => {
    assert.equal(isValidUtxoAddress('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu', btc), true);
    assert.equal(
      isValidUtxoAddress('BC1QCR8TE4KR609GCAWUTMRZA0J4XV80JY8Z306FYU', btc),
      true,
      'upper case bech32 is valid',
    );
    assert.equal(isValidUtxoAddress('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyv', btc), false, 'checksum');
    assert.equal(
      isValidUtxoAddress('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu', testnet),
      false,
      'a mainnet address on testnet',
    );
    assert.equal(isValidUtxoAddress('tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', testnet), true);
    assert.equal(isValidUtxoAddress('tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', btc), false);
    // Legacy and taproot destinations are valid refund targets.
    assert.equal(isValidUtxoAddress('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', btc), true);
    assert.equal(isValidUtxoAddress('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3', btc), false);
    assert.equal(isValidUtxoAddress('3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy', btc), true);
    assert.equal(isValidUtxoAddress('bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297', btc), true);
    assert.equal(isValidUtxoAddress('ltc1qcr8te4kr609gcawutmrza0j4xv80jy8zuqy4w0', btc), false);
    // Well-formed bech32m that no output script can pay: a taproot program off the curve, other versions/lengths.
    const rltc = utxoParams('litecoin', 'regtest');
    const witness = (version: number, program: Uint8Array) =>
      bech32m.encode('rltc', [version, ...bech32m.toWords(program)]);
    assert.equal(
      isValidUtxoAddress(witness(1, new Uint8Array(32).fill(0xff)), rltc),
      false,
      'taproot program that is not an x-only key',
    );
    assert.equal(isValidUtxoAddress(witness(1, new Uint8Array(20).fill(0x11)), rltc), false, 'witness v1 of 20 bytes');
    assert.equal(isValidUtxoAddress(witness(2, new Uint8Array(32).fill(0x11)), rltc), false, 'witness v2');
    const xOnly = secp256k1.getPublicKey(new Uint8Array(32).fill(7), true).subarray(1);
    assert.equal(isValidUtxoAddress(witness(1, xOnly), rltc), true, 'taproot to a valid x-only key');
    assert.equal(isValidUtxoAddress('', btc), false);
    assert.equal(isValidUtxoAddress('0x52908400098527886E0F7030069857D2E4169EE7', btc), false);
  });

  test('the family-wide format checks the network it is told, else any known one', () => {
    const doc = {
      networks: [
        {
          id: 'bitcoin',
          name: 'Bitcoin',
          family: 'utxo',
          confirmation_tiers: [{ max_usd_cents: null, confirmations: 1 }],
          finality_confirmations: 6,
          tokens: [
            {
              symbol: 'btc',
              name: 'Bitcoin',
              decimals: 8,
              kind: 'native',
              min_amount: '0.00001',
              coingecko_id: 'bitcoin',
            },
          ],
          utxo: { coin: 'bitcoin', network: 'testnet' },
        },
      ],
    };
    const [network] = parseNetworks(doc, 'networks.json', [utxo]);
    assert.equal(utxo.format.isValidAddress('tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', network), true);
    assert.equal(utxo.format.isValidAddress('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu', network), false);
    assert.equal(isValidOnAnyNetwork('bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu'), true);
    const simulated = utxo.format.addressFromBytes(new Uint8Array(32).fill(7), network);
    assert.match(simulated, /^tb1q/);
    assert.equal(utxo.format.isValidAddress(simulated, network), true);
    assert.equal(
      utxo.format.paymentUri(network!, network!.tokens[0]!, simulated, 150_000n),
      `bitcoin:${simulated}?amount=0.0015`,
    );
  });
});

describe('BIP-21 and amounts', () => {
  test("amount in whole coins without trailing zeros; the coin's scheme", () => {
    assert.equal(
      bip21Uri(btc, 'bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu', 123_456_789n, 8),
      'bitcoin:bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu?amount=1.23456789',
    );
    assert.equal(bip21Uri(utxoParams('litecoin', 'mainnet'), 'ltc1qx', 100_000_000n, 8), 'litecoin:ltc1qx?amount=1');
  });

  test('node amounts are read exactly, never through a float', () => {
    assert.equal(satoshis('20999999.97690000'), 2_099_999_997_690_000n);
    assert.equal(satoshis('0.00000001'), 1n);
    assert.equal(satoshis('1e-8'), 1n);
    assert.equal(satoshis('-0.5'), -50_000_000n);
  });
});

describe('settings', () => {
  test('coin and network are required; unknown and bad values are refused', () => {
    assert.throws(() => parseUtxoSettings(undefined, 'n.utxo'), ConfigError);
    assert.throws(
      () => parseUtxoSettings({ coin: 'dogecoin', network: 'mainnet' }, 'n.utxo'),
      /coin must be one of bitcoin, litecoin/,
    );
    assert.throws(
      () => parseUtxoSettings({ coin: 'bitcoin', network: 'mainnet', colour: 1 }, 'n.utxo'),
      /colour is not a known setting/,
    );
    assert.throws(
      () =>
        parseUtxoSettings(
          { coin: 'bitcoin', network: 'mainnet', treasury: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx' },
          'n.utxo',
        ),
      /treasury must be a bitcoin mainnet address/,
    );
    const s = parseUtxoSettings({ coin: 'litecoin', network: 'regtest', max_fee_rate: 50 }, 'n.utxo');
    assert.equal(s.params.address.bech32, 'rltc');
    assert.equal(s.maxFeeRate, 50n);
  });
});

describe('signing', () => {
  test('a P2WPKH input signed with the BIP-84 key verifies under BIP-143 and the transaction is final', () => {
    const key = childKey(accountKey(rootKey(MNEMONIC), btc, 0), 0, 0n);
    const payment = p2wpkh(key.publicKey!, btc.address);
    const tx = new Transaction();
    tx.addInput({
      txid: '11'.repeat(32),
      index: 0,
      witnessUtxo: { script: payment.script, amount: 100_000n },
      sequence: 0xfffffffd,
    });
    tx.addOutputAddress('bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g', 99_000n, btc.address);
    tx.sign(key.privateKey!);
    tx.finalize();
    const witness = tx.getInput(0).finalScriptWitness!;
    assert.equal(hex.encode(witness[1]!), hex.encode(key.publicKey!));
    const der = witness[0]!.subarray(0, -1);
    assert.equal(witness[0]![witness[0]!.length - 1], SigHash.ALL);
    const sighash = tx.preimageWitnessV0(
      0,
      new Uint8Array([0x76, 0xa9, 0x14, ...payment.hash, 0x88, 0xac]),
      SigHash.ALL,
      100_000n,
    );
    assert.equal(secp256k1.verify(der, sighash, key.publicKey!, { format: 'der', prehash: false } as never), true);
    const other = sighash.slice();
    other[0]! ^= 1;
    assert.equal(
      secp256k1.verify(der, other, key.publicKey!, { format: 'der', prehash: false } as never),
      false,
      'another message does not verify',
    );
    assert.match(tx.hex, /^02000000000101/, 'version 2, segwit marker, one input');
  });
});
