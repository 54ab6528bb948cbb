/**
 * The EVM deposit watcher of one network in one mode (NBXplorer / ponder style, STYLE habit 6).
 *
 * It resumes from a cursor in PostgreSQL (the last block whose deposits are recorded) and follows the head by block
 * hash, keeping the hashes of recent blocks down to the finality depth. Each tick polls the head once, then scans the
 * new blocks in batches: per batch ONE `eth_getLogs` for Transfer events of every configured ERC-20 (address array),
 * per block ONE `eth_getBlockByNumber` (with full transactions only when the native coin is configured), and ONE
 * `DepositSink.watchedAddresses` lookup for every recipient seen in the batch. So the work per block does not grow
 * with the number of open deposit addresses; the head poll is per tick, not per block.
 *
 * A reorg is noticed when a new block's parent hash is not the stored hash below it, or when the node's block at a
 * stored height has another hash. The watcher then walks back to the common ancestor, tells the sink
 * (`blocksRemoved`: the payments module orphans those deposits and reverses what they paid) and rescans from there.
 * Inconsistent answers (a block missing, logs naming a block hash the batch does not have, a broken parent chain
 * inside the batch) are retried after backoff on the next RPC URL; a node whose head went backwards is waited for.
 * The cursor only advances after a batch's deposits are recorded, so no block is ever skipped, and since
 * `recordDeposits` is idempotent a crash in between only rescans. No database transaction spans an RPC call.
 *
 * NOTE: native coin is seen only as the `value` of a transaction sent straight to a deposit address; coin moved by an
 * internal call (a contract, a smart wallet, an exchange's batch sender) is not seen. See docs/evm.md.
 */
import type { Hex } from 'viem';
import type { Tx } from '../../db/index.ts';
import { withTx } from '../../db/index.ts';
import { InconsistentChainError, PollingWatcher, type InconsistencyRetries, type WatcherBasics } from '../loops.ts';
import type { DepositObservation } from '../ports.ts';
import type { TokenConfig } from '../types.ts';
import { bloomMayContain } from './bloom.ts';
import type { RpcClient } from './rpc.ts';

/** keccak256("Transfer(address,address,uint256)") */
export const TRANSFER_TOPIC: Hex = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

export interface EvmWatcherOptions extends WatcherBasics, InconsistencyRetries {
  rpc: RpcClient;
  /** Blocks per batch when behind (one eth_getLogs per batch). Default 20. */
  blocksPerBatch?: number;
  /** Blocks scanned per tick at most before yielding (the loop runs again at once). Default 1000. */
  maxBlocksPerTick?: number;
  /** Parallel eth_getBlockByNumber requests inside a batch. Default 4. */
  fetchConcurrency?: number;
  /** First block to scan when no cursor is stored; default: the head at first start. */
  startBlock?: bigint | null;
}

/** What one tick did (tests and benchmarks read it). */
export interface TickResult {
  head: bigint | null;
  /** Blocks whose deposits were recorded in this tick. */
  scanned: number;
  deposits: number;
  /** Lowest block removed by reorgs in this tick, if any. */
  reorgFrom: bigint | null;
  /** The node's head is below the cursor: waited. */
  lagging: boolean;
  /** More blocks are waiting than this tick scanned. */
  behind: boolean;
}

interface Cursor {
  number: bigint;
  hash: string;
}

interface RpcTx {
  hash: Hex;
  from: Hex;
  to: Hex | null;
  value: Hex;
}

interface RpcBlock {
  number: Hex;
  hash: Hex;
  timestamp: Hex;
  parentHash: Hex;
  logsBloom: Hex;
  transactions: Array<Hex | RpcTx>;
}

interface RpcLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  removed?: boolean;
}

interface RpcReceipt {
  status: Hex;
  blockHash: Hex;
}

/** Native transfers use this index (ERC-20 transfers use the log index, which is never negative). */
export const NATIVE_TRANSFER_INDEX = -1;

const hexOf = (n: bigint): Hex => `0x${n.toString(16)}`;
const topicAddress = (topic: Hex): string => `0x${topic.slice(26)}`.toLowerCase();

