/** The networks files and the chain registry: shipped files load, bad files fail with the field named, fallback addresses. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { getAddress } from 'viem';
import { installedFamilies } from '../../src/chains/families.ts';
import { confirmationTier, explorerTxUrl, loadNetworks, parseNetworks } from '../../src/chains/networks.ts';
import { ChainRegistry } from '../../src/chains/registry.ts';
import { decodeBase58 } from '../../src/chains/solana/index.ts';
import { ConfigError, KASSE_HOME } from '../../src/config.ts';
import { transferConfirmations } from '../../src/chains/evm/transfer.ts';

const families = await installedFamilies();
const live = () => JSON.parse(readFileSync(join(KASSE_HOME, 'config', 'networks.live.json'), 'utf8'));

describe('networks files', () => {
  test('live and test sets share network and token ids; amounts are bigint smallest units', () => {
    const sets = loadNetworks({ networksFile: null }, families);
    const ids = (mode: 'live' | 'test') => sets[mode].flatMap((n) => n.tokens.map((t) => t.id)).sort();
    assert.deepEqual(ids('live'), ids('test'));
    assert.deepEqual(
      sets.live.map((n) => n.id),
      ['ethereum', 'base', 'polygon', 'arbitrum', 'solana', 'bitcoin', 'litecoin'],
    );
    const usdc = sets.live.find((n) => n.id === 'base')!.tokens.find((t) => t.id === 'base:usdc')!;
    assert.equal(usdc.symbol, 'USDC');
    assert.equal(usdc.minAmount, 1_000_000n);
    assert.equal(usdc.contract, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913');
    assert.equal(
      sets.live.find((n) => n.id === 'solana')!.tokens.find((t) => t.id === 'solana:usdc')!.contract,
      'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    );
    assert.deepEqual(
      sets.live.map((n) => n.chainId),
      [1, 8453, 137, 42161, null, null, null],
    );
    assert.deepEqual(
      sets.test.map((n) => n.chainId),
      [11155111, 84532, 80002, 421614, null, null, null],
    );
    for (const n of [...sets.live, ...sets.test]) {
      // Bitcoin and Litecoin are read from the operator's own node: their files ship without RPC URLs.
      assert.ok(
        (n.rpcUrls.length > 0 || n.family === 'utxo') &&
          n.finalityConfirmations >= n.confirmationTiers.at(-1)!.confirmations,
        n.id,
      );
      for (const t of n.tokens)
        if (t.stable) assert.ok(t.minAmount === 10n ** BigInt(t.decimals), `${t.id} minimum is 1 USD`);
    }
  });

  test("token kinds are the families' own; the test file names the simulator's default coin", () => {
    const sets = loadNetworks({ networksFile: null }, families);
    const kinds = (family: string) =>
      [...new Set(sets.live.filter((n) => n.family === family).flatMap((n) => n.tokens.map((t) => t.kind)))].sort();
    assert.deepEqual(kinds('evm'), ['erc20', 'native']);
    assert.deepEqual(kinds('solana'), ['native', 'spl']);
    assert.deepEqual(
      sets.test.flatMap((n) => n.tokens.filter((t) => t.default).map((t) => t.id)),
      ['base:usdc'],
    );
    assert.deepEqual(
      sets.live.flatMap((n) => n.tokens.filter((t) => t.default).map((t) => t.id)),
      [],
    );
  });

  test('ws_urls: the push endpoints of a network, none when absent', () => {
    const doc = live();
    doc.networks[1].ws_urls = ['wss://base.example/ws', 'ws://127.0.0.1:8546'];
    const [ethereum, base] = parseNetworks(doc, 'networks.live.json', families);
    assert.deepEqual(base!.wsUrls, ['wss://base.example/ws', 'ws://127.0.0.1:8546']);
    assert.deepEqual(ethereum!.wsUrls, []);
  });

  test('sender_lease_ms: how long a sender pass holds its transfers, for every family; absent when not set', () => {
    const doc = live();
    for (const n of doc.networks) n.sender_lease_ms = 3000;
    doc.networks[0].sender_lease_ms = undefined;
    const parsed = parseNetworks(doc, 'networks.live.json', families);
    assert.equal(parsed[0]!.senderLeaseMs, undefined);
    assert.deepEqual(
      parsed.slice(1).map((n) => [n.family, n.senderLeaseMs]),
      [
        ['evm', 3000],
        ['evm', 3000],
        ['evm', 3000],
        ['solana', 3000],
        ['utxo', 3000],
        ['utxo', 3000],
      ],
    );
  });

  test('tiers pick confirmations by price; explorer templates', () => {
    const eth = loadNetworks({ networksFile: null }, families).live[0]!;
    assert.deepEqual(confirmationTier(eth, 10_000), { tier: 1, confirmations: 3 });
    assert.deepEqual(confirmationTier(eth, 10_001), { tier: 2, confirmations: 6 });
    assert.deepEqual(confirmationTier(eth, 100_000_000), { tier: 3, confirmations: 12 });
    assert.equal(explorerTxUrl(eth, '0xab'), 'https://etherscan.io/tx/0xab');
    const sol = loadNetworks({ networksFile: null }, families).test.find((n) => n.id === 'solana')!;
    assert.equal(explorerTxUrl(sol, '5x'), 'https://explorer.solana.com/tx/5x?cluster=devnet');
  });

  test("an x402 settlement's relay waits for its amount's tier; other transfers of the hot wallet for the highest", () => {
    const sets = loadNetworks({ networksFile: null }, families);
    const net = (id: string) => sets.live.find((n) => n.id === id)!;
    const x402 = (id: string, units: bigint) =>
      transferConfirmations(net(id), { purpose: 'x402', token: `${id}:usdc`, amount: units.toString() });
    // A tenth of a cent and $100 in USDC: the first tier; $1,000: the second; $1,000,000: the highest.
    assert.deepEqual(
      [1_000n, 100_000_000n, 1_000_000_000n, 1_000_000_000_000n].map((u) => x402('polygon', u)),
      [16, 16, 64, 128],
    );
    assert.deepEqual([x402('ethereum', 1_000n), x402('base', 1_000n)], [3, 5]);
    const refund = { purpose: 'refund', token: 'polygon:usdc', amount: '1000' };
    assert.equal(transferConfirmations(net('polygon'), refund), 128);
  });

  test('a bad file fails with the file, the network and the field named', () => {
    const cases: Array<[(doc: any) => void, RegExp]> = [
      [(d) => (d.networks = []), /"networks" must be a non-empty array/],
      [(d) => (d.networks[1].id = 'Base'), /networks\[1\]\.id/],
      [(d) => (d.networks[1].id = 'ethereum'), /network id "ethereum" appears twice/],
      [(d) => delete d.networks[0].chain_id, /\(ethereum\)\.chain_id is required/],
      [(d) => (d.networks[0].tokens[1].contract = '0x1234'), /\(ethereum:usdc\)\.contract is not an EVM address/],
      [
        (d) => (d.networks[4].tokens[1].contract = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'),
        /\(solana:usdc\)\.contract is not a Solana address/,
      ],
      [(d) => (d.networks[0].tokens[0].min_amount = '0.0000000000000000001'), /\(ethereum:eth\)\.min_amount/],
      [(d) => (d.networks[0].tokens[0].symbol = 'ETH'), /symbol: "ETH" must be lower case/],
      [(d) => (d.networks[0].tokens[2].symbol = 'usdc'), /a symbol appears twice/],
      [(d) => (d.networks[0].confirmation_tiers[1].max_usd_cents = 5000), /max_usd_cents must ascend/],
      [(d) => (d.networks[0].confirmation_tiers[2].max_usd_cents = 10 ** 9), /exactly the last tier/],
      [(d) => (d.networks[0].finality_confirmations = 2), /finality_confirmations must be at least/],
      [
        (d) => Object.assign(d.networks[0].tokens[0], { coingecko_id: null, binance_symbol: null }),
        /needs coingecko_id or binance_symbol/,
      ],
      [(d) => (d.networks[0].family = 'cosmos'), /family must be one of/],
      [(d) => (d.networks[4].sender_lease_ms = 0), /\(solana\)\.sender_lease_ms must be a positive integer/],
      [(d) => (d.networks[1].sender_lease_ms = '3s'), /\(base\)\.sender_lease_ms must be a positive integer/],
      [
        (d) => (d.networks[1].ws_urls = ['https://mainnet.base.org']),
        /\(base\)\.ws_urls must be an array of ws\(s\) URLs/,
      ],
      [(d) => (d.networks[1].ws_urls = 'wss://x.example'), /\(base\)\.ws_urls must be an array of ws\(s\) URLs/],
      [(d) => (d.networks[0].tokens[1].kind = 'spl'), /\(ethereum:usdc\)\.kind must be one of native, erc20$/],
      [(d) => (d.networks[4].tokens[1].kind = 'erc20'), /\(solana:usdc\)\.kind must be one of native, spl$/],
      [(d) => (d.networks[5].tokens[0].kind = 'erc20'), /\(bitcoin:btc\)\.kind must be one of native$/],
      [
        (d) =>
          Object.assign(d.networks[0].tokens[1], { default: true }) &&
          Object.assign(d.networks[1].tokens[1], { default: true }),
        /only one token may be "default": true \(ethereum:usdc, base:usdc are\)/,
      ],
      [
        (d) => (d.networks[0].tokens[1].default = 'yes'),
        /\(ethereum:usdc\): stable, gasless and default must be true or false/,
      ],
    ];
    for (const [mutate, message] of cases) {
      const doc = live();
      mutate(doc);
      assert.throws(
        () => parseNetworks(doc, 'networks.live.json', families),
        (err: unknown) =>
          err instanceof ConfigError && message.test(err.message) && err.message.startsWith('networks.live.json'),
        String(message),
      );
    }
  });
});

describe('chain registry', () => {
  test('fallback addresses are deterministic per key, mode, chain and index, in the family format', async () => {
    const key = randomBytes(32);
    const sets = loadNetworks({ networksFile: null }, families);
    const a = new ChainRegistry(sets, key, families);
    const b = new ChainRegistry(sets, key, families);
    const evm = await a.adapter('test', 'base').deriveAddress(7n);
    assert.equal(evm, getAddress(evm));
    assert.equal(await b.adapter('test', 'base').deriveAddress(7n), evm);
    assert.notEqual(await a.adapter('test', 'base').deriveAddress(8n), evm);
    assert.notEqual(await a.adapter('test', 'ethereum').deriveAddress(7n), evm);
    assert.notEqual(await a.adapter('live', 'base').deriveAddress(7n), evm);
    assert.notEqual(
      await new ChainRegistry(sets, randomBytes(32), families).adapter('test', 'base').deriveAddress(7n),
      evm,
    );
    const sol = await a.adapter('test', 'solana').deriveAddress(7n);
    assert.equal(decodeBase58(sol)!.length, 32);
    assert.ok(a.adapter('test', 'solana').isValidAddress(sol));
    assert.ok(!a.adapter('test', 'solana').isValidAddress('0OIl'));
    assert.ok(a.adapter('test', 'base').isValidAddress(evm.toLowerCase()));
    assert.ok(!a.adapter('test', 'base').isValidAddress(evm.slice(0, -1)));
    assert.throws(() => a.adapter('test', 'mars'), /unknown test network "mars"/);
  });

  test('availability: test networks unless paused; live networks only with a registered adapter', () => {
    const sets = loadNetworks({ networksFile: null }, families);
    sets.test.find((n) => n.id === 'polygon')!.paused = true;
    const reg = new ChainRegistry(sets, randomBytes(32), families);
    assert.equal(reg.available('test', 'base'), true);
    assert.equal(reg.available('test', 'polygon'), false);
    assert.equal(reg.available('live', 'base'), false);
    const fallback = reg.adapter('live', 'base');
    reg.register({
      ...Object.getPrototypeOf(fallback),
      network: fallback.network,
      mode: 'live',
      deriveAddress: (i: bigint) => fallback.deriveAddress(i),
    } as never);
    assert.equal(reg.available('live', 'base'), true);
    assert.throws(
      () => reg.register({ network: { ...fallback.network, id: 'mars' }, mode: 'live' } as never),
      /not configured/,
    );
    assert.deepEqual(reg.tokens().length, new Set(reg.tokens().map((t) => t.id)).size);
  });
});
