/**
 * Batches of ERC-20 payouts through a Disperse contract (`evm.disperse`, contracts/Disperse.sol), for the EVM sender
 * (sender.ts) of a network that names one.
 *
 * Pending ERC-20 payouts of one token are gathered, in one database transaction, into a batch: a transfer of its own
 * (purpose `disperse`, id `dsp_…`) calling `disperseToken` with every member's destination and amount, driven through
 * the same steps as any transfer (one nonce, the stored bytes re-broadcast after a crash). Members wait, `pending`,
 * holding the batch's id, and are never sent alone while they hold it; when the batch settles they settle with it in
 * the same database transaction — `sent`, or `failed` where the contract reported a `Failed(index)` (the token refused
 * that transfer; the others went out). A batch that sent nothing (its estimate or its transaction reverted, its nonce
 * was taken) hands its members back to go out one by one (`unbatched`), so a payout is sent once or not at all. The
 * hot wallet's allowance to the contract is one `approve` transaction, made when a batch first needs it.
 */
import { sql, type RawBuilder } from 'kysely';
import {
  decodeFunctionData,
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  maxUint256,
  parseEventLogs,
  type Address,
  type Hex,
} from 'viem';
import type { Clock } from '../../core/clock.ts';
import { groupBy } from '../../core/group.ts';
import { newId } from '../../core/ids.ts';
import type { Logger } from '../../core/log.ts';
import type { Mode } from '../../core/mode.ts';
import { withTx, type Db, type Tx } from '../../db/index.ts';
import type { NetworkConfig } from '../types.ts';
import { disperseAbi, erc20Abi } from './contracts.ts';
import type { RpcClient } from './rpc.ts';
import { isRevert, settleRow, type OutgoingCall, type Settlement, type TransferRow } from './transfer.ts';

/** Extra gas a batch gets above its estimate (the contract reverts rather than run a payment short of gas). */
export const BATCH_GAS_EXTRA = 100_000n;
/**
 * The gas a batch is first tried with: this much per payout (an ERC-20 transfer to a new holder costs about 30,000
 * in a batch, calldata included) above the extra. A call at that limit that goes through proves it enough, since the
 * contract reverts rather than run a payment short; else the node's estimate decides.
 */
export const BATCH_GAS_PER_PAYOUT = 40_000n;

/** What a batch needs of the sender it goes out through. */
export interface BatchSender {
  readonly mode: Mode;
  readonly network: NetworkConfig;
  /** The hot wallet. */
  readonly address: Address;
  rpc(): RpcClient;
  record(tx: Tx, call: OutgoingCall): Promise<void>;
  get(id: string): Promise<TransferRow | undefined>;
  /** Due transfers matching `where`, locked in `tx` (the queue's `claim`). */
  claim(tx: Tx, where: RawBuilder<boolean>, limit: number): Promise<TransferRow[]>;
}

export class DisperseBatches {
  constructor(
    private readonly sender: BatchSender,
    private readonly deps: { db: Db; clock: Clock; log: Logger },
    readonly contract: Address,
    readonly maxItems: number,
  ) {}

  /** The payouts a batch carries, in batch order. */
  async members(batchId: string): Promise<TransferRow[]> {
    return this.deps.db
      .selectFrom('evm_transfers')
      .selectAll()
      .where('batch_id', '=', batchId)
      .orderBy('batch_index')
      .execute();
  }

  /**
   * Gathers due ERC-20 payouts that are not in a batch into batches of one token (at least two payouts, at most
   * `maxItems`), each with its members, in one database transaction (the first part of every worker pass).
   */
  async form(): Promise<void> {
    const { mode, network } = this.sender;
    await withTx(this.deps.db, async (tx) => {
      // Through the sender's queue: due payouts of a token (no value), not in a batch and not handed back.
      const rows = await this.sender.claim(
        tx,
        sql<boolean>`purpose = 'payout' AND status = 'pending' AND batch_id IS NULL AND NOT unbatched AND value = '0'`,
        this.maxItems * 5,
      );
      for (const [tokenContract, all] of groupBy(rows, (r) => r.to_address)) {
        for (let i = 0; i < all.length; i += this.maxItems) {
          const chunk = all.slice(i, i + this.maxItems);
          if (chunk.length < 2) continue;
          const id = newId('dsp');
          const data = encodeFunctionData({
            abi: disperseAbi,
            functionName: 'disperseToken',
            args: [
              getAddress(tokenContract),
              chunk.map((m) => getAddress(m.destination)),
              chunk.map((m) => BigInt(m.amount)),
            ],
          });
          const amount = chunk.reduce((sum, m) => sum + BigInt(m.amount), 0n);
          await this.sender.record(tx, {
            id,
            purpose: 'disperse',
            to: this.contract,
            value: 0n,
            data,
            token: chunk[0]!.token,
            destination: this.contract,
            amount,
          });
          await sql`
            UPDATE evm_transfers AS t SET batch_id = ${id}, batch_index = v.i
            FROM (SELECT unnest(${chunk.map((m) => m.id)}::text[]) AS id, generate_series(0, ${chunk.length - 1}) AS i) AS v
            WHERE t.id = v.id`.execute(tx);
          this.deps.log.info({ batchId: id, chain: network.id, mode, payouts: chunk.length }, 'evm payouts batched');
        }
      }
    });
  }