export class EvmWatcher extends PollingWatcher<TickResult> {
  private readonly tokensByContract: Map<string, TokenConfig>;
  private readonly native: TokenConfig | null;
  private readonly blocksPerBatch: number;
  private readonly maxBlocksPerTick: number;
  private readonly concurrency: number;

  constructor(private readonly opts: EvmWatcherOptions) {
    super('evm', opts);
    this.tokensByContract = new Map(
      opts.network.tokens
        .filter((t) => t.kind === 'erc20' && t.contract)
        .map((t) => [t.contract!.toLowerCase(), t] as const),
    );
    this.native = opts.network.tokens.find((t) => t.kind === 'native') ?? null;
    this.blocksPerBatch = Math.max(1, opts.blocksPerBatch ?? 20);
    this.maxBlocksPerTick = Math.max(1, opts.maxBlocksPerTick ?? 1000);
    this.concurrency = Math.max(1, opts.fetchConcurrency ?? 4);
  }

  /** The stored cursor: the last block whose deposits are recorded (null before the first tick). */
  async cursor(): Promise<Cursor | null> {
    const row = await this.cursorRow('evm_cursors');
    return row ? { number: BigInt(row.block_number), hash: row.block_hash } : null;
  }

  /** One poll: head once, then batches up to the head (or maxBlocksPerTick). */
  protected async run(): Promise<TickResult> {
    const result: TickResult = { head: null, scanned: 0, deposits: 0, reorgFrom: null, lagging: false, behind: false };
    const head = BigInt(await this.opts.rpc.request<Hex>('eth_blockNumber'));
    result.head = head;
    let cursor = (await this.cursor()) ?? (await this.initCursor(head));
    let failures = 0;
    while (true) {
      try {
        if (head < cursor.number) {
          // The node is behind our cursor: a lagging node, or a reorg onto a shorter chain. Tell them apart by hash.
          const b = await this.block(head, false);
          const stored = await this.storedHash(head);
          if (stored !== null && b.hash !== stored) {
            cursor = await this.reorg(cursor, head, result);
            continue;
          }
          this.opts.log.warn(
            { chain: this.chain, mode: this.mode, head: head.toString(), cursor: cursor.number.toString() },
            'rpc head is behind the watcher; waiting',
          );
          result.lagging = true;
          return result;
        }
        if (head === cursor.number) {
          if (result.scanned > 0) return result; // caught up; the tip was just fetched and linked
          // Nothing new; make sure the tip itself was not replaced.
          const b = await this.block(head, false);
          if (b.hash !== cursor.hash) {
            cursor = await this.reorg(cursor, head, result);
            continue;
          }
          return result;
        }
        if (result.scanned >= this.maxBlocksPerTick) {
          result.behind = true;
          return result;
        }
        const to = min(
          head,
          cursor.number + BigInt(Math.min(this.blocksPerBatch, this.maxBlocksPerTick - result.scanned)),
        );
        const scan = await this.scan(cursor, to);
        if (scan === 'reorg') {
          cursor = await this.reorg(cursor, cursor.number, result);
          continue;
        }
        result.scanned += Number(to - cursor.number);
        result.deposits += scan.deposits;
        cursor = scan.cursor;
        failures = 0;
      } catch (err) {
        if ((await this.afterFailure(err, failures++, this.opts.rpc, this.opts)) === 'yield') return result;
      }
    }
  }

