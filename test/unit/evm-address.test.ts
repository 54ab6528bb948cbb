/** EVM helpers that need no chain: address checks, EIP-681 URIs, the `evm` settings parser, log blooms, derivation. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytesToHex, hexToBytes, keccak256, type Hex } from 'viem';
import {
  eip681Uri,
  forwarderAddress,
  forwarderSalt,
  forwarderSaltKey,
  isValidEvmAddress,
} from '../../src/chains/evm/address.ts';
import { bloomMayContain } from '../../src/chains/evm/bloom.ts';
import { parseEvmSettings } from '../../src/chains/evm/config.ts';
import { TRANSFER_TOPIC } from '../../src/chains/evm/watcher.ts';
import { ConfigError } from '../../src/config.ts';

const SEED = 'test test test test test test test test test test test junk';

test('isValidEvmAddress: lower, upper and checksummed forms; bad checksum, length and the zero address refused', () => {
  assert.ok(isValidEvmAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'));
  assert.ok(isValidEvmAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913'));
  assert.ok(isValidEvmAddress('0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913'));
  assert.ok(!isValidEvmAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02914'.replace('fCD6', 'FCD6')));
  assert.ok(!isValidEvmAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda0291'));
  assert.ok(!isValidEvmAddress('833589fcd6edb6e08f4c7c32d4f71b54bda02913'));
  assert.ok(!isValidEvmAddress('0x0000000000000000000000000000000000000000'));
});

test('EIP-681 URIs for native coin and ERC-20', () => {
  const network = { chainId: 8453 };
  const to = '0x1111111111111111111111111111111111111111';
  assert.equal(
    eip681Uri(network, { kind: 'native', contract: null }, to, 5_000_000_000_000_000n),
    `ethereum:${to}@8453?value=5000000000000000`,
  );
  assert.equal(
    eip681Uri(network, { kind: 'erc20', contract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' }, to, 10_000_000n),
    `ethereum:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913@8453/transfer?address=${to}&uint256=10000000`,
  );
});

test('derivation is deterministic, offline, and known-answer stable', () => {
  const key = forwarderSaltKey(SEED);
  const factory = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
  const a = forwarderAddress(factory, forwarderSalt(key, 'test', 'base', 1n));
  assert.equal(forwarderAddress(factory, forwarderSalt(forwarderSaltKey(SEED), 'test', 'base', 1n)), a);
  assert.match(a, /^0x[0-9a-fA-F]{40}$/);
  // Pinned: a change here would move every deposit address ever issued.
  assert.equal(
    forwarderSalt(key, 'test', 'base', 1n),
    '0xf935df912824f3bd83c3c21a8231c491e801138423441334b1dabd0728a79a7e',
  );
  assert.equal(a, '0xC054f847e7c48dF8B6eb7A2830898eDA33709441');
  assert.throws(() => forwarderSalt(key, 'test', 'base', -1n), RangeError);
});

test('parseEvmSettings: defaults, addresses checksummed, unknown keys and bad values refused', () => {
  const d = parseEvmSettings(undefined, 'x.evm');
  assert.equal(d.forwarderFactory, null);
  assert.equal(d.blocksPerBatch, 20);
  const s = parseEvmSettings(
    { forwarder_factory: '0x5fbdb2315678afecb367f032d93f642f64180aa3', start_block: 7, blocks_per_batch: 5 },
    'x.evm',
  );
  assert.equal(s.forwarderFactory, '0x5FbDB2315678afecb367f032d93F642f64180aa3');
  assert.equal(s.startBlock, 7n);
  assert.equal(s.blocksPerBatch, 5);
  assert.throws(() => parseEvmSettings({ forwarder: '0x' }, 'x.evm'), ConfigError);
  assert.throws(() => parseEvmSettings({ forwarder_factory: '0x1234' }, 'x.evm'), /forwarder_factory/);
  assert.throws(() => parseEvmSettings({ blocks_per_batch: 0 }, 'x.evm'), /blocks_per_batch/);
  assert.throws(() => parseEvmSettings({ start_block: -1 }, 'x.evm'), /start_block/);
  const zero = `0x${'0'.repeat(40)}`;
  assert.throws(() => parseEvmSettings({ treasury: zero }, 'x.evm'), /x\.evm\.treasury must be a non-zero EVM address/);
  const collector = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
  const escrow = { escrow: collector, erc3009_collector: collector, operator_refund_collector: zero };
  assert.throws(
    () => parseEvmSettings({ auth_capture: escrow }, 'x.evm'),
    /x\.evm\.auth_capture\.operator_refund_collector must be a non-zero EVM address/,
  );
  const held = parseEvmSettings({ auth_capture: { ...escrow, operator_refund_collector: collector } }, 'x.evm');
  assert.equal(held.authCapture?.escrow, '0x5FbDB2315678afecb367f032d93F642f64180aa3');
});

/** A bloom with `items` added, the way a node builds logsBloom. */
function bloomOf(items: Hex[]): Hex {
  const bits = new Uint8Array(256);
  for (const item of items) {
    const h = hexToBytes(keccak256(item));
    for (let i = 0; i < 6; i += 2) {
      const bit = ((h[i]! << 8) | h[i + 1]!) & 2047;
      bits[255 - (bit >> 3)]! |= 1 << (bit & 7);
    }
  }
  return bytesToHex(bits);
}

test('bloomMayContain finds what was added and (almost always) rejects what was not', () => {
  const usdc = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
  const bloom = bloomOf([usdc, TRANSFER_TOPIC]);
  assert.ok(bloomMayContain(bloom, usdc));
  assert.ok(bloomMayContain(bloom, TRANSFER_TOPIC));
  assert.ok(!bloomMayContain(bloom, '0x1111111111111111111111111111111111111111'));
  assert.ok(!bloomMayContain(`0x${'00'.repeat(256)}`, TRANSFER_TOPIC));
});
