/**
 * Kasse on a Solana test node, for the tests under test/solana/ and the Solana benchmark: a USDC mint of its own on
 * the node, a networks file whose test-mode `solana` network points at the node's URLs, fake price providers (SOL at
 * 150 USD), the whole app with a webhook receiver as the merchant's endpoint, a funded hot wallet (SOL and USDC), and
 * a watcher the test ticks by hand. `tick()` runs one watcher poll and delivers the webhooks it caused; `send()`
 * runs one pass of the hot-wallet sender.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SolanaAdapter } from '../../src/chains/solana/adapter.ts';
import { solanaKeys } from '../../src/chains/solana/index.ts';
import type { SolanaTickResult, SolanaWatcher, SolanaWatcherOptions } from '../../src/chains/solana/watcher.ts';
import { startTestKasse, testSecrets, type TestKasse, type TestMerchant } from './app.ts';
import { startBinanceServer, startCoinGeckoServer, type PriceServer } from './price-servers.ts';
import { startSolanaNode, type SolanaNode } from './solana.ts';
import { SolanaTestChain, type Wallet } from './solana-chain.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

export const SOL_USD = '150';

export interface SolanaKasseOptions {
  /** An existing node (restart scenarios, benchmarks); default: a private node with two URLs. */
  node?: Pick<SolanaNode, 'urls' | 'stop'>;
  /** What the networks file names as RPC URLs; default: every URL of the node. */
  rpcUrls?: string[];
  /** The network's `ws_urls` (push); default none. */
  wsUrls?: string[];
  tiers?: Array<{ max_usd_cents: number | null; confirmations: number }>;
  pollIntervalMs?: number;
  solana?: Record<string, unknown>;
  watcher?: Partial<SolanaWatcherOptions>;
  /** Reuse a database, secrets and the chain helper with its mint (restart scenarios). */
  databaseUrl?: string;
  secrets?: ReturnType<typeof testSecrets>;
  chain?: SolanaTestChain;
  receiver?: boolean;
  env?: Record<string, string>;
  /** Skip funding the hot wallet. */
  unfunded?: boolean;
}

export interface SolanaKasse {
  node: Pick<SolanaNode, 'urls' | 'stop'>;
  chain: SolanaTestChain;
  t: TestKasse;
  m: TestMerchant;
  receiver: WebhookReceiver | null;
  usdc: string;
  treasury: string;
  hotWallet: string;
  /** Funds tests' payers (SOL, and the mint's authority for USDC). */
  funder: Wallet;
  adapter: SolanaAdapter;
  watcher: SolanaWatcher;
  secrets: ReturnType<typeof testSecrets>;
  coingecko: PriceServer;
  binance: PriceServer;
  /** A payer with `sol` lamports and `usdc` units (landed in a produced block). */
  payer(sol?: bigint, usdc?: bigint): Promise<Wallet>;
  tick(): Promise<SolanaTickResult>;
  /** One hot-wallet sender pass. */
  send(): Promise<number>;
  eventTypes(paymentId: string): string[];
  close(): Promise<void>;
}

export function solanaNetworksDocument(opts: {
  rpcUrls: string[];
  wsUrls?: string[];
  usdc: string;
  tiers: Array<{ max_usd_cents: number | null; confirmations: number }>;
  pollIntervalMs: number;
  solana?: Record<string, unknown>;
}) {
  return {
    networks: [
      {
        id: 'solana',
        name: 'Solana (local test node)',
        family: 'solana',
        chain_id: null,
        rpc_urls: opts.rpcUrls,
        ...(opts.wsUrls ? { ws_urls: opts.wsUrls } : {}),
        explorer_tx_url: 'https://explorer.solana.com/tx/{tx}?cluster=devnet',
        confirmation_tiers: opts.tiers,
        finality_confirmations: 32,
        poll_interval_ms: opts.pollIntervalMs,
        paused: false,
        tokens: [
          {
            symbol: 'sol',
            name: 'Solana',
            decimals: 9,
            kind: 'native',
            contract: null,
            min_amount: '0.007',
            stable: false,
            coingecko_id: 'solana',
            binance_symbol: 'SOLUSDT',
            gasless: false,
          },
          {
            symbol: 'usdc',
            name: 'USD Coin',
            decimals: 6,
            kind: 'spl',
            contract: opts.usdc,
            min_amount: '1',
            stable: true,
            coingecko_id: 'usd-coin',
            binance_symbol: null,
            gasless: true,
          },
        ],
        ...(opts.solana ? { solana: opts.solana } : {}),
      },
    ],
  };
}

