/**
 * The EVM hot-wallet sender of one network in one mode: refunds and payouts (`OutgoingSender`) and the gasless USDC
 * relay (gasless.ts) leave the operator's hot wallet through here.
 *
 * A transfer is a row in `evm_transfers` and moves `pending` → `signed` → `broadcast` → `sent` | `failed`, one step
 * at a time, each step a short database write between RPC calls (no transaction is ever held across one):
 *   pending    fees (EIP-1559, capped), hot-wallet balances and a gas estimate are read; then ONE transaction locks
 *              the row, allocates the nonce from `evm_nonces`, signs, and stores the raw transaction and its hash.
 *              A transfer whose estimate reverts fails here, before it has a nonce; an underfunded wallet waits.
 *   signed     the newest stored raw transaction is broadcast byte for byte (also after a crash, so nothing is
 *              ever re-signed with another nonce and nothing is sent twice), then the row becomes `broadcast`.
 *   broadcast  receipts of every stored version are looked up; the mined one settles the transfer once it has the
 *              network's confirmations (`sent`, or `failed` when it reverted). Unmined after `replaceAfterBlocks`
 *              blocks, a replacement with the same nonce and a higher fee is signed and stored (back to `signed`).
 *              When the nonce was used by a transaction that is not one of ours, the transfer failed unsent.
 * A settled refund or payout is reported to the `TransferSink` (the transfers module, which calls back the module
 * that asked), and marked reported only after the sink accepted it, so a crash in between reports it again (the sink
 * is idempotent). A gasless relay is the family's own business and is only recorded.
 *
 * Batches. Where the network names a Disperse contract (`evm.disperse`, contracts/Disperse.sol), pending ERC-20
 * payouts of one token are gathered, in one database transaction, into a batch: a transfer of its own (purpose
 * `disperse`, id `dsp_…`) calling `disperseToken` with every member's destination and amount, driven through the same
 * steps as any transfer (one nonce, the stored bytes re-broadcast after a crash). Members wait, `pending`, holding the
 * batch's id, and are never sent alone while they hold it; when the batch settles they settle with it in the same
 * database transaction — `sent`, or `failed` where the contract reported a `Failed(index)` (the token refused that
 * transfer; the others went out). A batch that sent nothing (its estimate or its transaction reverted, its nonce was
 * taken) hands its members back to go out one by one (`unbatched`), so a payout is sent once or not at all. The hot
 * wallet's allowance to the contract is one `approve` transaction, made when a batch first needs it.
 *
 * NOTE: a reverted transaction consumed its nonce on chain like any other; the counter simply moves on and the
 * next transfer takes the next nonce. The gas it burnt is the operator's loss; the refund is `failed` and the
 * merchant may request it again. Decisions and operations: docs/evm.md ("Refunds and the hot wallet").
 */
import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import { decodeFunctionData, decodeFunctionResult, encodeFunctionData, getAddress, keccak256, maxUint256, parseEventLogs, parseGwei, type Address, type Hex, type LocalAccount } from 'viem';
import { newId } from '../../core/ids.ts';
import type { Clock } from '../../core/clock.ts';
import { formatUnits } from '../../core/money.ts';
import type { Logger } from '../../core/log.ts';
import { afterCommit, withTx, type Db, type Tx } from '../../db/index.ts';
import type { Mode } from '../../core/mode.ts';
import { stepFailure, type OutgoingSender, type TransferRequest, type TransferSink } from '../ports.ts';
import type { ChainRegistry } from '../registry.ts';
import type { NetworkConfig, TokenConfig } from '../types.ts';
import { EvmAdapter } from './adapter.ts';
import { evmSettings } from './config.ts';
import { disperseAbi, erc20Abi } from './contracts.ts';
import type { EvmTransfersTable } from './schema.ts';
import { RpcError, type RpcClient } from './rpc.ts';

export type TransferPurpose = 'refund' | 'payout' | 'gasless' | 'disperse' | 'approve';
export type TransferRow = Selectable<EvmTransfersTable>;

/** What a step did: moved the transfer on (run the next step now), nothing to do until later, or settled. */
export type StepResult = 'progress' | 'wait' | 'done';

/** A call from the hot wallet to record: the transaction (to, value, data) and what it moves to whom. */
export interface OutgoingCall {
  id: string;
  purpose: TransferPurpose;
  to: string;
  value: bigint;
  data: Hex;
  token: string;
  destination: string;
  amount: bigint;
}

/** The network an EvmSender sends on: an EvmAdapter (its RPC client is shared with the watcher). */
export type SenderChain = Pick<EvmAdapter, 'network' | 'mode' | 'rpc'>;

export interface EvmSenderDeps {
  db: Db;
  clock: Clock;
  log: Logger;
  /** The hot wallet (wallet.ts), derived on first use (an HD derivation costs a few hundred ms). Never logged. */
  account: () => LocalAccount;
  /** Where settled refunds and payouts are reported (the transfers module); gasless relays are only recorded. */
  sink: TransferSink | null;
}