  /** Scans blocks cursor+1..to; records deposits, then advances the cursor. 'reorg' when the first block does not build on the cursor. */
  private async scan(cursor: Cursor, to: bigint): Promise<{ cursor: Cursor; deposits: number } | 'reorg'> {
    const from = cursor.number + 1n;
    const full = this.native !== null;
    const [blocks, logs] = await Promise.all([this.blocks(from, to, full), this.logs(from, to)]);
    if (blocks[0]!.parentHash !== cursor.hash) return 'reorg';
    for (let i = 1; i < blocks.length; i++) {
      if (blocks[i]!.parentHash !== blocks[i - 1]!.hash)
        throw new InconsistentChainError(`block ${from + BigInt(i)} does not build on the block before it`);
    }
    const byNumber = new Map(blocks.map((b) => [BigInt(b.number), b] as const));
    const logsByBlock = new Map<string, RpcLog[]>();
    for (const l of logs) {
      if (l.removed) throw new InconsistentChainError(`removed log in ${l.blockHash}`);
      const b = byNumber.get(BigInt(l.blockNumber));
      if (!b || b.hash !== l.blockHash)
        throw new InconsistentChainError(`log for unknown block ${l.blockHash} at ${BigInt(l.blockNumber)}`);
      const list = logsByBlock.get(b.hash) ?? [];
      list.push(l);
      logsByBlock.set(b.hash, list);
    }
    // A node that lacked a block may have answered the range without its logs: check each block's bloom.
    for (const b of blocks) {
      if (!logsByBlock.has(b.hash) && this.bloomSaysTransfer(b.logsBloom)) {
        const own = await this.opts.rpc.request<RpcLog[]>('eth_getLogs', [
          { blockHash: b.hash, address: [...this.tokensByContract.keys()], topics: [TRANSFER_TOPIC] },
        ]);
        if (own.some((l) => l.blockHash !== b.hash || l.removed))
          throw new InconsistentChainError(`logs of ${b.hash} name another block`);
        if (own.length > 0) logsByBlock.set(b.hash, own);
      }
    }

    const candidates = new Set<string>();
    const transfers: Array<{
      to: string;
      token: TokenConfig;
      txHash: string;
      index: number;
      amount: bigint;
      from: string;
      block: RpcBlock;
    }> = [];
    for (const b of blocks) {
      for (const l of logsByBlock.get(b.hash) ?? []) {
        const token = this.tokensByContract.get(l.address.toLowerCase());
        if (!token || l.topics.length !== 3 || l.topics[0] !== TRANSFER_TOPIC || l.data.length !== 66) continue;
        const amount = BigInt(l.data);
        if (amount === 0n) continue;
        const to = topicAddress(l.topics[2]!);
        candidates.add(to);
        transfers.push({
          to,
          token,
          txHash: l.transactionHash,
          index: Number(BigInt(l.logIndex)),
          amount,
          from: topicAddress(l.topics[1]!),
          block: b,
        });
      }
      if (!this.native) continue;
      for (const tx of b.transactions) {
        if (typeof tx === 'string' || !tx.to) continue;
        const amount = BigInt(tx.value);
        if (amount === 0n) continue;
        const to = tx.to.toLowerCase();
        candidates.add(to);
        transfers.push({
          to,
          token: this.native,
          txHash: tx.hash,
          index: NATIVE_TRANSFER_INDEX,
          amount,
          from: tx.from.toLowerCase(),
          block: b,
        });
      }
    }

    const watched =
      candidates.size > 0
        ? await this.opts.sink.watchedAddresses(this.mode, this.chain, [...candidates])
        : new Map<string, string>();
    const matched = transfers.filter((t) => watched.has(t.to));
    const accepted = await this.dropFailedNative(matched);
    const observations: DepositObservation[] = accepted.map((t) => ({
      chain: this.chain,
      address: watched.get(t.to)!,
      token: t.token.id,
      txHash: t.txHash,
      index: t.index,
      amount: t.amount,
      from: t.from,
      blockNumber: BigInt(t.block.number),
      blockHash: t.block.hash,
      blockTime: new Date(Number(BigInt(t.block.timestamp)) * 1000),
    }));
    if (observations.length > 0) await this.opts.sink.recordDeposits(this.mode, observations);
    const last = blocks[blocks.length - 1]!;
    const next = { number: BigInt(last.number), hash: last.hash };
    await this.advance(blocks, cursor, next);
    this.opts.metrics?.chainBlocks.inc({ chain: this.chain }, blocks.length);
    await this.opts.sink.headAdvanced(this.mode, this.chain, next.number);
    return { cursor: next, deposits: observations.length };
  }

