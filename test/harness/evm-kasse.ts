/**
 * Kasse on a local EVM chain, for the tests under test/evm/ and the EVM benchmark: deploys its own TestUSDC and
 * ForwarderFactory (owned by a funded hot wallet, so sweeps work) on the given node, writes a networks file whose
 * test-mode `base` points at the node (or at an RPC proxy in front of it), starts fake price providers (ETH at
 * 3000 USD), the whole app with a webhook receiver as the merchant's endpoint, and an EVM watcher that the test ticks
 * by hand. `tick()` runs one watcher poll and then delivers the webhooks it caused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { EvmAdapter } from '../../src/chains/evm/adapter.ts';
import { KASSE_HOME } from '../../src/config.ts';
import type { EvmWatcher, EvmWatcherOptions, TickResult } from '../../src/chains/evm/watcher.ts';
import { startTestKasse, testSecrets, type TestKasse, type TestMerchant } from './app.ts';
import { SERVER } from './commands.ts';
import { TestChain, type TestWallet } from './hardhat.ts';
import { startBinanceServer, startCoinGeckoServer, type PriceServer } from './price-servers.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

export const ETH_USD = '3000';

export interface EvmKasseOptions {
  /** The node the contracts are deployed on and the test talks to. */
  rpcUrl: string;
  /** What Kasse's networks file names as the RPC URL(s) (an RPC proxy); default `[rpcUrl]`. */
  kasseRpcUrls?: string[];
  /** The network's `ws_urls` (push); default none. */
  wsUrls?: string[];
  /** Confirmation tiers (price in cents → confirmations); default ≤ $100: 3, above: 5. */
  tiers?: Array<{ max_usd_cents: number | null; confirmations: number }>;
  finality?: number;
  pollIntervalMs?: number;
  /** Extra settings for the network's `evm` object (e.g. rpc_timeout_ms). */
  evm?: Record<string, unknown>;
  watcher?: Partial<EvmWatcherOptions>;
  /** Reuse contracts from an earlier start (restart scenarios). */
  contracts?: { usdc: Address; factory: Address; treasury: Address; hotWalletKey: Hex };
  /** Reuse a database and secrets (restart scenarios). */
  databaseUrl?: string;
  secrets?: ReturnType<typeof testSecrets>;
  /** Skip the webhook receiver (benchmarks with many merchants do their own). */
  receiver?: boolean;
  env?: Record<string, string>;
}

export interface EvmKasse {
  chain: TestChain;
  t: TestKasse;
  m: TestMerchant;
  receiver: WebhookReceiver | null;
  usdc: Address;
  factory: Address;
  treasury: Address;
  hotWalletKey: Hex;
  /** Pays for everything the test sends (USDC minted to it). */
  payer: TestWallet;
  adapter: EvmAdapter;
  watcher: EvmWatcher;
  networksFile: string;
  secrets: ReturnType<typeof testSecrets>;
  coingecko: PriceServer;
  binance: PriceServer;
  /** One watcher poll, then delivery of the webhooks it caused. */
  tick(): Promise<TickResult>;
  /**
   * The hot wallet's queue until it is idle (at most 12 passes): each pass signs, broadcasts or settles, a block mined
   * between passes; then the webhooks it caused are delivered.
   */
  settleQueue(): Promise<void>;
  /** Event types received so far for `paymentId`, in order. */
  eventTypes(paymentId: string): string[];
  close(): Promise<void>;
}

export function networksDocument(opts: {
  rpcUrls: string[];
  wsUrls?: string[];
  usdc: Address;
  factory: Address;
  treasury: Address;
  tiers: Array<{ max_usd_cents: number | null; confirmations: number }>;
  finality: number;
  pollIntervalMs: number;
  evm?: Record<string, unknown>;
}) {
  return {
    networks: [
      {
        id: 'base',
        name: 'Base (local Hardhat)',
        family: 'evm',
        chain_id: 31337,
        rpc_urls: opts.rpcUrls,
        ...(opts.wsUrls ? { ws_urls: opts.wsUrls } : {}),
        explorer_tx_url: 'https://sepolia.basescan.org/tx/{tx}',
        confirmation_tiers: opts.tiers,
        finality_confirmations: opts.finality,
        poll_interval_ms: opts.pollIntervalMs,
        paused: false,
        tokens: [
          {
            symbol: 'eth',
            name: 'Ether',
            decimals: 18,
            kind: 'native',
            contract: null,
            min_amount: '0.0004',
            stable: false,
            coingecko_id: 'ethereum',
            binance_symbol: 'ETHUSDT',
            gasless: false,
          },
          {
            symbol: 'usdc',
            name: 'USD Coin',
            decimals: 6,
            kind: 'erc20',
            contract: opts.usdc,
            min_amount: '1',
            stable: true,
            coingecko_id: 'usd-coin',
            binance_symbol: null,
            gasless: true,
          },
        ],
        evm: { forwarder_factory: opts.factory, treasury: opts.treasury, ...opts.evm },
      },
    ],
  };
}

