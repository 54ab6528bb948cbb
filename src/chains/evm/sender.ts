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
 * The transfers queue (../queue.ts) leases the rows (in nonce order, so broadcasts keep it), drives these steps,
 * applies the failure rule (a refusal no retry cures fails a transfer not yet signed; everything else waits a
 * backoff) and reports settled refunds and payouts to the `TransferSink` (the transfers module, which calls back the
 * module that asked). A gasless relay is the family's own business and is only recorded. Where the network names a
 * Disperse contract, ERC-20 payouts go out in batches (disperse.ts).
 * Beside it: its options (sender-options.ts), the transfer's types, calls and nonces (transfer.ts), and the fee
 * arithmetic (fees.ts).
 *
 * NOTE: a reverted transaction consumed its nonce on chain like any other; the counter simply moves on and the
 * next transfer takes the next nonce. The gas it burnt is the operator's loss; the refund is `failed` and the
 * merchant may request it again. Decisions and operations: docs/evm.md ("Refunds and the hot wallet").
 */
import { sql, type RawBuilder, type Selectable } from 'kysely';
import {
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  keccak256,
  maxUint256,
  type Address,
  type Hex,
} from 'viem';
import { formatUnits } from '../../core/money.ts';
import { withTx, type Tx } from '../../db/index.ts';
import type { Mode } from '../../core/mode.ts';
import { methodUnavailable } from '../jsonrpc.ts';
import type { OutgoingSender, TransferRequest } from '../ports.ts';
import {
  QueuedSender,
  reportsToSink,
  TransferQueue,
  type QueueOptions,
  type StepOutcome,
  type StepResult,
} from '../queue.ts';
import type { NetworkConfig } from '../types.ts';
import { evmSettings } from './config.ts';
import type { EvmTransferTxsTable } from './schema.ts';
import { erc20Abi } from './contracts.ts';
import { DisperseBatches } from './disperse.ts';
import type { EvmHolds } from './holds.ts';
import { ceilBump, GAS_MARGIN_DEN, GAS_MARGIN_NUM, hex, max, min, type Fees } from './fees.ts';
import { RpcError, type RpcClient } from './rpc.ts';
import { SENDER_DEFAULTS, type EvmSenderDeps, type EvmSenderOptions, type SenderChain } from './sender-options.ts';
import {
  allocateNonce,
  isRevert,
  lockRow,
  settleRow,
  transferCall,
  transferConfirmations,
  type OutgoingCall,
  type RpcReceipt,
  type Settlement,
  type TransferPurpose,
  type TransferRow,
} from './transfer.ts';

/** The transfer purpose of each operation on a hold (the capture module's, and a refund's). */
const HOLD_PURPOSES = { authorize: 'authorize', capture: 'capture', void: 'void', refund: 'refund' } as const;

export type { StepResult };

export class EvmSender extends QueuedSender<TransferRow, Selectable<EvmTransferTxsTable>> implements OutgoingSender {
  readonly network: NetworkConfig;
  readonly mode: Mode;
  readonly maxFeePerGas: bigint;
  readonly replaceAfterBlocks: number;
  /** The confirmations a transfer settles with unless it is an x402 settlement (`confirmationsOf`). */
  readonly confirmations: number;
  /** The confirmations every transfer settles with when the options name them. */
  private readonly fixedConfirmations: number | undefined;
  /** The Disperse contract payouts are batched through, and the most payouts per batch; null: one by one. */
  readonly disperse: { contract: Address; maxItems: number } | null;
  private readonly batches: DisperseBatches | null;
  protected readonly queue: TransferQueue<TransferRow>;
  private hotAddress: Address | null = null;