export interface EvmSenderOptions {
  /** Cap on maxFeePerGas in wei. Default: the network's `max_fee_gwei`, else SENDER_DEFAULTS.maxFeePerGas. */
  maxFeePerGas?: bigint;
  /** Blocks a broadcast version may stay unmined before it is replaced. Default: `replace_after_blocks`, else 10. */
  replaceAfterBlocks?: number;
  /** Confirmations a receipt needs before the transfer settles. Default: the network's highest tier. */
  confirmations?: number;
  /** Transfers a worker takes per pass, and how long it holds them. */
  batch?: number;
  leaseMs?: number;
  /** Backoff after a failed try: base·2^tries, at most max. */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

export const SENDER_DEFAULTS = {
  maxFeePerGas: parseGwei('300'),
  replaceAfterBlocks: 10,
  batch: 50,
  leaseMs: 60_000,
  retryBaseMs: 5_000,
  retryMaxMs: 600_000,
  /** Used when a node does not answer eth_maxPriorityFeePerGas. */
  fallbackTip: parseGwei('1'),
} as const;

/** Fee bump of a replacement: +12.5 % on both fields (nodes require at least +10 %). */
const BUMP_NUM = 1125n;
const BUMP_DEN = 1000n;
/** Gas limit = estimate + 20 % (unused gas is not paid for). */
const GAS_MARGIN_NUM = 12n;
const GAS_MARGIN_DEN = 10n;

const OPEN = ['pending', 'signed', 'broadcast'] as const;

interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

interface RpcReceipt {
  status: Hex;
  blockNumber: Hex | null;
  gasUsed: Hex;
  logs?: Array<{ address: Hex; topics: [Hex, ...Hex[]]; data: Hex }>;
}

/** Purposes reported to the TransferSink (the others are the sender's own business). */
const REPORTED: readonly string[] = ['refund', 'payout'];
/** Extra gas a batch gets above its estimate (the contract reverts rather than run a payment short of gas). */
const BATCH_GAS_EXTRA = 100_000n;

const hex = (n: bigint): Hex => `0x${n.toString(16)}`;
const ceilBump = (n: bigint): bigint => (n * BUMP_NUM + BUMP_DEN - 1n) / BUMP_DEN;
const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** A JSON-RPC answer saying the call reverted (estimateGas, eth_call). */
export function isRevert(err: unknown): boolean {
  return err instanceof RpcError && /revert/i.test(err.message);
}

/** The revert data of a reverted call, where the node sent it (geth: `data`; Hardhat: `data.data`). */
export function revertData(err: unknown): Hex | null {
  if (!(err instanceof RpcError)) return null;
  const d = err.data as unknown;
  if (typeof d === 'string' && /^0x[0-9a-fA-F]*$/.test(d)) return d as Hex;
  if (d && typeof d === 'object' && typeof (d as { data?: unknown }).data === 'string') {
    const inner = (d as { data: string }).data;
    if (/^0x[0-9a-fA-F]*$/.test(inner)) return inner as Hex;
  }
  return null;
}

/** The transaction that moves `amount` of `token` from the hot wallet to `destination`. */
export function transferCall(token: TokenConfig, destination: string, amount: bigint): { to: string; value: bigint; data: Hex } {
  if (token.kind === 'native') return { to: getAddress(destination), value: amount, data: '0x' };
  if (token.kind === 'erc20' && token.contract) {
    return { to: getAddress(token.contract), value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [getAddress(destination), amount] }) };
  }
  throw new Error(`${token.id}: an EVM sender cannot send a ${token.kind} token`);
}

/**
 * Allocates the hot wallet's next nonce on (mode, chain) inside `tx` and returns it. The stored counter wins unless
 * the chain has seen more transactions from the wallet (`chainNonce`, its mined transaction count: the wallet was
 * used outside this counter), then it jumps there. Anything else that signs with the hot wallet on a network must
 * take its nonces here too.
 */
export async function allocateNonce(tx: Tx, key: { mode: Mode; chain: string; address: string }, chainNonce: bigint, now: Date): Promise<bigint> {
  const { rows } = await sql<{ nonce: string | bigint }>`
    INSERT INTO evm_nonces (mode, chain, address, next_nonce, updated_at)
    VALUES (${key.mode}, ${key.chain}, ${key.address}, ${(chainNonce + 1n).toString()}::bigint, ${now})
    ON CONFLICT (mode, chain, address) DO UPDATE
      SET next_nonce = GREATEST(evm_nonces.next_nonce, ${chainNonce.toString()}::bigint) + 1, updated_at = excluded.updated_at
    RETURNING next_nonce - 1 AS nonce`.execute(tx);
  return BigInt(rows[0]!.nonce);
}

export class EvmSender implements OutgoingSender {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  readonly maxFeePerGas: bigint;
  readonly replaceAfterBlocks: number;
  readonly confirmations: number;
  private readonly opts: Required<Pick<EvmSenderOptions, 'batch' | 'leaseMs' | 'retryBaseMs' | 'retryMaxMs'>>;
  /** The Disperse contract payouts are batched through, and the most payouts per batch; null: one by one. */
  readonly disperse: { contract: Address; maxItems: number } | null;
  private readonly listeners: Array<() => void> = [];
  private hotAddress: Address | null = null;