  private bloomSaysTransfer(bloom: Hex): boolean {
    if (this.tokensByContract.size === 0 || !bloomMayContain(bloom, TRANSFER_TOPIC)) return false;
    for (const c of this.tokensByContract.keys()) if (bloomMayContain(bloom, c as Hex)) return true;
    return false;
  }

  /**
   * A transaction's value reaches its recipient only if it succeeded. A call to an address without code always
   * does; only a deposit address whose forwarder a sweep already deployed can make it revert, so only those (rare)
   * transfers cost a receipt lookup.
   */
  private async dropFailedNative<T extends { to: string; index: number; txHash: string; block: RpcBlock }>(
    transfers: T[],
  ): Promise<T[]> {
    const native = transfers.filter((t) => t.index === NATIVE_TRANSFER_INDEX);
    if (native.length === 0) return transfers;
    const deployed = new Set(
      (
        await this.opts.db
          .selectFrom('evm_sweep_items as i')
          .innerJoin('evm_sweeps as s', 's.id', 'i.sweep_id')
          .select('i.address')
          .where('s.mode', '=', this.mode)
          .where('s.chain', '=', this.chain)
          .where('s.status', '=', 'confirmed')
          .where('i.address', 'in', [...new Set(native.map((t) => t.to))])
          .execute()
      ).map((r) => r.address),
    );
    const failed = new Set<string>();
    for (const t of native) {
      if (!deployed.has(t.to)) continue;
      const receipt = await this.opts.rpc.request<RpcReceipt | null>('eth_getTransactionReceipt', [t.txHash]);
      if (!receipt || receipt.blockHash !== t.block.hash)
        throw new InconsistentChainError(`no receipt for ${t.txHash} in ${t.block.hash}`);
      if (BigInt(receipt.status) !== 1n) failed.add(t.txHash);
    }
    return transfers.filter((t) => t.index !== NATIVE_TRANSFER_INDEX || !failed.has(t.txHash));
  }

  private async block(n: bigint, full: boolean): Promise<RpcBlock> {
    const b = await this.opts.rpc.request<RpcBlock | null>('eth_getBlockByNumber', [hexOf(n), full]);
    if (!b || !b.hash) throw new InconsistentChainError(`block ${n} is missing`);
    if (BigInt(b.number) !== n) throw new InconsistentChainError(`asked for block ${n}, got ${BigInt(b.number)}`);
    return b;
  }

