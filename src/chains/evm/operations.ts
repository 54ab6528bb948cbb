/**
 * Operator actions on an EVM network, sent from the hot wallet: deploying the ForwarderFactory, and sweeping
 * confirmed deposit addresses to the treasury through it.
 *
 * A sweep is recorded before it is broadcast (`evm_sweeps`, status `broadcast`, with the signed transaction) and
 * settled from its receipt, so a crash between the two loses nothing: the next run first settles or re-broadcasts
 * what is open. An address is due for a sweep when it has a confirmed or final deposit in a block at or after the
 * block of its last successful sweep (a sweep moves the whole balance, so older deposits are covered). No database
 * transaction is held across an RPC call.
 */
import { sql } from 'kysely';
import {
  decodeEventLog,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  keccak256,
  type Address,
  type Hash,
  type Hex,
  type LocalAccount,
} from 'viem';
import type { Clock } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import type { Db, Tx } from '../../db/index.ts';
import { withTx } from '../../db/index.ts';
import type { PaymentsPort } from '../ports.ts';
import type { NetworkConfig } from '../types.ts';
import type { EvmAdapter } from './adapter.ts';
import { forwarderImplementation } from './address.ts';
import { artifact, erc20Abi, forwarderFactoryAbi } from './contracts.ts';
import { RpcError, type RpcClient } from './rpc.ts';
import { EvmSender } from './sender.ts';
import { allocateNonce } from './transfer.ts';

export type HotWallet = LocalAccount;

interface RpcReceipt {
  status: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  gasUsed: Hex;
  contractAddress: Address | null;
  logs: Array<{ address: Address; topics: [Hex, ...Hex[]]; data: Hex }>;
}

export interface OperationDeps {
  db: Db;
  clock: Clock;
  log: Logger;
}

interface Prepared {
  call: { to?: Address; data: Hex };
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  chainNonce: bigint;
}

/**
 * Reads what signing needs over RPC (before any database transaction): EIP-1559 fees from the hot-wallet sender's
 * rules (capped by the network's `max_fee_gwei`), a gas estimate + 20 %, and the wallet's mined transaction count.
 */
async function prepare(
  deps: OperationDeps,
  chain: { network: NetworkConfig; mode: Mode; rpc: () => RpcClient },
  account: HotWallet,
  call: Prepared['call'],
): Promise<Prepared> {
  const rpc = chain.rpc();
  const sender = new EvmSender(chain, { ...deps, account: () => account, sink: null });
  const fees = await sender.fees();
  const estimate = BigInt(
    await rpc.request<Hex>('eth_estimateGas', [
      { from: account.address, ...(call.to ? { to: call.to } : {}), data: call.data },
    ]),
  );
  const chainNonce = BigInt(await rpc.request<Hex>('eth_getTransactionCount', [account.address, 'latest']));
  return { call, gas: (estimate * 12n) / 10n, ...fees, chainNonce };
}

/**
 * Signs a prepared transaction inside `tx` with the next nonce of the hot wallet's shared counter (`allocateNonce`,
 * the same one refunds and payouts take theirs from), so sweeps and transfers never collide on a nonce.
 */
async function signInTx(
  tx: Tx,
  network: NetworkConfig,
  mode: Mode,
  account: HotWallet,
  p: Prepared,
  now: Date,
): Promise<{ raw: Hex; hash: Hash; nonce: bigint }> {
  const nonce = await allocateNonce(
    tx,
    { mode, chain: network.id, address: getAddress(account.address) },
    p.chainNonce,
    now,
  );
  const raw = await account.signTransaction({
    type: 'eip1559',
    chainId: network.chainId!,
    nonce: Number(nonce),
    ...(p.call.to ? { to: p.call.to } : {}),
    data: p.call.data,
    gas: p.gas,
    maxFeePerGas: p.maxFeePerGas,
    maxPriorityFeePerGas: p.maxPriorityFeePerGas,
  });
  return { raw, hash: keccak256(raw), nonce };
}

/** Broadcasts a raw transaction; a node that already has it (a retried send) counts as success. */
async function broadcast(rpc: RpcClient, raw: Hex): Promise<void> {
  try {
    await rpc.request('eth_sendRawTransaction', [raw]);
  } catch (err) {
    if (err instanceof RpcError && /already known|known transaction|already imported|nonce too low/i.test(err.message))
      return;
    throw err;
  }
}

/** Polls for a receipt for `timeoutMs` of real time (a wait on the network, not the clock); null when none arrived. */
async function waitReceipt(rpc: RpcClient, hash: Hash, timeoutMs: number, pollMs: number): Promise<RpcReceipt | null> {
  const waited = AbortSignal.timeout(timeoutMs);
  for (;;) {
    const r = await rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
    if (r || waited.aborted) return r;
    await new Promise((res) => setTimeout(res, pollMs));
  }
}