  constructor(
    private readonly chain: SenderChain,
    private readonly deps: EvmSenderDeps,
    options: EvmSenderOptions = {},
  ) {
    this.network = chain.network;
    this.mode = chain.mode;
    if (this.network.chainId === null) throw new Error(`EvmSender: ${this.network.id} has no chain id`);
    this.maxFeePerGas = options.maxFeePerGas ?? evmSettings(this.network).maxFeePerGas ?? SENDER_DEFAULTS.maxFeePerGas;
    this.replaceAfterBlocks = options.replaceAfterBlocks ?? evmSettings(this.network).replaceAfterBlocks ?? SENDER_DEFAULTS.replaceAfterBlocks;
    this.confirmations = options.confirmations ?? this.network.confirmationTiers[this.network.confirmationTiers.length - 1]!.confirmations;
    const settings = evmSettings(this.network);
    this.disperse = settings.disperse ? { contract: getAddress(settings.disperse), maxItems: settings.disperseMaxItems ?? 200 } : null;
    this.opts = {
      batch: options.batch ?? SENDER_DEFAULTS.batch,
      leaseMs: options.leaseMs ?? SENDER_DEFAULTS.leaseMs,
      retryBaseMs: options.retryBaseMs ?? SENDER_DEFAULTS.retryBaseMs,
      retryMaxMs: options.retryMaxMs ?? SENDER_DEFAULTS.retryMaxMs,
    };
  }

  /** The hot wallet's address (checksummed). */
  get address(): Address {
    return (this.hotAddress ??= getAddress(this.deps.account().address));
  }