  private async blocks(from: bigint, to: bigint, full: boolean): Promise<RpcBlock[]> {
    const numbers: bigint[] = [];
    for (let n = from; n <= to; n++) numbers.push(n);
    const out: RpcBlock[] = new Array(numbers.length);
    let next = 0;
    const worker = async () => {
      while (next < numbers.length) {
        const i = next++;
        out[i] = await this.block(numbers[i]!, full);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, numbers.length) }, worker));
    return out;
  }

  private async logs(from: bigint, to: bigint): Promise<RpcLog[]> {
    if (this.tokensByContract.size === 0) return [];
    return this.opts.rpc.request<RpcLog[]>('eth_getLogs', [
      {
        fromBlock: hexOf(from),
        toBlock: hexOf(to),
        address: [...this.tokensByContract.keys()],
        topics: [TRANSFER_TOPIC],
      },
    ]);
  }

  /**
   * Walks back from `height` (≤ cursor) to the highest block whose stored hash the node still has, tells the sink
   * that everything above it left the chain, and moves the cursor there. The sink is told first: if the process
   * dies before the cursor moves, the next tick finds the same reorg again.
   */
  private async reorg(cursor: Cursor, height: bigint, result: TickResult): Promise<Cursor> {
    let h = min(height, cursor.number);
    let ancestor: Cursor | null = null;
    while (ancestor === null) {
      if (h < 0n) throw new Error(`${this.chain}: no common ancestor with the stored chain (wrong network?)`);
      const stored = await this.storedHash(h);
      const b = await this.block(h, false);
      if (stored === null) {
        this.opts.log.error(
          { chain: this.chain, mode: this.mode, height: h.toString() },
          "reorg deeper than the stored blocks (finality depth); resuming from the node's chain",
        );
        ancestor = { number: h, hash: b.hash };
      } else if (b.hash === stored) {
        ancestor = { number: h, hash: stored };
      } else {
        h--;
      }
    }
    // The node's chain still contains our tip, yet it answered as if it did not: inconsistent answers, not a reorg.
    if (ancestor.number === cursor.number && ancestor.hash === cursor.hash)
      throw new InconsistentChainError(`block ${cursor.number} is both kept and replaced`);
    const fromBlock = ancestor.number + 1n;
    this.opts.log.warn(
      { chain: this.chain, mode: this.mode, from: fromBlock.toString(), cursor: cursor.number.toString() },
      'chain reorganization',
    );
    await this.opts.sink.blocksRemoved(this.mode, this.chain, fromBlock);
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursor(tx, cursor, ancestor);
      await this.forgetBlocks(tx, '>=', fromBlock);
    });
    result.reorgFrom = result.reorgFrom === null || fromBlock < result.reorgFrom ? fromBlock : result.reorgFrom;
    return ancestor;
  }

  /** First start: the cursor is the block before `startBlock` (default the head), stored with its hash. */
  private async initCursor(head: bigint): Promise<Cursor> {
    const start = this.opts.startBlock ?? head;
    const at = start > 0n ? start - 1n : 0n;
    const b = await this.block(at, false);
    const cursor = { number: at, hash: b.hash };
    await withTx(this.opts.db, async (tx) => {
      await tx
        .insertInto('evm_cursors')
        .values({ mode: this.mode, chain: this.chain, block_number: cursor.number, block_hash: cursor.hash })
        .onConflict((oc) => oc.columns(['mode', 'chain']).doNothing())
        .execute();
      await tx
        .insertInto('evm_blocks')
        .values({ mode: this.mode, chain: this.chain, number: cursor.number, hash: b.hash, parent_hash: b.parentHash })
        .onConflict((oc) => oc.columns(['mode', 'chain', 'number']).doNothing())
        .execute();
    });
    // Another process may have initialised it first; the stored one wins.
    return (await this.cursor())!;
  }

  private async storedHash(n: bigint): Promise<string | null> {
    const row = await this.opts.db
      .selectFrom('evm_blocks')
      .select('hash')
      .where(this.onNetwork)
      .where('number', '=', n)
      .executeTakeFirst();
    return row?.hash ?? null;
  }

  /** Drops the stored hashes of this network's blocks numbered `op` `number` (reorged away, or past finality). */
  private async forgetBlocks(tx: Tx, op: '>=' | '<', number: bigint): Promise<void> {
    await tx.deleteFrom('evm_blocks').where(this.onNetwork).where('number', op, number).execute();
  }

  /**
   * Stores the scanned blocks' hashes, moves the cursor from `prev` to `next` and prunes hashes below the finality
   * depth, atomically. The move is a compare-and-set: if another worker process moved the cursor meanwhile, nothing
   * is written and this tick ends (that process owns the progress; our deposits were recorded idempotently).
   */
  private async advance(blocks: RpcBlock[], prev: Cursor, next: Cursor): Promise<void> {
    const keepFrom = next.number - BigInt(this.network.finalityConfirmations);
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursor(tx, prev, next);
      await tx
        .insertInto('evm_blocks')
        .values(
          blocks.map((b) => ({
            mode: this.mode,
            chain: this.chain,
            number: BigInt(b.number),
            hash: b.hash,
            parent_hash: b.parentHash,
          })),
        )
        .onConflict((oc) =>
          oc
            .columns(['mode', 'chain', 'number'])
            .doUpdateSet((eb) => ({ hash: eb.ref('excluded.hash'), parent_hash: eb.ref('excluded.parent_hash') })),
        )
        .execute();
      await this.forgetBlocks(tx, '<', keepFrom);
    });
  }

  private async moveCursor(tx: Tx, prev: Cursor, next: Cursor): Promise<void> {
    const at = (c: Cursor) => ({ block_number: c.number, block_hash: c.hash });
    await this.moveCursorRow(tx, 'evm_cursors', at(prev), at(next));
  }
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