export interface DeployedFactory {
  chain: string;
  chain_id: number | null;
  factory: Address;
  implementation: Address;
  owner: Address;
  treasury: Address;
  tx_hash: Hash;
  block_number: string;
}

/**
 * Deploys a ForwarderFactory from the hot wallet (its owner unless `owner` is given) sweeping to `treasury`, waits
 * for the receipt and checks the implementation sits where offline derivation expects it.
 */
export async function deployForwarderFactory(
  deps: OperationDeps,
  chain: { network: NetworkConfig; mode: Mode; rpc: RpcClient },
  account: HotWallet,
  opts: { treasury: Address; owner?: Address; timeoutMs?: number; pollMs?: number },
): Promise<DeployedFactory> {
  const { network, mode, rpc } = chain;
  const owner = opts.owner ?? getAddress(account.address);
  const a = artifact('ForwarderFactory');
  const data = encodeDeployData({ abi: forwarderFactoryAbi, bytecode: a.bytecode, args: [owner, opts.treasury] });
  const chainId = BigInt(await rpc.request<Hex>('eth_chainId'));
  if (network.chainId !== null && chainId !== BigInt(network.chainId))
    throw new Error(`${network.id}: RPC answers chain id ${chainId}, config says ${network.chainId}`);
  const prepared = await prepare(deps, { network, mode, rpc: () => rpc }, account, { data });
  const { raw, hash } = await withTx(deps.db, (tx) => signInTx(tx, network, mode, account, prepared, deps.clock.now()));
  try {
    await broadcast(rpc, raw);
  } catch (err) {
    // The nonce is taken: this exact transaction must reach the chain, or later hot-wallet transactions wait behind it.
    throw new Error(
      `broadcasting the deployment ${hash} failed (${(err as Error).message}); broadcast this raw transaction: ${raw}`,
    );
  }
  const receipt = await waitReceipt(rpc, hash, opts.timeoutMs ?? 180_000, opts.pollMs ?? 1000);
  if (!receipt) throw new Error(`deployment ${hash} not mined yet; check it on the explorer`);
  if (BigInt(receipt.status) !== 1n || !receipt.contractAddress) throw new Error(`deployment ${hash} reverted`);
  const factory = receipt.contractAddress;
  const implementation = getAddress(
    await rpc
      .request<Hex>('eth_call', [
        { to: factory, data: encodeFunctionData({ abi: forwarderFactoryAbi, functionName: 'implementation' }) },
        'latest',
      ])
      .then((r) => `0x${r.slice(26)}`),
  );
  if (implementation !== forwarderImplementation(getAddress(factory)))
    throw new Error(`factory ${factory}: implementation ${implementation} is not at the expected address`);
  return {
    chain: network.id,
    chain_id: network.chainId,
    factory: getAddress(factory),
    implementation,
    owner,
    treasury: opts.treasury,
    tx_hash: hash,
    block_number: BigInt(receipt.blockNumber).toString(),
  };
}

export interface SweepDeps extends OperationDeps {
  /** Where the funded deposit addresses are read (the payments module's port). */
  payments: PaymentsPort;
}

export interface SweepOptions {
  /** Deposit addresses per transaction. Default 50. */
  batchSize?: number;
  /** List what would be swept; send nothing. */
  dryRun?: boolean;
  receiptTimeoutMs?: number;
  receiptPollMs?: number;
}

export interface SweepTxReport {
  id: string;
  tx_hash: string;
  status: 'broadcast' | 'confirmed' | 'failed';
  addresses: number;
  block_number: string | null;
  gas_used: string | null;
  /** Per token id: smallest units that reached the treasury (ERC-20 only; native moves by internal call). */
  tokens: Record<string, string>;
  failed_addresses: string[];
  error: string | null;
}

export interface SweepReport {
  chain: string;
  mode: Mode;
  factory: string;
  treasury: string;
  /** Addresses due for a sweep. */
  due: number;
  /** Sweeps left open by an earlier run and settled now. */
  settled: SweepTxReport[];
  transactions: SweepTxReport[];
  dry_run: boolean;
  addresses?: string[];
}

interface DueAddress {
  address: string;
  index: bigint;
}