  /**
   * The gas limit of a batch: `BATCH_GAS_PER_PAYOUT` per payout plus the extra when one `eth_call` at that limit goes
   * through (one execution), else the node's estimate (many executions: the contract's own check makes the node
   * search) with the margin and the extra. A batch that reverts at any limit throws, as the estimate does.
   */
  async gasLimit(row: Pick<TransferRow, 'to_address' | 'data'>, margin: (estimate: bigint) => bigint): Promise<bigint> {
    const { args } = decodeFunctionData({ abi: disperseAbi, data: row.data as Hex });
    const call = { from: this.sender.address, to: row.to_address, data: row.data };
    const first = BATCH_GAS_EXTRA + BATCH_GAS_PER_PAYOUT * BigInt(args[1].length);
    try {
      await this.sender.rpc().request('eth_call', [{ ...call, gas: `0x${first.toString(16)}` }, 'latest']);
      return first;
    } catch (err) {
      if (!isRevert(err)) throw err;
    }
    return margin(BigInt(await this.sender.rpc().request<Hex>('eth_estimateGas', [call]))) + BATCH_GAS_EXTRA;
  }

  /** The ERC-20 contract a batch pays out (from its calldata). */
  token(row: Pick<TransferRow, 'data'>): Address {
    const { args } = decodeFunctionData({ abi: disperseAbi, data: row.data as Hex });
    return getAddress(args[0]);
  }

  /** The hot wallet's allowance of `token` to the Disperse contract. */
  async allowance(token: Address): Promise<bigint> {
    const data = encodeFunctionData({
      abi: erc20Abi,
      functionName: 'allowance',
      args: [this.sender.address, this.contract],
    });
    const out = await this.sender.rpc().request<Hex>('eth_call', [{ to: token, data }, 'latest']);
    return decodeFunctionResult({ abi: erc20Abi, functionName: 'allowance', data: out });
  }

  /**
   * A batch needs the hot wallet's allowance first: records the one `approve` transaction per token and contract (a
   * no-op once recorded). Returns why the approval failed (the batch then hands its payouts back to go alone), or
   * null while it is still to confirm.
   */
  async approve(row: TransferRow, token: Address): Promise<string | null> {
    const { mode, network } = this.sender;
    const id = `approve_${mode}_${network.id}_${token.toLowerCase()}_${this.contract.toLowerCase()}`;
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [this.contract, maxUint256] });
    await withTx(this.deps.db, (tx) =>
      this.sender.record(tx, {
        id,
        purpose: 'approve',
        to: token,
        value: 0n,
        data,
        token: row.token,
        destination: this.contract,
        amount: maxUint256,
      }),
    );
    const approval = await this.sender.get(id);
    return approval?.status === 'failed'
      ? `the hot wallet could not approve ${this.contract}: ${approval.error}`
      : null;
  }

  /**
   * Settles a batch still `from` and, in the same database transaction, its members: sent, or failed where the
   * contract reported `Failed(index)`. A batch that failed sent nothing: its members go out one by one. False when
   * the batch was no longer `from`.
   */
  async settle(row: TransferRow, from: 'pending' | 'broadcast', result: Settlement): Promise<boolean> {
    const now = this.deps.clock.now();
    const refused = new Set<number>();
    if (result.status === 'sent') {
      const logs = (result.logs ?? []).filter((l) => l.address.toLowerCase() === this.contract.toLowerCase());
      for (const e of parseEventLogs({ abi: disperseAbi, eventName: 'Failed', logs: logs as never }))
        refused.add(Number(e.args.index));
    }
    const settled = await withTx(this.deps.db, async (tx) => {
      if (!(await settleRow(tx, row.id, from, result, now))) return false;
      const members = await tx
        .selectFrom('evm_transfers')
        .select(['id', 'batch_index'])
        .where('batch_id', '=', row.id)
        .where('status', '=', 'pending')
        .forUpdate()
        .execute();
      if (result.status === 'failed') {
        await tx
          .updateTable('evm_transfers')
          .set({ unbatched: true, next_attempt_at: now })
          .where('batch_id', '=', row.id)
          .where('status', '=', 'pending')
          .execute();
        return true;
      }
      const failed = members.filter((m) => refused.has(m.batch_index!)).map((m) => m.id);
      const sent = members.filter((m) => !refused.has(m.batch_index!)).map((m) => m.id);
      const common = {
        tx_hash: result.txHash,
        block_number: result.blockNumber ?? null,
        settled_at: now,
        signed_at: row.signed_at,
        broadcast_at: row.broadcast_at,
      };
      if (sent.length)
        await tx
          .updateTable('evm_transfers')
          .set({ ...common, status: 'sent', error: null })
          .where('id', 'in', sent)
          .execute();
      if (failed.length) {
        await tx
          .updateTable('evm_transfers')
          .set({
            ...common,
            status: 'failed',
            error: 'the token refused the transfer to this destination (the batch sent the others)',
          })
          .where('id', 'in', failed)
          .execute();
      }
      return true;
    });
    if (settled) {
      const log =
        result.status === 'sent' ? this.deps.log.info.bind(this.deps.log) : this.deps.log.warn.bind(this.deps.log);
      log(
        {
          batchId: row.id,
          chain: this.sender.network.id,
          mode: this.sender.mode,
          status: result.status,
          txHash: result.txHash,
          refused: refused.size,
          error: result.error,
        },
        'evm batch settled',
      );
    }
    return settled;
  }
}
