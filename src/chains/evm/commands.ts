/** EVM operator commands (`kasse evm …`): deploy the ForwarderFactory, sweep deposit addresses to the treasury, watcher status. */
import { formatGwei, getAddress, type Address, type Hex } from 'viem';
import { mode, optionalInt, UsageError, type Flags } from '../../core/flags.ts';
import { commandNetwork, missingMethods, statusCommand, networkFlags, storedCursor } from '../commands.ts';
import { fromNodes } from '../health.ts';
import type { FamilyCommand, FamilyContext } from '../plugin.ts';
import type { NetworkConfig } from '../types.ts';
import { probePush } from '../push.ts';
import { EvmAdapter, evmPush } from './adapter.ts';
import { isValidEvmAddress } from './address.ts';
import { evmSettings } from './config.ts';
import { deployForwarderFactory, sweepDeposits } from './operations.ts';
import { RpcClient } from './rpc.ts';
import { placeAuthCaptureContracts, type AuthCaptureDeployment } from './escrow.ts';
import { SENDER_DEFAULTS } from './sender-options.ts';
import { hotWalletAccount, HOT_WALLET_PATH } from './wallet.ts';

function evmNetwork(ctx: FamilyContext, f: Flags): NetworkConfig {
  return commandNetwork(ctx, f, 'evm', { noun: 'an EVM network' });
}

function evmAdapter(ctx: FamilyContext, f: Flags): EvmAdapter {
  const network = evmNetwork(ctx, f);
  const adapter = ctx.chains.hasAdapter(mode(f), network.id) ? ctx.chains.adapter(mode(f), network.id) : null;
  if (!(adapter instanceof EvmAdapter))
    throw new UsageError(
      `${network.id} has no evm.forwarder_factory in the ${mode(f)} networks file: run \`kasse evm deploy-factory\` first`,
    );
  return adapter;
}

function address(f: Flags, name: string): Address | undefined {
  const v = f[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !isValidEvmAddress(v)) throw new UsageError(`--${name} must be an EVM address`);
  return getAddress(v);
}

export const evmCommands: FamilyCommand[] = [
  {
    name: 'evm deploy-factory',
    usage: `evm deploy-factory --chain ID --mode test|live [--treasury 0x…] [--owner 0x…] [--json]   (from the hot wallet: KASSE_HOT_WALLET_KEY or ${HOT_WALLET_PATH} of the master seed)`,
    flags: networkFlags({ treasury: { type: 'string' }, owner: { type: 'string' } }),
    run: async (ctx, f) => {
      const network = evmNetwork(ctx, f);
      const account = hotWalletAccount(ctx.secrets);
      const treasury = address(f, 'treasury') ?? (evmSettings(network).treasury as Address | null) ?? null;
      if (!treasury)
        throw new UsageError('give --treasury 0x… (or evm.treasury in the networks file): where sweeps send the funds');
      const rpc = new RpcClient({ chain: network.id, urls: network.rpcUrls, metrics: ctx.metrics, log: ctx.log });
      const balance = BigInt(await rpc.request<Hex>('eth_getBalance', [account.address, 'latest']));
      if (balance === 0n)
        throw new UsageError(
          `the hot wallet ${account.address} has no coin on ${network.id} to pay for the deployment`,
        );
      const deployed = await deployForwarderFactory(
        { db: ctx.db, clock: ctx.clock, log: ctx.log },
        { network, mode: mode(f), rpc },
        account,
        { treasury, owner: address(f, 'owner') },
      );
      return {
        ...deployed,
        hot_wallet: account.address,
        networks_file: { evm: { forwarder_factory: deployed.factory, treasury } },
      };
    },
  },
  {
    name: 'evm deploy-escrow',
    usage:
      'evm deploy-escrow --chain ID --mode test [--json]   (a local Hardhat or Anvil node only: places the hold-and-capture escrow at its canonical addresses)',
    flags: networkFlags({}),
    run: async (ctx, f) => {
      const network = evmNetwork(ctx, f);
      // Live networks use the audited canonical deployment, named in the networks file (docs/capture.md).
      if (mode(f) === 'live')
        throw new UsageError(
          'live networks use the canonical escrow deployment: name it in the networks file as evm.auth_capture',
        );
      const rpc = new RpcClient({ chain: network.id, urls: network.rpcUrls, metrics: ctx.metrics, log: ctx.log });
      let placed: AuthCaptureDeployment;
      try {
        placed = await placeAuthCaptureContracts(rpc);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      return {
        ...placed,
        networks_file: {
          evm: {
            auth_capture: {
              escrow: placed.escrow,
              erc3009_collector: placed.erc3009Collector,
              operator_refund_collector: placed.operatorRefundCollector,
            },
          },
        },
      };
    },
  },
  {
    name: 'evm sweep',
    usage:
      'evm sweep --chain ID --mode test|live [--batch N] [--dry-run] [--json]   (moves confirmed deposits to the treasury)',
    flags: networkFlags({ batch: { type: 'string' }, 'dry-run': { type: 'boolean' } }),
    run: async (ctx, f) => {
      const adapter = evmAdapter(ctx, f);
      return sweepDeposits(
        { db: ctx.db, clock: ctx.clock, log: ctx.log, payments: ctx.payments },
        adapter,
        hotWalletAccount(ctx.secrets),
        {
          batchSize: optionalInt(f, 'batch'),
          dryRun: f['dry-run'] === true,
        },
      );
    },
  },
  statusCommand(
    'evm',
    '--chain ID --mode test|live [--json]   (watcher cursor against the node head; push or poll; hot wallet; optional methods the node lacks)',
    async (ctx, f) => {
      const network = evmNetwork(ctx, f);
      const m = mode(f);
      const rpc = new RpcClient({ chain: network.id, urls: network.rpcUrls, metrics: ctx.metrics, log: ctx.log });
      const account = hotWalletAccount(ctx.secrets);
      const [[head, balance], cursor, push] = await Promise.all([
        fromNodes(network, m, ctx.health, () =>
          Promise.all([
            rpc.request<Hex>('eth_blockNumber').then(BigInt),
            rpc.request<Hex>('eth_getBalance', [account.address, 'latest']).then(BigInt),
          ]),
        ),
        storedCursor<{ block_number: bigint }>(ctx.db, 'evm_cursors', m, network.id),
        probePush(evmPush(network)),
      ]);
      const missing = await missingMethods([
        {
          method: 'eth_maxPriorityFeePerGas',
          probe: () => rpc.request('eth_maxPriorityFeePerGas'),
          without: `the sender tips ${formatGwei(SENDER_DEFAULTS.fallbackTip)} gwei per gas above the base fee`,
        },
      ]);
      return {
        chain: network.id,
        mode: m,
        forwarder_factory: evmSettings(network).forwarderFactory,
        head: head.toString(),
        cursor: cursor ? cursor.block_number.toString() : null,
        behind: cursor ? (head - BigInt(cursor.block_number)).toString() : null,
        watch_path: push.path,
        push_url: push.url,
        push_error: push.error,
        hot_wallet: account.address,
        hot_wallet_balance: balance.toString(),
        // Optional methods the node does not serve, and what Kasse does instead.
        missing_methods: missing,
      };
    },
  ),
];
