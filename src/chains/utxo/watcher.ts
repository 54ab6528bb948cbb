/**
 * The UTXO deposit watcher of one Bitcoin or Litecoin network in one mode (NBXplorer's way, without its per-address
 * index): full blocks from a stored cursor, plus the mempool.
 *
 * Each tick:
 *   1. `getrawmempool` (one call): the mempool's transaction ids, taken BEFORE the blocks are read.
 *   2. `getbestblockhash`, then from the cursor: `getblockheader(cursor)` (is it still on the best chain, and what
 *      follows it) and `getblock(next, 2)` per new block, each block naming the next. So a block costs ONE call
 *      whatever the number of open addresses, plus ONE `DepositSink.watchedAddresses` lookup for the P2WPKH outputs
 *      it holds. Deposits are recorded with their block, coins Kasse holds (deposits and the hot wallet's) are
 *      stored for sweeps and refunds, and the cursor advances only after both (a crash rescans; both are idempotent).
 *   3. Mempool transactions not examined before are fetched in ONE batched request; outputs to deposit addresses are
 *      reported with no block (`detected` at zero confirmations). A reported transaction that is in neither the
 *      mempool snapshot nor any block read since (the blocks were read after the snapshot, so one mined meanwhile
 *      is in them) was replaced (RBF), evicted or expired: its deposits are dropped (`orphaned`, a credit reversed).
 *
 * A reorg shows as a cursor block the node no longer has on its best chain (`confirmations: -1`): the watcher walks
 * back through the stored hashes to the highest block still on it, tells the sink (`blocksRemoved`), forgets the
 * coins above it and rescans. Transactions of the removed blocks return to the node's mempool and are reported again
 * from there until a block holds them. Between ticks, while a coin choice waits, the mempool is looked at every
 * second; a look that finds the best block moved runs the tick instead, so a reorg is acted on by the first pass
 * that sees it.
 */
import type { Clock } from '../../core/clock.ts';
import { withTx, type Tx } from '../../db/index.ts';
import { Loop } from '../../core/loop.ts';
import { PollingWatcher, type WatcherBasics } from '../loops.ts';
import type { DepositObservation } from '../ports.ts';
import type { TokenConfig } from '../types.ts';
import { addressOfKeyHash } from './address.ts';
import type { UtxoParams } from './params.ts';
import { RPC_CODES, satoshis, UtxoRpcError, type UtxoRpc } from './rpc.ts';

export interface UtxoWatcherOptions extends WatcherBasics {
  clock: Clock;
  params: UtxoParams;
  rpc: UtxoRpc;
  /** Addresses of Kasse's own that are not deposit addresses (the hot wallet): their coins are stored too. */
  ownAddresses: string[];
  /** First height scanned when no cursor is stored; default: the tip at first start. */
  startHeight?: number | null;
  /** Blocks scanned per tick at most (the loop runs again at once when behind). Default 500. */
  maxBlocksPerTick?: number;
  /** Mempool transactions fetched per batched request. Default 500. */
  mempoolBatch?: number;
  /**
   * While a coin choice on the network waits for its money, the mempool is also looked at this often between ticks
   * (one `getrawmempool`, and the new transactions in one batch). Default 1000; 0: only with the ticks.
   */
  mempoolPollMs?: number;
  /** Told of each block read and of blocks a reorg removed, in the cursor's transaction (the sender follows by it). */
  blocks?: BlockListener;
}

/** Who learns of the watcher's blocks: the sender, which follows its transactions by them. */
export interface BlockListener {
  blockConnected(tx: Tx, height: number, txids: string[]): Promise<void>;
  blocksDisconnected(tx: Tx, height: number): Promise<void>;
}

export interface UtxoTickResult {
  tip: number | null;
  scanned: number;
  /** Deposits recorded from blocks and from the mempool. */
  deposits: number;
  mempoolDeposits: number;
  /** Transfers dropped because their transaction left the mempool without a block. */
  dropped: number;
  reorgFrom: number | null;
  behind: boolean;
}

interface Cursor {
  height: number;
  hash: string;
}

interface RpcOutput {
  value: string;
  n: number;
  scriptPubKey: { hex: string };
}