  constructor(
    private readonly chain: SenderChain,
    private readonly deps: EvmSenderDeps,
    options: EvmSenderOptions = {},
  ) {
    super();
    this.network = chain.network;
    this.mode = chain.mode;
    if (this.network.chainId === null) throw new Error(`EvmSender: ${this.network.id} has no chain id`);
    this.maxFeePerGas = options.maxFeePerGas ?? evmSettings(this.network).maxFeePerGas ?? SENDER_DEFAULTS.maxFeePerGas;
    this.replaceAfterBlocks =
      options.replaceAfterBlocks ?? evmSettings(this.network).replaceAfterBlocks ?? SENDER_DEFAULTS.replaceAfterBlocks;
    this.fixedConfirmations = options.confirmations;
    this.confirmations =
      options.confirmations ?? this.network.confirmationTiers[this.network.confirmationTiers.length - 1]!.confirmations;
    const settings = evmSettings(this.network);
    this.disperse = settings.disperse
      ? { contract: getAddress(settings.disperse), maxItems: settings.disperseMaxItems ?? 200 }
      : null;
    this.batches = this.disperse
      ? new DisperseBatches(this, deps, this.disperse.contract, this.disperse.maxItems)
      : null;
    const queue: QueueOptions = {
      batch: options.batch ?? SENDER_DEFAULTS.batch,
      leaseMs: options.leaseMs ?? SENDER_DEFAULTS.leaseMs,
      retryBaseMs: options.retryBaseMs ?? SENDER_DEFAULTS.retryBaseMs,
      retryMaxMs: options.retryMaxMs ?? SENDER_DEFAULTS.retryMaxMs,
    };
    this.queue = new TransferQueue<TransferRow>('evm', chain, deps, queue, {
      sign: (row) => this.sign(row),
      broadcast: (row) => this.broadcast(row),
      follow: (row) => this.check(row),
      // Once signed a transfer holds its nonce: failing it would leave a gap every later transfer waits behind, so
      // only a transfer not signed yet fails for good (NOTE: a refusal no retry cures then waits for the operator).
      unsent: async (row) => row.status === 'pending',
      fail: async (row, reason) =>
        void (await this.settle(row, 'pending', { status: 'failed', txHash: null, error: reason })),
      describe: (row, err, failure) =>
        row.status === 'signed'
          ? `broadcast: ${failure.reason}`
          : failure.permanent && isRevert(err)
            ? `the transfer would revert: ${failure.reason}`
            : failure.reason,
      hash: (row) => row.tx_hash,
      block: (row) => (row.block_number === null ? null : BigInt(row.block_number)),
      carried: async (row) => (row.purpose === 'disperse' && this.batches ? this.batches.members(row.id) : []),
      beforePass: async () => void (await this.batches?.form()),
      // Payouts waiting in a batch go out with it, never alone.
      lease: { where: sql<boolean>`(batch_id IS NULL OR unbatched)`, order: sql`nonce NULLS LAST` },
    });
  }

  /** Due transfers matching `where`, locked in `tx` for regrouping (the queue's `claim`; disperse.ts). */
  claim(tx: Tx, where: RawBuilder<boolean>, limit: number): Promise<TransferRow[]> {
    return this.queue.claim(tx, where, limit);
  }

  /** The hot wallet's address (checksummed). */
  get address(): Address {
    return (this.hotAddress ??= getAddress(this.deps.account().address));
  }

  /** Records a refund or payout in the caller's transaction (no network I/O); idempotent on `transferId`. */
  async enqueue(tx: Tx, request: TransferRequest): Promise<void> {
    if (request.mode !== this.mode || request.token.chain !== this.network.id) {
      throw new Error(
        `EvmSender(${this.mode}:${this.network.id}) cannot send ${request.token.id} in ${request.mode} mode`,
      );
    }
    if (request.hold) {
      // Money held in the escrow moves by the hot wallet's call to it (holds.ts).
      const holds = this.holds();
      if (!holds) throw new Error(`EvmSender(${this.mode}:${this.network.id}): no escrow is configured for holds`);
      if (request.purpose !== HOLD_PURPOSES[request.hold.kind])
        throw new Error(
          `EvmSender: a ${request.hold.kind} on a hold cannot be a transfer of purpose ${request.purpose}`,
        );
      await this.record(tx, {
        id: request.transferId,
        purpose: request.purpose as TransferPurpose,
        token: request.token.id,
        destination: getAddress(request.destination),
        amount: request.amount,
        value: 0n,
        ...holds.call(request.hold, request.amount),
      });
      return;
    }
    if (request.purpose !== 'refund' && request.purpose !== 'payout')
      throw new Error(`EvmSender cannot record a transfer of purpose ${request.purpose}`);
    const call = transferCall(request.token, request.destination, request.amount);
    await this.record(tx, {
      id: request.transferId,
      purpose: request.purpose,
      token: request.token.id,
      destination: getAddress(request.destination),
      amount: request.amount,
      ...call,
    });
  }

