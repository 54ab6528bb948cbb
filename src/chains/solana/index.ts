/**
 * The Solana chain family (mainnet, devnet, and the test harness's local node): its networks' `solana` settings,
 * its address format and Solana Pay URIs, its tables, and when Kasse opens, a `SolanaAdapter` for every `solana`
 * network that has RPC URLs and a `solana.treasury` (the operator has said where swept funds go; until then the
 * network is simulated in test mode and unavailable in live mode, 503 `chain_paused`, and the registry says why),
 * each with its crash-safe hot-wallet sender; the workers role's loops (a slot watcher per followed network, one sender loop, the
 * sweeps operators enable); the checkout's wallet buttons, script and endpoints (payments from a browser wallet,
 * USDC by signature with the hot wallet as fee payer); subscription grants as token delegates (charges.ts); and the
 * `kasse solana …` commands. Everything Solana lives in
 * this folder. Docs: docs/solana.md.
 */
import { createHash } from 'node:crypto';
import { Loop } from '../../core/loop.ts';
import type { Mode } from '../../core/mode.ts';
import { watcherAndSenderLoops } from '../loops.ts';
import { servedNetworks } from '../served.ts';
import type { ChainFamily, FamilyContext, FamilyWorker, LoadedFamily } from '../plugin.ts';
import { encodeBase58, isSolanaAddress } from './address.ts';
import { SolanaAdapter } from './adapter.ts';
import { checkoutExtension } from './checkout.ts';
import { solanaCommands } from './commands.ts';
import { parseSolanaSettings, solanaSettings } from './config.ts';
import { SolanaKeys } from './keys.ts';
import * as m0014 from './migrations/0014_solana.ts';
import * as m0001 from './migrations/0001_block_transfers.ts';
import * as m0002 from './migrations/0002_subscription_charges.ts';
import { SolanaCharges } from './charges.ts';
import { transferRequestUri } from './pay.ts';
import './schema.ts';
import { SolanaSender } from './sender.ts';
import { recordSweeps } from './sweep.ts';
import { solanaX402 } from './x402.ts';

export { decodeBase58 } from './address.ts';
export { SolanaAdapter } from './adapter.ts';

/** How often the sender loop looks for due transfers when nothing woke it. */
const SENDER_INTERVAL_MS = 2_000;

const keysBySecrets = new WeakMap<object, SolanaKeys>();

/** Kasse's Solana keys for a secrets object (the PBKDF2 and derivations are done once per process). */
export function solanaKeys(secrets: { masterSeed: string }): SolanaKeys {
  let k = keysBySecrets.get(secrets);
  if (!k) {
    k = new SolanaKeys(secrets.masterSeed);
    keysBySecrets.set(secrets, k);
  }
  return k;
}

function load(ctx: FamilyContext): LoadedFamily {
  const keys = solanaKeys(ctx.secrets);
  const adapters = servedNetworks(ctx, 'solana', (network) => {
    if (network.rpcUrls.length === 0) return 'no "rpc_urls" to watch it with';
    if (!solanaSettings(network).treasury) return 'no treasury for sweeps (set "solana.treasury" in the networks file)';
    return null;
  }).map(({ network, mode }) => {
    const adapter = new SolanaAdapter(network, mode, {
      db: ctx.db,
      clock: ctx.clock,
      log: ctx.log,
      metrics: ctx.metrics,
      keys,
      health: ctx.health,
    });
    adapter.sender = new SolanaSender(adapter, {
      db: ctx.db,
      clock: ctx.clock,
      log: ctx.log,
      metrics: ctx.metrics,
      keys,
      sink: ctx.transfers,
    });
    return adapter;
  });
  const byKey = new Map(adapters.map((a) => [`${a.mode}:${a.network.id}`, a]));
  const adapter = (mode: Mode, chain: string) => byKey.get(`${mode}:${chain}`) ?? null;
  return {
    adapters,
    workers: () => workers(ctx, adapters),
    checkout: checkoutExtension({ clock: ctx.clock, chains: ctx.chains, payments: ctx.payments, adapter }),
    x402: solanaX402({ chains: ctx.chains, keys, adapters }),
    charges: new SolanaCharges({ keys, adapter, adapters }),
  };
}

/**
 * The workers role's Solana loops: a slot watcher per network that is not paused (polling every `poll_interval_ms`
 * from its stored cursor), one sender loop driving every network's due transfers every 2 seconds or at once when a
 * transfer was recorded in this process (leased in PostgreSQL, so several worker processes share them), and a sweep
 * loop for each network whose operator set `solana.sweep_interval_s` and a treasury.
 */
function workers(ctx: FamilyContext, adapters: SolanaAdapter[]): FamilyWorker[] {
  const out = watcherAndSenderLoops('solana', adapters, ctx.deposits, SENDER_INTERVAL_MS, ctx.log);
  for (const a of adapters) {
    if (a.settings.sweepIntervalSeconds <= 0 || !a.settings.treasury) continue;
    out.push(
      new Loop(
        `solana-sweep:${a.mode}:${a.network.id}`,
        a.settings.sweepIntervalSeconds * 1000,
        () => recordSweeps(a),
        ctx.log,
      ),
    );
  }
  return out;
}

const solana: ChainFamily = {
  name: 'solana',
  format: {
    isValidAddress: isSolanaAddress,
    addressFromBytes: (bytes) => encodeBase58(bytes.subarray(0, 32)),
    // Keyless simulator addresses: their reference is a hash of the address (nothing to keep unlinkable there).
    paymentUri: (_network, token, address, amount, context) =>
      transferRequestUri({
        recipient: address,
        amount,
        token,
        reference: encodeBase58(createHash('sha256').update(`kasse/solana/reference|${address}`).digest()),
        label: context?.label,
        message: context?.message,
      }),
  },
  networks: {
    contract: { canonical: (value) => (isSolanaAddress(value) ? value : null), name: 'a Solana address' },
    settings: parseSolanaSettings,
  },
  tokenKinds: ['spl'],
  migrations: {
    '0014_solana': m0014,
    'solana/0001_block_transfers': m0001,
    'solana/0002_subscription_charges': m0002,
  },
  commands: solanaCommands,
  load,
};

export default solana;