  /** Called after a commit that recorded new work (the worker loop wakes up). */
  onWork(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Records a refund or payout in the caller's transaction (no network I/O); idempotent on `transferId`. */
  async enqueue(tx: Tx, request: TransferRequest): Promise<void> {
    if (request.mode !== this.mode || request.token.chain !== this.network.id) {
      throw new Error(`EvmSender(${this.mode}:${this.network.id}) cannot send ${request.token.id} in ${request.mode} mode`);
    }
    if (request.purpose !== 'refund' && request.purpose !== 'payout') throw new Error(`EvmSender cannot record a transfer of purpose ${request.purpose}`);
    const call = transferCall(request.token, request.destination, request.amount);
    await this.record(tx, { id: request.transferId, purpose: request.purpose, token: request.token.id, destination: getAddress(request.destination), amount: request.amount, ...call });
  }

  /** Records any call from the hot wallet as a `pending` transfer inside `tx`; idempotent on `call.id`. */
  async record(tx: Tx, call: OutgoingCall): Promise<void> {
    if (call.amount <= 0n) throw new Error('an outgoing transfer moves a positive amount');
    const now = this.deps.clock.now();
    await tx
      .insertInto('evm_transfers')
      .values({
        id: call.id,
        mode: this.mode,
        chain: this.network.id,
        purpose: call.purpose,
        status: 'pending',
        from_address: this.address,
        to_address: getAddress(call.to),
        value: call.value.toString(),
        data: call.data,
        token: call.token,
        destination: call.destination,
        amount: call.amount.toString(),
        next_attempt_at: now,
        created_at: now,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    afterCommit(tx, () => {
      for (const l of this.listeners) l();
    });
  }

  /** A transfer as stored. */
  async get(id: string): Promise<TransferRow | undefined> {
    return this.deps.db.selectFrom('evm_transfers').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Every signed version of a transfer, oldest first. */
  async versions(id: string) {
    return this.deps.db.selectFrom('evm_transfer_txs').selectAll().where('transfer_id', '=', id).orderBy('version').execute();
  }

  /**
   * One worker pass: leases the due open transfers of this network (in nonce order, so broadcasts keep it), drives
   * each as far as it goes now, and reports settled ones not yet reported. Returns how many transfers it drove.
   */
  async runDue(): Promise<number> {
    if (this.network.rpcUrls.length === 0) return 0;
    if (this.disperse) await this.formBatches();
    const now = this.deps.clock.now();
    const leased = await this.deps.db
      .updateTable('evm_transfers')
      .set({ locked_until: new Date(now.getTime() + this.opts.leaseMs) })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('evm_transfers')
          .select('id')
          .where('mode', '=', this.mode)
          .where('chain', '=', this.network.id)
          .where('status', 'in', [...OPEN])
          .where('next_attempt_at', '<=', now)
          .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<=', now)]))
          .where((w) => w.or([w('batch_id', 'is', null), w('unbatched', '=', true)]))
          .orderBy(sql`nonce NULLS LAST`)
          .orderBy('created_at')
          .limit(this.opts.batch)
          .forUpdate()
          .skipLocked(),
      )
      .returning(['id', 'nonce', 'created_at'])
      .execute();
    leased.sort((a, b) => (a.nonce === null ? (b.nonce === null ? a.created_at.getTime() - b.created_at.getTime() : 1) : b.nonce === null ? -1 : Number(a.nonce - b.nonce)));
    for (const { id } of leased) {
      try {
        await this.drive(id);
      } catch (err) {
        this.deps.log.error({ err: errorText(err), transferId: id, chain: this.network.id, mode: this.mode }, 'evm sender step failed');
      } finally {
        await this.deps.db.updateTable('evm_transfers').set({ locked_until: null }).where('id', '=', id).execute();
      }
    }
    await this.reportSettled();
    return leased.length;
  }

  /** Runs steps on one transfer until it waits or settles (at most a few, so one transfer cannot hog a pass). */
  async drive(id: string): Promise<StepResult> {
    let result: StepResult = 'progress';
    for (let i = 0; i < 4 && result === 'progress'; i++) result = await this.step(id);
    return result;
  }

  /**
   * Signs and broadcasts one transfer now, without waiting for the worker (the gasless request path): steps until it
   * is `broadcast` or has to wait. Returns the transfer as stored afterwards.
   */
  async push(id: string): Promise<TransferRow> {
    for (let i = 0; i < 3; i++) {
      const row = await this.get(id);
      if (!row || (row.status !== 'pending' && row.status !== 'signed')) break;
      if ((await this.step(id)) !== 'progress') break;
    }
    return (await this.get(id))!;
  }

  /** Exactly one step of one transfer (tests stop between steps to simulate a crash). */
  async step(id: string): Promise<StepResult> {
    const row = await this.get(id);
    if (!row) throw new Error(`no evm transfer ${id}`);
    switch (row.status) {
      case 'pending':
        return this.sign(row);
      case 'signed':
        return this.broadcast(row);
      case 'broadcast':
        return this.check(row);
      default:
        await this.report(row);
        return 'done';
    }
  }

  private rpc(): RpcClient {
    return this.chain.rpc();
  }

  private async head(): Promise<bigint> {
    return BigInt(await this.rpc().request<Hex>('eth_blockNumber'));
  }

  /** EIP-1559 fees for the next block: maxFee = 2·baseFee + tip, both capped at `maxFeePerGas`. */
  async fees(): Promise<Fees> {
    const block = await this.rpc().request<{ baseFeePerGas?: Hex } | null>('eth_getBlockByNumber', ['latest', false]);
    if (!block?.baseFeePerGas) throw new Error(`${this.network.id}: the latest block has no baseFeePerGas (EIP-1559 is required)`);
    let tip: bigint;
    try {
      tip = BigInt(await this.rpc().request<Hex>('eth_maxPriorityFeePerGas'));
    } catch (err) {
      if (!(err instanceof RpcError) || err.retryable) throw err;
      tip = SENDER_DEFAULTS.fallbackTip;
    }
    const maxFeePerGas = min(2n * BigInt(block.baseFeePerGas) + tip, this.maxFeePerGas);
    return { maxFeePerGas, maxPriorityFeePerGas: min(tip, maxFeePerGas) };
  }

  /** pending → signed: read fees, balances and gas; then allocate the nonce, sign and store in one transaction. */
  private async sign(row: TransferRow): Promise<StepResult> {
    const rpc = this.rpc();
    const value = BigInt(row.value);
    let fees: Fees;
    let gas: bigint;
    let chainNonce: bigint;
    try {
      fees = await this.fees();
      chainNonce = BigInt(await rpc.request<Hex>('eth_getTransactionCount', [this.address, 'latest']));
      const tokenMoved = REPORTED.includes(row.purpose) && value === 0n ? (row.to_address as Address) : row.purpose === 'disperse' ? batchToken(row) : null;
      if (tokenMoved) {
        const held = await this.tokenBalance(tokenMoved);
        if (held < BigInt(row.amount)) return this.retryLater(row, `hot wallet ${this.address} holds ${held} of ${row.token}, the transfer needs ${row.amount}`);
      }
      if (row.purpose === 'disperse' && (await this.allowance(tokenMoved!)) < BigInt(row.amount)) return this.awaitApproval(row, tokenMoved!);
      const estimate = BigInt(await rpc.request<Hex>('eth_estimateGas', [{ from: this.address, to: row.to_address, value: hex(value), data: row.data }]));
      gas = (estimate * GAS_MARGIN_NUM + GAS_MARGIN_DEN - 1n) / GAS_MARGIN_DEN + (row.purpose === 'disperse' ? BATCH_GAS_EXTRA : 0n);
      const balance = BigInt(await rpc.request<Hex>('eth_getBalance', [this.address, 'latest']));
      const needed = value + gas * fees.maxFeePerGas;
      if (balance < needed) {
        return this.retryLater(row, `hot wallet ${this.address} holds ${formatUnits(balance, 18)} of the native coin, the transfer needs up to ${formatUnits(needed, 18)} for value and gas`);
      }
    } catch (err) {
      // Nothing is signed yet (no nonce taken), so a failure retrying cannot cure ends the transfer here.
      const failure = stepFailure(err);
      if (failure.permanent) return this.settle(row, 'pending', { status: 'failed', txHash: null, error: isRevert(err) ? `the transfer would revert: ${failure.reason}` : failure.reason });
      return this.retryLater(row, failure.reason);
    }
    const now = this.deps.clock.now();
    const signed = await withTx(this.deps.db, async (tx) => {
      const current = await tx.selectFrom('evm_transfers').selectAll().where('id', '=', row.id).forUpdate().executeTakeFirst();
      if (!current || current.status !== 'pending') return null;
      const nonce = await allocateNonce(tx, { mode: this.mode, chain: this.network.id, address: this.address }, chainNonce, now);
      const { raw, hash } = await this.signTx(current, nonce, gas, fees);
      await tx
        .insertInto('evm_transfer_txs')
        .values({ transfer_id: row.id, version: 0, tx_hash: hash, raw, max_fee_per_gas: fees.maxFeePerGas, max_priority_fee_per_gas: fees.maxPriorityFeePerGas, created_at: now })
        .execute();
      await tx
        .updateTable('evm_transfers')
        .set({ status: 'signed', nonce, gas_limit: gas, tx_hash: hash, signed_at: now, error: null, tries: 0, next_attempt_at: now })
        .where('id', '=', row.id)
        .execute();
      return { nonce, hash };
    });
    if (signed) {
      this.deps.log.info({ transferId: row.id, chain: this.network.id, mode: this.mode, nonce: signed.nonce.toString(), txHash: signed.hash }, 'evm transfer signed');
      await this.progress(row, 'signed', signed.hash);
    }
    return 'progress';
  }

  /** signed → broadcast: sends the newest stored raw transaction exactly as stored. */
  private async broadcast(row: TransferRow): Promise<StepResult> {
    const newest = await this.newestVersion(row.id);
    try {
      await this.rpc().request('eth_sendRawTransaction', [newest.raw]);
    } catch (err) {
      // The node already has it or an older version of it, or the nonce is used (by it or by another): the check
      // step finds out which from receipts. Anything else is retried later with the same bytes: a signed transfer
      // holds its nonce, and failing it would leave a gap every later transfer waits behind (NOTE: a refusal no
      // retry cures therefore waits for the operator; see docs/evm.md).
      if (!(err instanceof RpcError) || !/already known|known transaction|nonce too low|underpriced/i.test(err.message)) {
        return this.retryLater(row, `broadcast: ${errorText(err)}`);
      }
    }
    const head = await this.head();
    const now = this.deps.clock.now();
    const r = await this.deps.db
      .updateTable('evm_transfers')
      .set({ status: 'broadcast', broadcast_block: head, broadcast_at: sql`coalesce(broadcast_at, ${now})`, tries: 0, error: null, next_attempt_at: now })
      .where('id', '=', row.id)
      .where('status', '=', 'signed')
      .where('tx_hash', '=', newest.tx_hash)
      .executeTakeFirst();
    if (r.numUpdatedRows > 0n) {
      this.deps.log.info({ transferId: row.id, chain: this.network.id, mode: this.mode, txHash: newest.tx_hash, version: newest.version }, 'evm transfer broadcast');
      await this.progress(row, 'broadcast', newest.tx_hash);
    }
    return 'progress';
  }

  /** broadcast → sent | failed, or a replacement when stuck. */
  private async check(row: TransferRow): Promise<StepResult> {
    const rpc = this.rpc();
    const head = await this.head();
    const versions = (await this.versions(row.id)).reverse();
    for (const v of versions) {
      const receipt = await rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [v.tx_hash]);
      if (!receipt?.blockNumber) continue;
      const confirmations = head - BigInt(receipt.blockNumber) + 1n;
      if (confirmations < BigInt(this.confirmations)) {
        await this.progress(row, 'broadcast', v.tx_hash);
        return 'wait';
      }
      const ok = BigInt(receipt.status) === 1n;
      return this.settle(row, 'broadcast', {
        status: ok ? 'sent' : 'failed',
        txHash: v.tx_hash,
        error: ok ? null : 'the transaction reverted on chain',
        blockNumber: BigInt(receipt.blockNumber),
        gasUsed: BigInt(receipt.gasUsed),
        logs: receipt.logs ?? [],
      });
    }
    // None of ours is mined. If the nonce was used with enough confirmations, another transaction took it.
    const at = head - BigInt(this.confirmations) + 1n;
    if (at >= 0n && row.nonce !== null) {
      const count = BigInt(await rpc.request<Hex>('eth_getTransactionCount', [this.address, hex(at)]));
      if (count > row.nonce) {
        return this.settle(row, 'broadcast', { status: 'failed', txHash: null, error: `nonce ${row.nonce} was used by a transaction Kasse did not sign for this transfer` });
      }
    }
    const newest = versions[0]!;
    if (row.broadcast_block !== null && head - row.broadcast_block >= BigInt(this.replaceAfterBlocks)) {
      const replaced = await this.replace(row, newest);
      if (replaced) return 'progress';
    }
    if (row.broadcast_block !== null && head > row.broadcast_block) {
      // A node may have dropped it; sending the same bytes again is harmless.
      await rpc.request('eth_sendRawTransaction', [newest.raw]).catch(() => {});
    }
    return 'wait';
  }

  /** Signs and stores a replacement of a stuck transaction: same nonce and gas, fees +12.5 % or today's, capped. */
  private async replace(row: TransferRow, newest: { tx_hash: string; version: number; max_fee_per_gas: string; max_priority_fee_per_gas: string }): Promise<boolean> {
    const fees = await this.fees();
    const bumpedMax = ceilBump(BigInt(newest.max_fee_per_gas));
    const bumpedTip = ceilBump(BigInt(newest.max_priority_fee_per_gas));
    if (bumpedMax > this.maxFeePerGas) {
      this.deps.log.warn({ transferId: row.id, chain: this.network.id, mode: this.mode, txHash: newest.tx_hash, cap: this.maxFeePerGas.toString() }, 'evm transfer stuck, but a replacement would exceed the fee cap; waiting');
      return false;
    }
    const maxFeePerGas = min(max(bumpedMax, fees.maxFeePerGas), this.maxFeePerGas);
    const next: Fees = { maxFeePerGas, maxPriorityFeePerGas: min(max(bumpedTip, fees.maxPriorityFeePerGas), maxFeePerGas) };
    const now = this.deps.clock.now();
    const hash = await withTx(this.deps.db, async (tx) => {
      const current = await tx.selectFrom('evm_transfers').selectAll().where('id', '=', row.id).forUpdate().executeTakeFirst();
      if (!current || current.status !== 'broadcast' || current.tx_hash !== newest.tx_hash || current.nonce === null || current.gas_limit === null) return null;
      const signed = await this.signTx(current, current.nonce, BigInt(current.gas_limit), next);
      await tx
        .insertInto('evm_transfer_txs')
        .values({ transfer_id: row.id, version: newest.version + 1, tx_hash: signed.hash, raw: signed.raw, max_fee_per_gas: next.maxFeePerGas, max_priority_fee_per_gas: next.maxPriorityFeePerGas, created_at: now })
        .execute();
      await tx.updateTable('evm_transfers').set({ status: 'signed', tx_hash: signed.hash, broadcast_block: null, next_attempt_at: now }).where('id', '=', row.id).execute();
      return signed.hash;
    });
    if (hash) {
      this.deps.log.info(
        { transferId: row.id, chain: this.network.id, mode: this.mode, replaced: newest.tx_hash, txHash: hash, maxFeePerGas: next.maxFeePerGas.toString() },
        'evm transfer stuck; replaced with a higher fee',
      );
    }
    return hash !== null;
  }

  private async signTx(row: TransferRow, nonce: bigint, gas: bigint, fees: Fees): Promise<{ raw: Hex; hash: Hex }> {
    const raw = await this.deps.account().signTransaction({
      type: 'eip1559',
      chainId: this.network.chainId!,
      nonce: Number(nonce),
      to: row.to_address as Address,
      value: BigInt(row.value),
      data: row.data as Hex,
      gas,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    return { raw, hash: keccak256(raw) };
  }

  private async newestVersion(id: string) {
    return this.deps.db.selectFrom('evm_transfer_txs').selectAll().where('transfer_id', '=', id).orderBy('version', 'desc').limit(1).executeTakeFirstOrThrow();
  }

  private async tokenBalance(contract: Address): Promise<bigint> {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [this.address] });
    const out = await this.rpc().request<Hex>('eth_call', [{ to: contract, data }, 'latest']);
    return decodeFunctionResult({ abi: erc20Abi, functionName: 'balanceOf', data: out });
  }

  /** Keeps the transfer in its state and tries again after a backoff; the reason is stored and logged. */
  private async retryLater(row: TransferRow, error: string): Promise<StepResult> {
    const delay = Math.min(this.opts.retryMaxMs, this.opts.retryBaseMs * 2 ** Math.min(row.tries, 20));
    await this.deps.db
      .updateTable('evm_transfers')
      .set({ tries: row.tries + 1, error, next_attempt_at: new Date(this.deps.clock.now().getTime() + delay) })
      .where('id', '=', row.id)
      .where('status', '=', row.status)
      .execute();
    this.deps.log.warn({ transferId: row.id, chain: this.network.id, mode: this.mode, status: row.status, tries: row.tries + 1, error }, 'evm transfer waits');
    return 'wait';
  }

  /** Settles a transfer that is still `from`; then reports it. */
  private async settle(
    row: TransferRow,
    from: 'pending' | 'broadcast',
    result: { status: 'sent' | 'failed'; txHash: string | null; error: string | null; blockNumber?: bigint; gasUsed?: bigint; logs?: RpcReceipt['logs'] },
  ): Promise<StepResult> {
    const now = this.deps.clock.now();
    if (row.purpose === 'disperse') return this.settleBatch(row, from, result);
    const settled = await this.deps.db
      .updateTable('evm_transfers')
      .set({
        status: result.status,
        tx_hash: result.txHash,
        error: result.error,
        block_number: result.blockNumber ?? null,
        gas_used: result.gasUsed ?? null,
        settled_at: now,
      })
      .where('id', '=', row.id)
      .where('status', '=', from)
      .returningAll()
      .executeTakeFirst();
    if (!settled) return 'progress';
    const log = result.status === 'sent' ? this.deps.log.info.bind(this.deps.log) : this.deps.log.warn.bind(this.deps.log);
    log({ transferId: row.id, chain: this.network.id, mode: this.mode, status: result.status, txHash: result.txHash, error: result.error }, 'evm transfer settled');
    await this.report(settled);
    return 'done';
  }

  /**
   * Tells the sink a refund or payout was signed or broadcast. Best effort: a report lost to a crash or an error is
   * made good by the next step's report or by the settlement.
   */
  private async progress(row: TransferRow, status: 'signed' | 'broadcast', txHash: string): Promise<void> {
    if (!this.deps.sink) return;
    const ids = REPORTED.includes(row.purpose) ? [row.id] : row.purpose === 'disperse' ? (await this.members(row.id)).map((m) => m.id) : [];
    for (const id of ids) {
      try {
        await this.deps.sink.transferProgressed(this.mode, { transferId: id, status, txHash });
      } catch (err) {
        this.deps.log.warn({ err: errorText(err), transferId: id, status }, 'evm transfer progress could not be reported');
      }
    }
  }

  /** Hands a settled refund or payout to the sink, then marks it reported. */
  private async report(row: TransferRow): Promise<void> {
    if (row.reported || (row.status !== 'sent' && row.status !== 'failed')) return;
    if (REPORTED.includes(row.purpose)) await this.deps.sink?.transferSettled(this.mode, { transferId: row.id, status: row.status, txHash: row.tx_hash, error: row.error });
    await this.deps.db.updateTable('evm_transfers').set({ reported: true }).where('id', '=', row.id).execute();
  }

  // ---- batches through the Disperse contract ----

  /** The payouts a batch carries, in batch order. */
  async members(batchId: string): Promise<TransferRow[]> {
    return this.deps.db.selectFrom('evm_transfers').selectAll().where('batch_id', '=', batchId).orderBy('batch_index').execute();
  }

  /**
   * Gathers due ERC-20 payouts that are not in a batch into batches of one token (at least two payouts, at most
   * `maxItems`), each with its members, in one database transaction (the first part of every worker pass).
   */
  async formBatches(): Promise<void> {
    const { contract, maxItems } = this.disperse!;
    const now = this.deps.clock.now();
    await withTx(this.deps.db, async (tx) => {
      const rows = await tx
        .selectFrom('evm_transfers')
        .select(['id', 'token', 'to_address', 'destination', 'amount'])
        .where('mode', '=', this.mode)
        .where('chain', '=', this.network.id)
        .where('purpose', '=', 'payout')
        .where('status', '=', 'pending')
        .where('batch_id', 'is', null)
        .where('unbatched', '=', false)
        .where('value', '=', '0')
        .where('next_attempt_at', '<=', now)
        .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<=', now)]))
        .orderBy('created_at')
        .orderBy('id')
        .limit(maxItems * 5)
        .forUpdate()
        .skipLocked()
        .execute();
      const byToken = new Map<string, typeof rows>();
      for (const r of rows) byToken.set(r.to_address, [...(byToken.get(r.to_address) ?? []), r]);
      for (const [tokenContract, all] of byToken) {
        for (let i = 0; i < all.length; i += maxItems) {
          const chunk = all.slice(i, i + maxItems);
          if (chunk.length < 2) continue;
          const id = newId('dsp');
          const data = encodeFunctionData({
            abi: disperseAbi,
            functionName: 'disperseToken',
            args: [getAddress(tokenContract), chunk.map((m) => getAddress(m.destination)), chunk.map((m) => BigInt(m.amount))],
          });
          const amount = chunk.reduce((sum, m) => sum + BigInt(m.amount), 0n);
          await this.record(tx, { id, purpose: 'disperse', to: contract, value: 0n, data, token: chunk[0]!.token, destination: contract, amount });
          await sql`
            UPDATE evm_transfers AS t SET batch_id = ${id}, batch_index = v.i
            FROM (SELECT unnest(${chunk.map((m) => m.id)}::text[]) AS id, generate_series(0, ${chunk.length - 1}) AS i) AS v
            WHERE t.id = v.id`.execute(tx);
          this.deps.log.info({ batchId: id, chain: this.network.id, mode: this.mode, payouts: chunk.length }, 'evm payouts batched');
        }
      }
    });
  }

  /** The hot wallet's allowance of `token` to the Disperse contract. */
  private async allowance(token: Address): Promise<bigint> {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [this.address, this.disperse!.contract] });
    const out = await this.rpc().request<Hex>('eth_call', [{ to: token, data }, 'latest']);
    return decodeFunctionResult({ abi: erc20Abi, functionName: 'allowance', data: out });
  }