interface RpcTx {
  txid: string;
  vout: RpcOutput[];
}

interface RpcHeader {
  hash: string;
  height: number;
  confirmations: number;
  time: number;
  previousblockhash?: string;
  nextblockhash?: string;
}

interface RpcBlock extends RpcHeader {
  tx: RpcTx[];
}

/** One output paying an address Kasse holds. */
interface Paid {
  txid: string;
  vout: number;
  address: string;
  amount: bigint;
}

export class UtxoWatcher extends PollingWatcher<UtxoTickResult> {
  private readonly coin: TokenConfig;
  private readonly own: Set<string>;
  private readonly maxBlocks: number;
  private readonly mempoolBatch: number;
  /** Mempool transactions already examined (pruned to the mempool each poll; cleared by a reorg). */
  private examined = new Set<string>();
  private readonly mempoolPollMs: number;
  private mempoolLoop: Loop | null = null;
  /** The pass running now (a tick or a mempool look): one at a time. */
  private passing: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: UtxoWatcherOptions) {
    super('utxo', opts);
    const coin = opts.network.tokens.find((t) => t.kind === 'native' || t.kind === 'utxo');
    if (!coin) throw new Error(`${this.chain}: a UTXO network needs its coin (kind native) among its tokens`);
    this.coin = coin;
    this.own = new Set(opts.ownAddresses.map((a) => a.toLowerCase()));
    this.maxBlocks = Math.max(1, opts.maxBlocksPerTick ?? 500);
    this.mempoolBatch = Math.max(1, opts.mempoolBatch ?? 500);
    this.mempoolPollMs = opts.mempoolPollMs ?? 1000;
  }

  override start(): this {
    super.start();
    if (this.mempoolPollMs > 0 && !this.mempoolLoop)
      this.mempoolLoop = new Loop(
        `utxo-mempool:${this.mode}:${this.chain}`,
        this.mempoolPollMs,
        () => this.lookAtMempool(),
        this.opts.log,
      ).start();
    return this;
  }

  override async stop(): Promise<void> {
    await this.mempoolLoop?.stop();
    this.mempoolLoop = null;
    await super.stop();
  }

  /**
   * Between ticks, while a coin choice on the network waits for its money: when the node's best block is still the
   * cursor, reports the new mempool transactions' deposits (`getbestblockhash`, `getrawmempool`, the new ones in one
   * batch); nothing is judged dropped here. When the best block moved (a new block, or a reorg putting transactions
   * back into the mempool), the whole tick runs now instead, so blocks are followed, and removed ones acted on, in
   * this pass. Answers the mempool deposits reported, or null when no coin choice waits (nothing asked).
   */
  async lookAtMempool(): Promise<number | null> {
    const look = await this.serial(async () => {
      if (!(await this.opts.sink.depositsOpen(this.mode, this.chain))) return null;
      const cursor = await this.cursor();
      if (cursor && (await this.opts.rpc.call<string>('getbestblockhash')) !== cursor.hash) return 'blocks' as const;
      const result = { deposits: 0, mempoolDeposits: 0, dropped: 0 };
      const mempool = new Set(await this.opts.rpc.call<string[]>('getrawmempool', [false]));
      await this.pollMempool(mempool, null, result);
      return result.mempoolDeposits;
    });
    return look === 'blocks' ? (await this.tick()).mempoolDeposits : look;
  }

  /** Runs `pass` after the one running now. */
  private serial<T>(pass: () => Promise<T>): Promise<T> {
    const run = this.passing.then(pass, pass);
    this.passing = run.catch(() => {});
    return run;
  }

  async cursor(): Promise<Cursor | null> {
    const row = await this.cursorRow('utxo_cursors');
    return row ? { height: Number(row.height), hash: row.hash } : null;
  }

  protected run(): Promise<UtxoTickResult> {
    return this.serial(() => this.pass());
  }

  private async pass(): Promise<UtxoTickResult> {
    const result: UtxoTickResult = {
      tip: null,
      scanned: 0,
      deposits: 0,
      mempoolDeposits: 0,
      dropped: 0,
      reorgFrom: null,
      behind: false,
    };
    const mempool = new Set(await this.opts.rpc.call<string[]>('getrawmempool', [false]));
    const inBlocks = new Set<string>();
    try {
      await this.scanBlocks(result, inBlocks);
    } catch (err) {
      if (this.yieldsTo(err)) return result;
      throw err;
    }
    if (!result.behind) await this.pollMempool(mempool, inBlocks, result);
    return result;
  }

  private async scanBlocks(result: UtxoTickResult, inBlocks: Set<string>): Promise<void> {
    const best = await this.opts.rpc.call<string>('getbestblockhash');
    let cursor = (await this.cursor()) ?? (await this.initCursor(best));
    if (cursor.hash === best) {
      result.tip = cursor.height;
      return;
    }
    const header = await this.opts.rpc.call<RpcHeader>('getblockheader', [cursor.hash, true]);
    if (header.confirmations < 0) {
      cursor = await this.reorg(cursor, result);
      return this.scanBlocks(result, inBlocks);
    }
    let next = header.nextblockhash;
    while (next) {
      if (result.scanned >= this.maxBlocks) {
        result.behind = true;
        break;
      }
      const block = await this.opts.rpc.call<RpcBlock>('getblock', [next, 2]);
      // Replaced between the two answers: the next tick finds the reorg from the cursor.
      if (block.confirmations < 0 || block.previousblockhash !== cursor.hash) break;
      result.deposits += await this.record(block, inBlocks);
      cursor = await this.advance(cursor, block);
      result.scanned++;
      next = block.nextblockhash;
    }
    result.tip = cursor.height;
    if (result.scanned > 0) {
      this.opts.metrics?.chainBlocks.inc({ chain: this.chain }, result.scanned);
      await this.opts.sink.headAdvanced(this.mode, this.chain, BigInt(cursor.height));
    }
  }

  /** Records the block's deposits and Kasse's coins in it; returns the number of deposits. */
  private async record(block: RpcBlock, inBlocks: Set<string>): Promise<number> {
    const paid = this.paidOutputs(block.tx);
    if (paid.length === 0) return 0;
    const watched = await this.opts.sink.watchedAddresses(this.mode, this.chain, [
      ...new Set(paid.map((p) => p.address)),
    ]);
    const deposits = paid.filter((p) => watched.has(p.address));
    const coins = paid.filter((p) => watched.has(p.address) || this.own.has(p.address));
    if (deposits.length > 0) {
      await this.opts.sink.recordDeposits(
        this.mode,
        deposits.map((p) => this.observation(p, watched.get(p.address)!, block)),
      );
      for (const d of deposits) inBlocks.add(d.txid);
      await this.opts.db
        .deleteFrom('utxo_mempool')
        .where(this.onNetwork)
        .where('txid', 'in', [...new Set(deposits.map((d) => d.txid))])
        .execute();
    }
    if (coins.length > 0) {
      await this.opts.db
        .insertInto('utxo_coins')
        .values(
          coins.map((c) => ({
            mode: this.mode,
            chain: this.chain,
            txid: c.txid,
            vout: c.vout,
            address: c.address,
            amount: c.amount,
            height: block.height,
          })),
        )
        .onConflict((oc) =>
          oc.columns(['mode', 'chain', 'txid', 'vout']).doUpdateSet({ height: (eb) => eb.ref('excluded.height') }),
        )
        .execute();
    }
    return deposits.length;
  }

  /** Outputs of `txs` that pay a P2WPKH address (the only kind Kasse issues and holds). */
  private paidOutputs(txs: RpcTx[]): Paid[] {
    const out: Paid[] = [];
    for (const tx of txs) {
      for (const o of tx.vout) {
        const hex = o.scriptPubKey?.hex;
        if (!hex || hex.length !== 44 || !hex.startsWith('0014')) continue;
        const amount = satoshis(o.value);
        if (amount <= 0n) continue;
        out.push({
          txid: tx.txid,
          vout: o.n,
          address: addressOfKeyHash(Buffer.from(hex.slice(4), 'hex'), this.opts.params),
          amount,
        });
      }
    }
    return out;
  }

  private observation(p: Paid, address: string, block: RpcHeader | null): DepositObservation {
    return {
      chain: this.chain,
      address,
      token: this.coin.id,
      txHash: p.txid,
      index: p.vout,
      amount: p.amount,
      from: null,
      blockNumber: block ? BigInt(block.height) : null,
      blockHash: block?.hash ?? null,
      blockTime: block ? new Date(block.time * 1000) : null,
    };
  }

  /**
   * The mempool part of a tick: new transactions' deposits are reported without a block; reported ones that left
   * the mempool (snapshot taken before the blocks were read) and are in no block read since are dropped. Without
   * `inBlocks` (a look between ticks), nothing is dropped.
   */
  private async pollMempool(
    mempool: Set<string>,
    inBlocks: Set<string> | null,
    result: Pick<UtxoTickResult, 'deposits' | 'mempoolDeposits' | 'dropped'>,
  ): Promise<void> {
    const fresh = [...mempool].filter((txid) => !this.examined.has(txid) && !inBlocks?.has(txid));
    const paid: Paid[] = [];
    for (let i = 0; i < fresh.length; i += this.mempoolBatch) {
      const slice = fresh.slice(i, i + this.mempoolBatch);
      const answers = await this.opts.rpc.batch<RpcTx>(
        'getrawtransaction',
        slice.map((txid) => [txid, true]),
      );
      answers.forEach((a, j) => {
        if (a instanceof UtxoRpcError) {
          // Left the mempool since the snapshot (mined or replaced): judged on the next poll.
          if (a.code !== RPC_CODES.INVALID_ADDRESS_OR_KEY) throw a;
          mempool.delete(slice[j]!);
          return;
        }
        paid.push(...this.paidOutputs([a]));
      });
    }
    const watched =
      paid.length > 0
        ? await this.opts.sink.watchedAddresses(this.mode, this.chain, [...new Set(paid.map((p) => p.address))])
        : new Map<string, string>();
    const deposits = paid.filter((p) => watched.has(p.address));
    if (deposits.length > 0) {
      const outputs = new Map<string, number[]>();
      for (const d of deposits) outputs.set(d.txid, [...(outputs.get(d.txid) ?? []), d.vout]);
      const now = this.opts.clock.now();
      // Stored first: a crash after it reports them again (idempotent); a crash before reports them next time.
      await this.opts.db
        .insertInto('utxo_mempool')
        .values(
          [...outputs].map(([txid, vouts]) => ({
            mode: this.mode,
            chain: this.chain,
            txid,
            outputs: vouts,
            seen_at: now,
          })),
        )
        .onConflict((oc) => oc.columns(['mode', 'chain', 'txid']).doNothing())
        .execute();
      await this.opts.sink.recordDeposits(
        this.mode,
        deposits.map((p) => this.observation(p, watched.get(p.address)!, null)),
      );
      result.mempoolDeposits += deposits.length;
      result.deposits += deposits.length;
    }
    for (const txid of fresh) if (mempool.has(txid)) this.examined.add(txid);
    for (const txid of this.examined) if (!mempool.has(txid)) this.examined.delete(txid);
    if (!inBlocks) return;

    const reported = await this.opts.db
      .selectFrom('utxo_mempool')
      .select(['txid', 'outputs'])
      .where(this.onNetwork)
      .execute();
    const gone = reported.filter((r) => !mempool.has(r.txid) && !inBlocks.has(r.txid));
    if (gone.length > 0) {
      this.opts.log.info(
        { chain: this.chain, mode: this.mode, txids: gone.map((g) => g.txid) },
        'transactions left the mempool without a block (replaced or evicted)',
      );
      await this.opts.sink.depositsDropped(
        this.mode,
        this.chain,
        gone.flatMap((g) => g.outputs.map((index) => ({ txHash: g.txid, index }))),
      );
      await this.opts.db
        .deleteFrom('utxo_mempool')
        .where(this.onNetwork)
        .where(
          'txid',
          'in',
          gone.map((g) => g.txid),
        )
        .execute();
      result.dropped += gone.reduce((n, g) => n + g.outputs.length, 0);
    }
  }

  /**
   * Walks back from the cursor through the stored hashes to the highest block still on the node's best chain,
   * tells the sink that everything above it left the chain, forgets the coins there and moves the cursor back.
   */
  private async reorg(cursor: Cursor, result: UtxoTickResult): Promise<Cursor> {
    const stored = await this.opts.db
      .selectFrom('utxo_blocks')
      .select(['height', 'hash'])
      .where(this.onNetwork)
      .where('height', '<', BigInt(cursor.height))
      .orderBy('height', 'desc')
      .execute();
    let ancestor: Cursor | null = null;
    for (const b of stored) {
      const h = await this.opts.rpc.call<RpcHeader>('getblockheader', [b.hash, true]);
      if (h.confirmations >= 0) {
        ancestor = { height: Number(b.height), hash: b.hash };
        break;
      }
    }
    if (!ancestor) {
      // Deeper than the stored hashes (the finality depth): resume from the node's block at the lowest stored height.
      const height = stored.length > 0 ? Number(stored[stored.length - 1]!.height) - 1 : cursor.height - 1;
      const hash = await this.opts.rpc.call<string>('getblockhash', [Math.max(0, height)]);
      this.opts.log.error(
        { chain: this.chain, mode: this.mode, height },
        "reorg deeper than the stored blocks (finality depth); resuming from the node's chain",
      );
      ancestor = { height: Math.max(0, height), hash };
    }
    const from = ancestor.height + 1;
    this.opts.log.warn({ chain: this.chain, mode: this.mode, from, cursor: cursor.height }, 'chain reorganization');
    await this.opts.sink.blocksRemoved(this.mode, this.chain, BigInt(from));
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursor(tx, cursor, ancestor);
      await this.opts.blocks?.blocksDisconnected(tx, from);
      await tx.deleteFrom('utxo_blocks').where(this.onNetwork).where('height', '>=', BigInt(from)).execute();
      await tx.deleteFrom('utxo_coins').where(this.onNetwork).where('height', '>=', BigInt(from)).execute();
    });
    // Transactions of the removed blocks are back in the mempool: examine them again.
    this.examined.clear();
    result.reorgFrom = result.reorgFrom === null ? from : Math.min(result.reorgFrom, from);
    return ancestor;
  }

  private async initCursor(best: string): Promise<Cursor> {
    const start = this.opts.startHeight;
    let hash = best;
    let height: number;
    if (start === null || start === undefined) {
      height = (await this.opts.rpc.call<RpcHeader>('getblockheader', [best, true])).height;
    } else {
      height = Math.max(0, start - 1);
      hash = await this.opts.rpc.call<string>('getblockhash', [height]);
    }
    await withTx(this.opts.db, async (tx) => {
      await tx
        .insertInto('utxo_cursors')
        .values({ mode: this.mode, chain: this.chain, height, hash })
        .onConflict((oc) => oc.columns(['mode', 'chain']).doNothing())
        .execute();
      await tx
        .insertInto('utxo_blocks')
        .values({ mode: this.mode, chain: this.chain, height, hash })
        .onConflict((oc) => oc.columns(['mode', 'chain', 'height']).doNothing())
        .execute();
    });
    return (await this.cursor())!;
  }

  /** Stores the block's hash, moves the cursor onto it (compare-and-set) and prunes hashes below the finality depth. */
  private async advance(prev: Cursor, block: RpcBlock): Promise<Cursor> {
    const next = { height: block.height, hash: block.hash };
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursor(tx, prev, next);
      await this.opts.blocks?.blockConnected(
        tx,
        next.height,
        block.tx.map((t) => t.txid),
      );
      await tx
        .insertInto('utxo_blocks')
        .values({ mode: this.mode, chain: this.chain, height: next.height, hash: next.hash })
        .onConflict((oc) =>
          oc.columns(['mode', 'chain', 'height']).doUpdateSet({ hash: (eb) => eb.ref('excluded.hash') }),
        )
        .execute();
      await tx
        .deleteFrom('utxo_blocks')
        .where(this.onNetwork)
        .where('height', '<', BigInt(next.height - this.network.finalityConfirmations))
        .execute();
    });
    return next;
  }

  private async moveCursor(tx: Tx, prev: Cursor, next: Cursor): Promise<void> {
    const at = (c: Cursor) => ({ height: BigInt(c.height), hash: c.hash });
    await this.moveCursorRow(tx, 'utxo_cursors', at(prev), at(next));
  }
}
