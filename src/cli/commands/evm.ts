/** EVM operator commands: deploy the ForwarderFactory, sweep deposit addresses to the treasury, watcher status. */
import { getAddress, type Address, type Hex } from 'viem';
import { EvmAdapter } from '../../chains/evm/adapter.ts';
import { isValidEvmAddress } from '../../chains/evm/address.ts';
import { deployForwarderFactory, sweepDeposits } from '../../chains/evm/operations.ts';
import { RpcClient } from '../../chains/evm/rpc.ts';
import { hotWalletAccount, HOT_WALLET_PATH } from '../../chains/evm/wallet.ts';
import type { NetworkConfig } from '../../chains/types.ts';
import type { Kasse } from '../../kasse.ts';
import { mode, optionalInt, requireString, UsageError, type Command, type Flags } from '../context.ts';

function evmNetwork(kasse: Kasse, f: Flags): NetworkConfig {
  const m = mode(f);
  const id = requireString(f, 'chain');
  const network = kasse.chains.network(m, id);
  if (!network) throw new UsageError(`no ${m} network "${id}" (configured: ${kasse.chains.networks(m).map((n) => n.id).join(', ')})`);
  if (network.family !== 'evm') throw new UsageError(`${id} is not an EVM network`);
  if (network.rpcUrls.length === 0) throw new UsageError(`${m} network ${id} has no rpc_urls`);
  return network;
}

function evmAdapter(kasse: Kasse, f: Flags): EvmAdapter {
  const network = evmNetwork(kasse, f);
  const adapter = kasse.chains.hasAdapter(mode(f), network.id) ? kasse.chains.adapter(mode(f), network.id) : null;
  if (!(adapter instanceof EvmAdapter)) throw new UsageError(`${network.id} has no evm.forwarder_factory in the ${mode(f)} networks file: run \`kasse evm deploy-factory\` first`);
  return adapter;
}

function address(f: Flags, name: string): Address | undefined {
  const v = f[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !isValidEvmAddress(v)) throw new UsageError(`--${name} must be an EVM address`);
  return getAddress(v);
}

export const evmCommands: Command[] = [
  {
    name: 'evm deploy-factory',
    usage: `evm deploy-factory --chain ID --mode test|live [--treasury 0x…] [--owner 0x…] [--json]   (from the hot wallet: KASSE_HOT_WALLET_KEY or ${HOT_WALLET_PATH} of the master seed)`,
    flags: { chain: { type: 'string' }, mode: { type: 'string' }, treasury: { type: 'string' }, owner: { type: 'string' }, json: { type: 'boolean' } },
    run: async (kasse, f) => {
      const network = evmNetwork(kasse, f);
      const account = hotWalletAccount(kasse.secrets);
      const treasury = address(f, 'treasury') ?? (network.evm?.treasury as Address | null | undefined) ?? null;
      if (!treasury) throw new UsageError('give --treasury 0x… (or evm.treasury in the networks file): where sweeps send the funds');
      const rpc = new RpcClient({ chain: network.id, urls: network.rpcUrls, metrics: kasse.metrics, log: kasse.log });
      const balance = BigInt(await rpc.request<Hex>('eth_getBalance', [account.address, 'latest']));
      if (balance === 0n) throw new UsageError(`the hot wallet ${account.address} has no coin on ${network.id} to pay for the deployment`);
      const deployed = await deployForwarderFactory({ db: kasse.db, clock: kasse.clock, log: kasse.log }, { network, mode: mode(f), rpc }, account, { treasury, owner: address(f, 'owner') });
      return { ...deployed, hot_wallet: account.address, networks_file: { evm: { forwarder_factory: deployed.factory, treasury } } };
    },
  },
  {
    name: 'evm sweep',
    usage: 'evm sweep --chain ID --mode test|live [--batch N] [--dry-run] [--json]   (moves confirmed deposits to the treasury)',
    flags: { chain: { type: 'string' }, mode: { type: 'string' }, batch: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
    run: async (kasse, f) => {
      const adapter = evmAdapter(kasse, f);
      return sweepDeposits({ db: kasse.db, clock: kasse.clock, log: kasse.log }, adapter, hotWalletAccount(kasse.secrets), {
        batchSize: optionalInt(f, 'batch'),
        dryRun: f['dry-run'] === true,
      });
    },
  },
  {
    name: 'evm status',
    usage: 'evm status --chain ID --mode test|live [--json]   (watcher cursor against the node head; hot wallet)',
    flags: { chain: { type: 'string' }, mode: { type: 'string' }, json: { type: 'boolean' } },
    run: async (kasse, f) => {
      const network = evmNetwork(kasse, f);
      const m = mode(f);
      const rpc = new RpcClient({ chain: network.id, urls: network.rpcUrls, metrics: kasse.metrics, log: kasse.log });
      const account = hotWalletAccount(kasse.secrets);
      const [head, balance, cursor] = await Promise.all([
        rpc.request<Hex>('eth_blockNumber').then(BigInt),
        rpc.request<Hex>('eth_getBalance', [account.address, 'latest']).then(BigInt),
        kasse.db.selectFrom('evm_cursors').selectAll().where('mode', '=', m).where('chain', '=', network.id).executeTakeFirst(),
      ]);
      return {
        chain: network.id,
        mode: m,
        forwarder_factory: network.evm?.forwarderFactory ?? null,
        head: head.toString(),
        cursor: cursor ? cursor.block_number.toString() : null,
        behind: cursor ? (head - BigInt(cursor.block_number)).toString() : null,
        hot_wallet: account.address,
        hot_wallet_balance: balance.toString(),
      };
    },
  },
];