export async function startEvmKasse(opts: EvmKasseOptions): Promise<EvmKasse> {
  const chain = new TestChain(opts.rpcUrl);
  const payer = await chain.newWallet('100000');
  let contracts = opts.contracts;
  if (!contracts) {
    const deployer = await chain.newWallet();
    const hotWalletKey = generatePrivateKey();
    const hot = privateKeyToAccount(hotWalletKey);
    await chain.setBalance(hot.address, 10n ** 21n);
    const treasury = (await chain.newWallet('0')).address;
    const usdc = await chain.deployTestUsdc(deployer);
    const factory = await chain.deployFactory(deployer, treasury, hot.address);
    contracts = { usdc, factory, treasury, hotWalletKey };
  }
  await chain.receipt(await chain.mint(payer, contracts.usdc, payer.address, 10n ** 15n));

  const dir = mkdtempSync(join(tmpdir(), 'kasse-evm-'));
  const networksFile = join(dir, 'networks.test.json');
  writeFileSync(
    networksFile,
    JSON.stringify(
      networksDocument({
        rpcUrls: opts.kasseRpcUrls ?? [opts.rpcUrl],
        wsUrls: opts.wsUrls,
        ...contracts,
        tiers: opts.tiers ?? [
          { max_usd_cents: 10000, confirmations: 3 },
          { max_usd_cents: null, confirmations: 5 },
        ],
        finality: opts.finality ?? 8,
        pollIntervalMs: opts.pollIntervalMs ?? 10_000,
        evm: opts.evm,
      }),
      null,
      2,
    ),
  );

  const coingecko = await startCoinGeckoServer();
  const binance = await startBinanceServer();
  coingecko.setPrice('ethereum', ETH_USD);
  binance.setPrice('ETHUSDT', ETH_USD);
  const secrets = opts.secrets ?? { ...testSecrets(), hotWalletKey: contracts.hotWalletKey };
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
  // Prices are fetched against the fake clock; keep the fake providers' timestamps in step with it.
  coingecko.setPrice('ethereum', ETH_USD, t.clock.now());
  const receiver = opts.receiver === false ? null : await startWebhookReceiver({ now: () => t.clock.now() });
  const m = await t.merchant({ webhookUrl: receiver?.url ?? null });
  receiver?.setSecret(m.webhookSecret);
  const adapter = t.kasse.chains.adapter('test', 'base');
  if (!(adapter instanceof EvmAdapter))
    throw new Error('base has no EvmAdapter: is the networks file missing evm.forwarder_factory?');
  const watcher = adapter.watcher(t.kasse.payments.deposits, { retryBackoffMs: 10, ...opts.watcher });

  return {
    chain,
    t,
    m,
    receiver,
    ...contracts,
    payer,
    adapter,
    watcher,
    networksFile,
    secrets,
    coingecko,
    binance,
    async tick() {
      const r = await watcher.tick();
      await t.kasse.webhooks.drain();
      return r;
    },
    async settleQueue() {
      for (let i = 0; i < 12; i++) {
        await adapter.sender!.runDue();
        const open = await t.kasse.db
          .selectFrom('evm_transfers')
          .select('id')
          .where('status', 'in', ['pending', 'signed', 'broadcast'])
          .executeTakeFirst();
        if (!open) break;
        await chain.mine(1);
      }
      await t.kasse.webhooks.drain();
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
    },
  };
}

/** A real workers process of `k`'s Kasse (the server, `KASSE_ROLES=workers`); `kill` sends a signal and awaits its exit. */
export interface WorkersProcess {
  child: ChildProcess;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts workers processes on `k`'s database, secrets and networks, each network's sender lease shortened to
 * `leaseMs` (`sender_lease_ms`), so a process started after one was killed takes the killed one's leased transfers
 * over once the short lease runs out, as it would after the default minute.
 */
export function workersProcesses(k: EvmKasse, name: string, leaseMs = 3_000): () => WorkersProcess {
  const networks = JSON.parse(readFileSync(k.networksFile, 'utf8'));
  for (const n of networks.networks) n.sender_lease_ms = leaseMs;
  const networksFile = k.networksFile.replace(/\.json$/, '.short-lease.json');
  writeFileSync(networksFile, JSON.stringify(networks));
  return () => {
    const child = spawn(process.execPath, SERVER, {
      cwd: KASSE_HOME,
      env: {
        ...process.env,
        DATABASE_URL: k.t.databaseUrl,
        KASSE_ROLES: 'workers',
        KASSE_NETWORKS_FILE: networksFile,
        KASSE_SECRET_KEY: k.secrets.secretKey.toString('hex'),
        KASSE_MASTER_SEED: k.secrets.masterSeed,
        KASSE_HOT_WALLET_KEY: k.hotWalletKey,
        KASSE_COINGECKO_URL: k.coingecko.url,
        KASSE_BINANCE_URL: k.binance.url,
        KASSE_DATA_DIR: `/tmp/kasse-${name}-${process.pid}`,
        KASSE_LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return {
      child,
      async kill(signal = 'SIGKILL') {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
      },
    };
  };
}