/** Addresses (lower case) with a confirmed or final deposit not covered by a successful sweep, none in flight. */
export async function addressesDue(deps: SweepDeps, mode: Mode, chain: string): Promise<DueAddress[]> {
  const funded = await deps.payments.fundedAddresses(mode, chain);
  if (funded.length === 0) return [];
  const { rows } = await sql<{ address: string; last_sweep: bigint | null; in_flight: boolean }>`
    SELECT i.address,
           max(s.block_number) FILTER (WHERE s.status = 'confirmed' AND i.ok) AS last_sweep,
           bool_or(s.status = 'broadcast') AS in_flight
    FROM evm_sweep_items i JOIN evm_sweeps s ON s.id = i.sweep_id
    WHERE s.mode = ${mode} AND s.chain = ${chain}
    GROUP BY i.address`.execute(deps.db);
  const swept = new Map(rows.map((r) => [r.address, r]));
  return funded
    .filter((f) => {
      const s = swept.get(f.address);
      return (
        !s?.in_flight &&
        f.lastBlock >= (s?.last_sweep === null || s?.last_sweep === undefined ? -1n : BigInt(s.last_sweep))
      );
    })
    .map((f) => ({ address: f.address, index: f.index }));
}

/** Sweeps every due deposit address of `adapter`'s network to the factory's treasury, `batchSize` per transaction. */
export async function sweepDeposits(
  deps: SweepDeps,
  adapter: EvmAdapter,
  account: HotWallet,
  opts: SweepOptions = {},
): Promise<SweepReport> {
  const { network, mode } = adapter;
  const rpc = adapter.rpc();
  const factory = adapter.factory;
  const treasury = `0x${(await rpc.request<Hex>('eth_call', [{ to: factory, data: encodeFunctionData({ abi: forwarderFactoryAbi, functionName: 'treasury' }) }, 'latest'])).slice(26)}`;
  const tokens = network.tokens.filter((t) => t.kind === 'erc20' && t.contract);
  const report: SweepReport = {
    chain: network.id,
    mode,
    factory,
    treasury,
    due: 0,
    settled: [],
    transactions: [],
    dry_run: !!opts.dryRun,
  };

  if (!opts.dryRun) {
    for (const open of await deps.db
      .selectFrom('evm_sweeps')
      .selectAll()
      .where('mode', '=', mode)
      .where('chain', '=', network.id)
      .where('status', '=', 'broadcast')
      .orderBy('nonce')
      .execute()) {
      await broadcast(rpc, open.raw_tx as Hex).catch((err) =>
        deps.log.warn({ err, sweep: open.id }, 'rebroadcast failed'),
      );
      report.settled.push(await settle(deps, adapter, account, open.id, open.tx_hash as Hash, opts));
    }
  }

  const due: DueAddress[] = [];
  for (const d of await addressesDue(deps, mode, network.id)) {
    if (adapter.addressOf(d.index).toLowerCase() !== d.address) {
      deps.log.error(
        { chain: network.id, mode, address: d.address, index: d.index.toString() },
        'deposit address does not derive from the configured factory; not swept',
      );
      continue;
    }
    due.push(d);
  }
  report.due = due.length;
  if (opts.dryRun) {
    report.addresses = due.map((d) => d.address);
    return report;
  }
  const size = Math.max(1, opts.batchSize ?? 50);
  for (let i = 0; i < due.length; i += size) {
    const batch = due.slice(i, i + size);
    const data = encodeFunctionData({
      abi: forwarderFactoryAbi,
      functionName: 'sweep',
      args: [batch.map((d) => adapter.salt(d.index)), tokens.map((t) => t.contract as Address)],
    });
    const prepared = await prepare(deps, adapter, account, { to: factory, data });
    const id = newId('swp');
    const { raw, hash } = await withTx(deps.db, async (tx) => {
      const signed = await signInTx(tx, network, mode, account, prepared, deps.clock.now());
      const { hash, nonce, raw } = signed;
      await tx
        .insertInto('evm_sweeps')
        .values({
          id,
          mode,
          chain: network.id,
          factory: factory.toLowerCase(),
          treasury: treasury.toLowerCase(),
          tx_hash: hash,
          nonce,
          raw_tx: raw,
          status: 'broadcast',
          created_at: deps.clock.now(),
        })
        .execute();
      await tx
        .insertInto('evm_sweep_items')
        .values(batch.map((d) => ({ sweep_id: id, address: d.address, address_index: d.index, ok: null })))
        .execute();
      return signed;
    });
    try {
      await broadcast(rpc, raw);
    } catch (err) {
      // Its nonce is taken: it stays `broadcast` and the next run sends the same bytes again before anything new.
      const error = (err as Error).message;
      await deps.db.updateTable('evm_sweeps').set({ error }).where('id', '=', id).execute();
      report.transactions.push({
        id,
        tx_hash: hash,
        status: 'broadcast',
        addresses: batch.length,
        block_number: null,
        gas_used: null,
        tokens: {},
        failed_addresses: [],
        error,
      });
      break;
    }
    report.transactions.push(await settle(deps, adapter, account, id, hash, opts));
  }
  return report;
}