  /** Records any call from the hot wallet as a `pending` transfer inside `tx`; idempotent on `call.id`. */
  async record(tx: Tx, call: OutgoingCall): Promise<void> {
    if (call.amount < 0n || (call.amount === 0n && call.purpose !== 'revoke'))
      throw new Error('an outgoing transfer moves a positive amount');
    await this.enqueued(tx, call.id, {
      purpose: call.purpose,
      from_address: this.address,
      to_address: getAddress(call.to),
      value: call.value.toString(),
      data: call.data,
      token: call.token,
      destination: call.destination,
      amount: call.amount.toString(),
    });
  }

  rpc(): RpcClient {
    return this.chain.rpc();
  }

  private async head(): Promise<bigint> {
    return BigInt(await this.rpc().request<Hex>('eth_blockNumber'));
  }

  /** EIP-1559 fees for the next block: maxFee = 2·baseFee + tip, both capped at `maxFeePerGas`. */
  async fees(): Promise<Fees> {
    const block = await this.rpc().request<{ baseFeePerGas?: Hex } | null>('eth_getBlockByNumber', ['latest', false]);
    if (!block?.baseFeePerGas)
      throw new Error(`${this.network.id}: the latest block has no baseFeePerGas (EIP-1559 is required)`);
    let tip: bigint;
    try {
      tip = BigInt(await this.rpc().request<Hex>('eth_maxPriorityFeePerGas'));
    } catch (err) {
      if (!(err instanceof RpcError) || (err.retryable && !methodUnavailable(err))) throw err;
      tip = SENDER_DEFAULTS.fallbackTip;
    }
    const maxFeePerGas = min(2n * BigInt(block.baseFeePerGas) + tip, this.maxFeePerGas);
    return { maxFeePerGas, maxPriorityFeePerGas: min(tip, maxFeePerGas) };
  }

  /** pending → signed: read fees, balances and gas; then allocate the nonce, sign and store in one transaction. */
  private async sign(row: TransferRow): Promise<StepOutcome> {
    const rpc = this.rpc();
    const value = BigInt(row.value);
    const fees = await this.fees();
    const chainNonce = BigInt(await rpc.request<Hex>('eth_getTransactionCount', [this.address, 'latest']));
    const batch = row.purpose === 'disperse' ? this.batches : null;
    const holds = this.holds();
    const escrowCall = holds !== null && getAddress(row.to_address) === holds.escrow;
    // An escrow call moves held money, except a refund, which the refund collector takes from the hot wallet.
    const tokenMoved = escrowCall
      ? row.purpose === 'refund'
        ? this.tokenContract(row.token)
        : null
      : reportsToSink(row.purpose) && value === 0n
        ? (row.to_address as Address)
        : batch
          ? batch.token(row)
          : null;
    if (escrowCall && row.purpose === 'refund' && tokenMoved) {
      const refused = await this.approveRefunds(row, tokenMoved, holds.refundCollector);
      if (refused !== undefined)
        return refused ? this.settle(row, 'pending', { status: 'failed', txHash: null, error: refused }) : 'wait';
    }
    if (tokenMoved) {
      const held = await this.tokenBalance(tokenMoved);
      if (held < BigInt(row.amount))
        return { retry: `hot wallet ${this.address} holds ${held} of ${row.token}, the transfer needs ${row.amount}` };
    }
    if (batch && (await batch.allowance(tokenMoved!)) < BigInt(row.amount)) {
      const refused = await batch.approve(row, tokenMoved!);
      return refused ? this.settle(row, 'pending', { status: 'failed', txHash: null, error: refused }) : 'wait';
    }
    const margin = (estimate: bigint) => (estimate * GAS_MARGIN_NUM + GAS_MARGIN_DEN - 1n) / GAS_MARGIN_DEN;
    const gas = batch
      ? await batch.gasLimit(row, margin)
      : margin(
          BigInt(
            await rpc.request<Hex>('eth_estimateGas', [
              { from: this.address, to: row.to_address, value: hex(value), data: row.data },
            ]),
          ),
        );
    const balance = BigInt(await rpc.request<Hex>('eth_getBalance', [this.address, 'latest']));
    const needed = value + gas * fees.maxFeePerGas;
    if (balance < needed) {
      return {
        retry: `hot wallet ${this.address} holds ${formatUnits(balance, 18)} of the native coin, the transfer needs up to ${formatUnits(needed, 18)} for value and gas`,
      };
    }
    const now = this.deps.clock.now();
    const signed = await withTx(this.deps.db, async (tx) => {
      const current = await lockRow(tx, row.id);
      if (!current || current.status !== 'pending') return null;
      const nonce = await allocateNonce(
        tx,
        { mode: this.mode, chain: this.network.id, address: this.address },
        chainNonce,
        now,
      );
      const hash = await this.storeSigned(tx, current, 0, { nonce, gas, fees }, now);
      await tx
        .updateTable('evm_transfers')
        .set({
          status: 'signed',
          nonce,
          gas_limit: gas,
          tx_hash: hash,
          signed_at: now,
          error: null,
          tries: 0,
          next_attempt_at: now,
        })
        .where('id', '=', row.id)
        .execute();
      return { nonce, hash };
    });
    if (signed) {
      this.deps.log.info(
        {
          transferId: row.id,
          chain: this.network.id,
          mode: this.mode,
          nonce: signed.nonce.toString(),
          txHash: signed.hash,
        },
        'evm transfer signed',
      );
      await this.queue.progressed(row, 'signed', signed.hash);
    }
    return 'progress';
  }

