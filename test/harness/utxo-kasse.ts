/**
 * Kasse on a local Litecoin Core regtest node, for the tests under test/utxo/ and the UTXO benchmark: a networks
 * file whose test-mode `litecoin` network (family `utxo`, regtest) points at the node, fake price providers (LTC at
 * 100 USD), the whole app with a webhook receiver as the merchant's endpoint, a funded node wallet to pay from, and
 * a UTXO watcher that the test ticks by hand. `tick()` runs one watcher poll and then delivers the webhooks it caused.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UtxoAdapter } from '../../src/chains/utxo/adapter.ts';
import type { UtxoTickResult, UtxoWatcher, UtxoWatcherOptions } from '../../src/chains/utxo/watcher.ts';
import { startTestKasse, testSecrets, type TestKasse, type TestMerchant } from './app.ts';
import { LitecoinWallet } from './litecoind.ts';
import { startBinanceServer, startCoinGeckoServer } from './price-servers.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

export const LTC_USD = '100';

export interface UtxoKasseOptions {
  rpcUrl: string;
  /** Confirmation tiers; default ≤ $100: 2, above: 4. */
  tiers?: Array<{ max_usd_cents: number | null; confirmations: number }>;
  finality?: number;
  pollIntervalMs?: number;
  /** Extra settings for the network's `utxo` object. */
  utxo?: Record<string, unknown>;
  watcher?: Partial<UtxoWatcherOptions>;
  /** Reuse a database and secrets (restart scenarios). */
  databaseUrl?: string;
  secrets?: ReturnType<typeof testSecrets>;
  /** Reuse the payer wallet of an earlier start. */
  payer?: LitecoinWallet;
  receiver?: boolean;
  env?: Record<string, string>;
}

export interface UtxoKasse {
  t: TestKasse;
  m: TestMerchant;
  receiver: WebhookReceiver | null;
  payer: LitecoinWallet;
  adapter: UtxoAdapter;
  watcher: UtxoWatcher;
  secrets: ReturnType<typeof testSecrets>;
  networksFile: string;
  tick(): Promise<UtxoTickResult>;
  eventTypes(paymentId: string): string[];
  close(): Promise<void>;
}

export function utxoNetworksDocument(opts: {
  rpcUrl: string;
  tiers: Array<{ max_usd_cents: number | null; confirmations: number }>;
  finality: number;
  pollIntervalMs?: number;
  utxo?: Record<string, unknown>;
}) {
  return {
    networks: [
      {
        id: 'litecoin',
        name: 'Litecoin (local regtest)',
        family: 'utxo',
        chain_id: null,
        rpc_urls: [opts.rpcUrl],
        explorer_tx_url: 'https://litecoinspace.org/testnet/tx/{tx}',
        confirmation_tiers: opts.tiers,
        finality_confirmations: opts.finality,
        poll_interval_ms: opts.pollIntervalMs ?? 10_000,
        paused: false,
        tokens: [
          {
            symbol: 'ltc',
            name: 'Litecoin',
            decimals: 8,
            kind: 'native',
            contract: null,
            min_amount: '0.0001',
            stable: false,
            coingecko_id: 'litecoin',
            binance_symbol: 'LTCUSDT',
            gasless: false,
          },
        ],
        utxo: { coin: 'litecoin', network: 'regtest', ...opts.utxo },
      },
    ],
  };
}

export async function startUtxoKasse(opts: UtxoKasseOptions): Promise<UtxoKasse> {
  const payer = opts.payer ?? (await LitecoinWallet.create(opts.rpcUrl));
  const dir = mkdtempSync(join(tmpdir(), 'kasse-utxo-'));
  const networksFile = join(dir, 'networks.test.json');
  const tiers = opts.tiers ?? [
    { max_usd_cents: 10000, confirmations: 2 },
    { max_usd_cents: null, confirmations: 4 },
  ];
  writeFileSync(
    networksFile,
    JSON.stringify(
      utxoNetworksDocument({
        rpcUrl: opts.rpcUrl,
        tiers,
        finality: opts.finality ?? 6,
        pollIntervalMs: opts.pollIntervalMs,
        utxo: opts.utxo,
      }),
      null,
      2,
    ),
  );
  const coingecko = await startCoinGeckoServer();
  const binance = await startBinanceServer();
  coingecko.setPrice('litecoin', LTC_USD);
  binance.setPrice('LTCUSDT', LTC_USD);
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
  coingecko.setPrice('litecoin', LTC_USD, t.clock.now());
  const receiver = opts.receiver === false ? null : await startWebhookReceiver({ now: () => t.clock.now() });
  const m = await t.merchant({ webhookUrl: receiver?.url ?? null });
  receiver?.setSecret(m.webhookSecret);
  const adapter = t.kasse.chains.adapter('test', 'litecoin');
  if (!(adapter instanceof UtxoAdapter)) throw new Error('litecoin has no UtxoAdapter');
  const watcher = adapter.watcher(t.kasse.payments.deposits, opts.watcher);
  return {
    t,
    m,
    receiver,
    payer,
    adapter,
    watcher,
    secrets,
    networksFile,
    async tick() {
      const r = await watcher.tick();
      await t.kasse.webhooks.drain();
      return r;
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