/** Waits for a sweep's receipt and records its outcome (still `broadcast` if none arrived in time). */
async function settle(
  deps: SweepDeps,
  adapter: EvmAdapter,
  account: HotWallet,
  id: string,
  hash: Hash,
  opts: SweepOptions,
): Promise<SweepTxReport> {
  const items = await deps.db.selectFrom('evm_sweep_items').select(['address']).where('sweep_id', '=', id).execute();
  const base: SweepTxReport = {
    id,
    tx_hash: hash,
    status: 'broadcast',
    addresses: items.length,
    block_number: null,
    gas_used: null,
    tokens: {},
    failed_addresses: [],
    error: null,
  };
  const receipt = await waitReceipt(adapter.rpc(), hash, opts.receiptTimeoutMs ?? 180_000, opts.receiptPollMs ?? 1000);
  if (!receipt) {
    // Not mined. If the wallet's nonce was used by another transaction meanwhile, this one never will be.
    const row = await deps.db.selectFrom('evm_sweeps').select(['nonce']).where('id', '=', id).executeTakeFirstOrThrow();
    const mined = BigInt(await adapter.rpc().request<Hex>('eth_getTransactionCount', [account.address, 'latest']));
    if (
      mined > BigInt(row.nonce) &&
      !(await adapter.rpc().request<RpcReceipt | null>('eth_getTransactionReceipt', [hash]))
    ) {
      await finish(deps, id, { status: 'failed', error: `nonce ${row.nonce} was used by another transaction` });
      return { ...base, status: 'failed', error: `nonce ${row.nonce} was used by another transaction` };
    }
    return base;
  }
  const ok = BigInt(receipt.status) === 1n;
  const flushed = new Map<string, boolean>();
  const tokens: Record<string, bigint> = {};
  const byContract = new Map(
    adapter.network.tokens.filter((t) => t.contract).map((t) => [t.contract!.toLowerCase(), t.id]),
  );
  for (const log of receipt.logs) {
    if (log.address.toLowerCase() === adapter.factory.toLowerCase()) {
      try {
        const ev = decodeEventLog({ abi: forwarderFactoryAbi, data: log.data, topics: log.topics });
        if (ev.eventName === 'Swept') flushed.set(ev.args.forwarder.toLowerCase(), ev.args.ok);
      } catch {
        // other factory events
      }
    } else if (byContract.has(log.address.toLowerCase())) {
      try {
        const ev = decodeEventLog({ abi: erc20Abi, data: log.data, topics: log.topics });
        if (ev.eventName === 'Transfer') {
          const token = byContract.get(log.address.toLowerCase())!;
          tokens[token] = (tokens[token] ?? 0n) + ev.args.value;
        }
      } catch {
        // not a Transfer
      }
    }
  }
  const failed = items.filter((i) => flushed.get(i.address) !== true).map((i) => i.address);
  await withTx(deps.db, async (tx) => {
    for (const i of items) {
      await tx
        .updateTable('evm_sweep_items')
        .set({ ok: ok && flushed.get(i.address) === true })
        .where('sweep_id', '=', id)
        .where('address', '=', i.address)
        .execute();
    }
    await tx
      .updateTable('evm_sweeps')
      .set({
        status: ok ? 'confirmed' : 'failed',
        block_number: BigInt(receipt.blockNumber),
        gas_used: BigInt(receipt.gasUsed).toString(),
        error: ok ? null : 'reverted',
        settled_at: deps.clock.now(),
      })
      .where('id', '=', id)
      .execute();
  });
  if (failed.length > 0) deps.log.warn({ sweep: id, failed }, 'some forwarders could not be flushed');
  return {
    ...base,
    status: ok ? 'confirmed' : 'failed',
    block_number: BigInt(receipt.blockNumber).toString(),
    gas_used: BigInt(receipt.gasUsed).toString(),
    tokens: Object.fromEntries(Object.entries(tokens).map(([k, v]) => [k, v.toString()])),
    failed_addresses: ok ? failed : items.map((i) => i.address),
    error: ok ? null : 'reverted',
  };
}

async function finish(deps: SweepDeps, id: string, outcome: { status: 'failed'; error: string }): Promise<void> {
  await deps.db
    .updateTable('evm_sweeps')
    .set({ status: outcome.status, error: outcome.error, settled_at: deps.clock.now() })
    .where('id', '=', id)
    .execute();
}