  /** signed → broadcast: sends the newest stored raw transaction exactly as stored. */
  private async broadcast(row: TransferRow): Promise<StepOutcome> {
    const newest = await this.newestVersion(row.id);
    try {
      await this.rpc().request('eth_sendRawTransaction', [newest.raw]);
    } catch (err) {
      // The node already has it or an older version of it, or the nonce is used (by it or by another): the check
      // step finds out which from receipts. Anything else is retried later with the same bytes (see docs/evm.md).
      if (!(err instanceof RpcError) || !/already known|known transaction|nonce too low|underpriced/i.test(err.message))
        throw err;
    }
    const head = await this.head();
    if (await this.queue.broadcasted(row.id, ['tx_hash', newest.tx_hash], { broadcast_block: head })) {
      this.deps.log.info(
        {
          transferId: row.id,
          chain: this.network.id,
          mode: this.mode,
          txHash: newest.tx_hash,
          version: newest.version,
        },
        'evm transfer broadcast',
      );
      await this.queue.progressed(row, 'broadcast', newest.tx_hash);
    }
    return 'progress';
  }

  /** The confirmations `row` settles with. */
  confirmationsOf(row: Pick<TransferRow, 'purpose' | 'token' | 'amount'>): number {
    return this.fixedConfirmations ?? transferConfirmations(this.network, row);
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
      if (confirmations < BigInt(this.confirmationsOf(row))) {
        await this.queue.progressed(row, 'broadcast', v.tx_hash);
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
    const at = head - BigInt(this.confirmationsOf(row)) + 1n;
    if (at >= 0n && row.nonce !== null) {
      const count = BigInt(await rpc.request<Hex>('eth_getTransactionCount', [this.address, hex(at)]));
      if (count > row.nonce) {
        return this.settle(row, 'broadcast', {
          status: 'failed',
          txHash: null,
          error: `nonce ${row.nonce} was used by a transaction Kasse did not sign for this transfer`,
        });
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
  private async replace(
    row: TransferRow,
    newest: { tx_hash: string; version: number; max_fee_per_gas: string; max_priority_fee_per_gas: string },
  ): Promise<boolean> {
    const fees = await this.fees();
    const bumpedMax = ceilBump(BigInt(newest.max_fee_per_gas));
    const bumpedTip = ceilBump(BigInt(newest.max_priority_fee_per_gas));
    if (bumpedMax > this.maxFeePerGas) {
      this.deps.log.warn(
        {
          transferId: row.id,
          chain: this.network.id,
          mode: this.mode,
          txHash: newest.tx_hash,
          cap: this.maxFeePerGas.toString(),
        },
        'evm transfer stuck, but a replacement would exceed the fee cap; waiting',
      );
      return false;
    }
    const maxFeePerGas = min(max(bumpedMax, fees.maxFeePerGas), this.maxFeePerGas);
    const next: Fees = {
      maxFeePerGas,
      maxPriorityFeePerGas: min(max(bumpedTip, fees.maxPriorityFeePerGas), maxFeePerGas),
    };
    const now = this.deps.clock.now();
    const hash = await withTx(this.deps.db, async (tx) => {
      const current = await lockRow(tx, row.id);
      if (
        !current ||
        current.status !== 'broadcast' ||
        current.tx_hash !== newest.tx_hash ||
        current.nonce === null ||
        current.gas_limit === null
      )
        return null;
      const signed = { nonce: current.nonce, gas: BigInt(current.gas_limit), fees: next };
      const hash = await this.storeSigned(tx, current, newest.version + 1, signed, now);
      await tx
        .updateTable('evm_transfers')
        .set({ status: 'signed', tx_hash: hash, broadcast_block: null, next_attempt_at: now })
        .where('id', '=', row.id)
        .execute();
      return hash;
    });
    if (hash) {
      this.deps.log.info(
        {
          transferId: row.id,
          chain: this.network.id,
          mode: this.mode,
          replaced: newest.tx_hash,
          txHash: hash,
          maxFeePerGas: next.maxFeePerGas.toString(),
        },
        'evm transfer stuck; replaced with a higher fee',
      );
    }
    return hash !== null;
  }

  /** Signs `row` with its nonce, gas and fees and stores it as `version`, in the caller's transaction; its hash. */
  private async storeSigned(
    tx: Tx,
    row: TransferRow,
    version: number,
    { nonce, gas, fees }: { nonce: bigint; gas: bigint; fees: Fees },
    now: Date,
  ): Promise<Hex> {
    const { raw, hash } = await this.signTx(row, nonce, gas, fees);
    await tx
      .insertInto('evm_transfer_txs')
      .values({
        transfer_id: row.id,
        version,
        tx_hash: hash,
        raw,
        max_fee_per_gas: fees.maxFeePerGas,
        max_priority_fee_per_gas: fees.maxPriorityFeePerGas,
        created_at: now,
      })
      .execute();
    return hash;
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

  /** The escrow of this network's holds (holds.ts); null where none is configured. */
  private holds(): EvmHolds | null {
    return this.chain.holds ?? null;
  }

  private tokenContract(tokenId: string): Address | null {
    const contract = this.network.tokens.find((t) => t.id === tokenId)?.contract;
    return contract ? getAddress(contract) : null;
  }

  /**
   * A refund through the escrow needs the hot wallet's allowance to the refund collector first: records the one
   * `approve` transaction per token (a no-op once recorded). Undefined once the allowance is there; null while the
   * approval is on its way; why it failed otherwise.
   */
  private async approveRefunds(
    row: TransferRow,
    token: Address,
    collector: Address,
  ): Promise<string | null | undefined> {
    const read = encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [this.address, collector] });
    const out = await this.rpc().request<Hex>('eth_call', [{ to: token, data: read }, 'latest']);
    if (decodeFunctionResult({ abi: erc20Abi, functionName: 'allowance', data: out }) >= BigInt(row.amount))
      return undefined;
    const id = `approve_${this.mode}_${this.network.id}_${token.toLowerCase()}_${collector.toLowerCase()}`;
    await withTx(this.deps.db, (tx) =>
      this.record(tx, {
        id,
        purpose: 'approve',
        to: token,
        value: 0n,
        data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [collector, maxUint256] }),
        token: row.token,
        destination: collector,
        amount: maxUint256,
      }),
    );
    const approval = await this.get(id);
    return approval?.status === 'failed' ? `the hot wallet could not approve ${collector}: ${approval.error}` : null;
  }

  private async tokenBalance(contract: Address): Promise<bigint> {
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [this.address] });
    const out = await this.rpc().request<Hex>('eth_call', [{ to: contract, data }, 'latest']);
    return decodeFunctionResult({ abi: erc20Abi, functionName: 'balanceOf', data: out });
  }

  /** Settles a transfer (a batch with its payouts) that is still `from`; the queue reports it. */
  private async settle(row: TransferRow, from: 'pending' | 'broadcast', result: Settlement): Promise<StepResult> {
    const now = this.deps.clock.now();
    if (row.purpose === 'disperse' && this.batches)
      return (await this.batches.settle(row, from, result)) ? 'done' : 'progress';
    if (!(await settleRow(this.deps.db, row.id, from, result, now))) return 'progress';
    const log =
      result.status === 'sent' ? this.deps.log.info.bind(this.deps.log) : this.deps.log.warn.bind(this.deps.log);
    log(
      {
        transferId: row.id,
        chain: this.network.id,
        mode: this.mode,
        status: result.status,
        txHash: result.txHash,
        error: result.error,
      },
      'evm transfer settled',
    );
    return 'done';
  }

  /** The payouts a batch carries, in batch order. */
  async members(batchId: string): Promise<TransferRow[]> {
    return this.batches?.members(batchId) ?? [];
  }

  /** Gathers due ERC-20 payouts into batches (disperse.ts); the first part of every worker pass. */
  async formBatches(): Promise<void> {
    await this.batches?.form();
  }
}