export async function startSolanaKasse(opts: SolanaKasseOptions = {}): Promise<SolanaKasse> {
  const node = opts.node ?? (await startSolanaNode({ listeners: 2 }));
  const chain = opts.chain ?? new SolanaTestChain(node.urls[0]!);
  const funder = await chain.newWallet(10n ** 15n);
  await chain.produce();
  const usdc = chain.usdc ?? (await chain.createUsdc(funder));
  await chain.produce();
  const treasury = (await chain.newWallet(0n)).address;
  const dir = mkdtempSync(join(tmpdir(), 'kasse-solana-'));
  const networksFile = join(dir, 'networks.test.json');
  writeFileSync(
    networksFile,
    JSON.stringify(
      solanaNetworksDocument({
        rpcUrls: opts.rpcUrls ?? node.urls,
        wsUrls: opts.wsUrls,
        usdc,
        tiers: opts.tiers ?? [
          { max_usd_cents: 10000, confirmations: 1 },
          { max_usd_cents: null, confirmations: 32 },
        ],
        pollIntervalMs: opts.pollIntervalMs ?? 10_000,
        solana: { treasury, ...opts.solana },
      }),
      null,
      2,
    ),
  );
  const coingecko = await startCoinGeckoServer();
  const binance = await startBinanceServer();
  coingecko.setPrice('solana', SOL_USD);
  binance.setPrice('SOLUSDT', SOL_USD);
  const secrets = opts.secrets ?? testSecrets();
  const t = await startTestKasse({
    env: {
      KASSE_NETWORKS_FILE: networksFile,
      KASSE_COINGECKO_URL: coingecko.url,
      KASSE_BINANCE_URL: binance.url,
      ...opts.env,
    },
    secrets,
    databaseUrl: opts.databaseUrl,
  });
  coingecko.setPrice('solana', SOL_USD, t.clock.now());
  let receiver: WebhookReceiver | null = null;
  let m: TestMerchant;
  let adapter: SolanaAdapter;
  let hotWallet: string;
  try {
    receiver = opts.receiver === false ? null : await startWebhookReceiver({ now: () => t.clock.now() });
    m = await t.merchant({ webhookUrl: receiver?.url ?? null });
    receiver?.setSecret(m.webhookSecret);
    const a = t.kasse.chains.adapter('test', 'solana');
    if (!(a instanceof SolanaAdapter)) throw new Error('solana has no SolanaAdapter');
    adapter = a;
    hotWallet = solanaKeys(t.kasse.secrets).hotWallet().address;
    if (!opts.unfunded) {
      await chain.rpc('requestAirdrop', [hotWallet, 100_000_000_000]);
      await chain.mintUsdc(funder, hotWallet, 1_000_000_000n);
      await chain.produce();
    }
  } catch (err) {
    await t.close().catch(() => {});
    await receiver?.close().catch(() => {});
    await coingecko.close();
    await binance.close();
    throw err;
  }
  const watcher = adapter.watcher(t.kasse.payments.deposits, { retryBackoffMs: 10, ...opts.watcher });
  return {
    node,
    chain,
    t,
    m,
    receiver,
    usdc,
    treasury,
    hotWallet,
    funder,
    adapter,
    watcher,
    secrets,
    coingecko,
    binance,
    async payer(sol = 10_000_000_000n, usdcAmount = 0n) {
      const w = await chain.newWallet(sol);
      if (usdcAmount > 0n) await chain.mintUsdc(funder, w.address, usdcAmount);
      await chain.produce();
      return w;
    },
    async tick() {
      const r = await watcher.tick();
      await t.kasse.webhooks.drain();
      return r;
    },
    async send() {
      const n = await adapter.sender!.runDue();
      await t.kasse.webhooks.drain();
      return n;
    },
    eventTypes(paymentId) {
      return (receiver?.events ?? []).filter((e) => e.data?.id === paymentId).map((e) => e.type);
    },
    async close() {
      await watcher.stop();
      await t.close();
      await receiver?.close();
      await coingecko.close();
      await binance.close();
      if (!opts.node) await node.stop();
    },
  };
}