  /**
   * A batch needs the hot wallet's allowance first: records the one `approve` transaction per token and contract (a
   * no-op once recorded) and waits for it to confirm. If it failed, the batch hands its payouts back to go alone.
   */
  private async awaitApproval(row: TransferRow, token: Address): Promise<StepResult> {
    const contract = this.disperse!.contract;
    const id = `approve_${this.mode}_${this.network.id}_${token.toLowerCase()}_${contract.toLowerCase()}`;
    await withTx(this.deps.db, (tx) =>
      this.record(tx, { id, purpose: 'approve', to: token, value: 0n, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [contract, maxUint256] }), token: row.token, destination: contract, amount: maxUint256 }),
    );
    const approval = await this.get(id);
    if (approval?.status === 'failed') return this.settle(row, 'pending', { status: 'failed', txHash: null, error: `the hot wallet could not approve ${contract}: ${approval.error}` });
    return 'wait';
  }

  /**
   * Settles a batch and, in the same database transaction, its members: sent, or failed where the contract reported
   * `Failed(index)`. A batch that failed sent nothing: its members go out one by one.
   */
  private async settleBatch(
    row: TransferRow,
    from: 'pending' | 'broadcast',
    result: { status: 'sent' | 'failed'; txHash: string | null; error: string | null; blockNumber?: bigint; gasUsed?: bigint; logs?: RpcReceipt['logs'] },
  ): Promise<StepResult> {
    const now = this.deps.clock.now();
    const refused = new Set<number>();
    if (result.status === 'sent') {
      const logs = (result.logs ?? []).filter((l) => l.address.toLowerCase() === this.disperse?.contract.toLowerCase());
      for (const e of parseEventLogs({ abi: disperseAbi, eventName: 'Failed', logs: logs as never })) refused.add(Number(e.args.index));
    }
    const settled = await withTx(this.deps.db, async (tx) => {
      const done = await tx
        .updateTable('evm_transfers')
        .set({ status: result.status, tx_hash: result.txHash, error: result.error, block_number: result.blockNumber ?? null, gas_used: result.gasUsed ?? null, settled_at: now })
        .where('id', '=', row.id)
        .where('status', '=', from)
        .returning('id')
        .executeTakeFirst();
      if (!done) return false;
      const members = await tx.selectFrom('evm_transfers').select(['id', 'batch_index']).where('batch_id', '=', row.id).where('status', '=', 'pending').forUpdate().execute();
      if (result.status === 'failed') {
        await tx.updateTable('evm_transfers').set({ unbatched: true, next_attempt_at: now }).where('batch_id', '=', row.id).where('status', '=', 'pending').execute();
        return true;
      }
      const failed = members.filter((m) => refused.has(m.batch_index!)).map((m) => m.id);
      const sent = members.filter((m) => !refused.has(m.batch_index!)).map((m) => m.id);
      const common = { tx_hash: result.txHash, block_number: result.blockNumber ?? null, settled_at: now, signed_at: row.signed_at, broadcast_at: row.broadcast_at };
      if (sent.length) await tx.updateTable('evm_transfers').set({ ...common, status: 'sent', error: null }).where('id', 'in', sent).execute();
      if (failed.length) {
        await tx.updateTable('evm_transfers').set({ ...common, status: 'failed', error: 'the token refused the transfer to this destination (the batch sent the others)' }).where('id', 'in', failed).execute();
      }
      return true;
    });
    if (!settled) return 'progress';
    const log = result.status === 'sent' ? this.deps.log.info.bind(this.deps.log) : this.deps.log.warn.bind(this.deps.log);
    log({ batchId: row.id, chain: this.network.id, mode: this.mode, status: result.status, txHash: result.txHash, refused: refused.size, error: result.error }, 'evm batch settled');
    if (result.status === 'sent') for (const m of await this.members(row.id)) await this.report(m);
    await this.deps.db.updateTable('evm_transfers').set({ reported: true }).where('id', '=', row.id).execute();
    return 'done';
  }

  /** Reports settled transfers a crash left unreported. */
  private async reportSettled(): Promise<void> {
    const rows = await this.deps.db
      .selectFrom('evm_transfers')
      .selectAll()
      .where('mode', '=', this.mode)
      .where('chain', '=', this.network.id)
      .where('status', 'in', ['sent', 'failed'])
      .where('reported', '=', false)
      .limit(this.opts.batch)
      .execute();
    for (const row of rows) {
      try {
        await this.report(row);
      } catch (err) {
        this.deps.log.error({ err: errorText(err), transferId: row.id }, 'evm transfer settlement could not be reported');
      }
    }
  }
}

/** The senders of every registered EVM adapter, both modes. */
/** The ERC-20 contract a batch pays out (from its calldata). */
function batchToken(row: Pick<TransferRow, 'data'>): Address {
  const { args } = decodeFunctionData({ abi: disperseAbi, data: row.data as Hex });
  return getAddress(args[0]);
}

export function evmSenders(kasse: { chains: ChainRegistry }): EvmSender[] {
  const out: EvmSender[] = [];
  for (const mode of ['live', 'test'] as const) {
    for (const network of kasse.chains.networks(mode)) {
      const adapter = kasse.chains.hasAdapter(mode, network.id) ? kasse.chains.adapter(mode, network.id) : null;
      if (adapter instanceof EvmAdapter && adapter.sender) out.push(adapter.sender);
    }
  }
  return out;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
