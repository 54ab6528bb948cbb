/**
 * The Solana deposit watcher of one network in one mode: it reads every confirmed block after a cursor stored in
 * PostgreSQL, as Solana's exchange integration guide recommends, never an address's history. A polling tick makes ONE
 * `getBlocksWithLimit(cursor + 1, n, confirmed)` (the slots after the cursor that have a block), ONE `getBlock(slot,
 * confirmed, transactionDetails: "accounts", rewards: false)` per block, and ONE `getBlocksWithLimit(final_slot + 1,
 * n, finalized)` (the finality check, when deposits await it or blocks piled up): (blocks + 2) calls whatever the
 * number of open deposit addresses, plus one batched `DepositSink.watchedAddresses` lookup for the recipients seen.
 * On the push path (slot-news.ts) a tick reads the announced slot's block at once when it builds on the cursor, and
 * checks finality only when the announced root moved: about one call per slot. Transfers are balance changes: a key
 * whose lamports rose in a successful transaction received SOL, an SPL token account of a configured mint whose
 * amount rose gave its owner tokens (blocks.ts); a recipient counts only with exactly the sink's spelling.
 *
 * No slot is skipped unseen: each block must name the previous block read (slot and blockhash) as its parent, so a
 * node that left out a block, or lags, is caught (retried on the next URL). A block whose parent is not the cursor is
 * a fork: the watcher walks back through the blocks it stored to the newest one the node still has, tells the sink
 * (`blocksRemoved`: those deposits become orphaned and what they paid is reversed) and reads on from there. The
 * finality check compares the finalized chain's slots with the stored ones: those that match become final; a
 * stored block the finalized chain left out is a fork found late and handled the same way.
 *
 * Finality is Solana's commitment, reported through `DepositSink.depositsProgressed`, never a depth: a deposit is
 * recorded with its slot as block number and 1 confirmation when its block is read at `confirmed`, and becomes final
 * with `finality_confirmations` (32) when the finality check sees its slot finalized (the blocks stored keep their
 * deposits' signatures for that). A confirmation tier of 1 therefore pays at `confirmed`, a tier of 32 at
 * `finalized` (docs/solana.md). No database transaction spans an RPC call; the cursor
 * moves (compare-and-set) only after a batch's deposits are recorded.
 */
import { sql } from 'kysely';
import { withTx, type Tx } from '../../db/index.ts';
import { InconsistentChainError, PollingWatcher, type InconsistencyRetries, type WatcherBasics } from '../loops.ts';
import type { DepositObservation, TransferKey } from '../ports.ts';
import type { TokenConfig } from '../types.ts';
import { SKIPPED_SLOT_CODES, SolanaRpcError, type Commitment, type SolanaRpc } from './rpc.ts';
import { getBlockParams, transfersOf, type RpcBlock } from './blocks.ts';
import { SlotNews } from './slot-news.ts';

export interface SolanaWatcherOptions extends WatcherBasics, InconsistencyRetries {
  rpc: SolanaRpc;
  /** Blocks read per tick at most (a tick that stops short is followed by another at once). Default 1000. */
  maxSlotsPerTick?: number;
  /** Blocks per batch (one getBlocksWithLimit). Default 100. */
  batch?: number;
  /** Parallel getBlock requests. Default 4. */
  fetchConcurrency?: number;
  /** First slot to read when no cursor is stored; default: the confirmed tip at first start. */
  startSlot?: bigint | null;
  /** Read a block with deposits awaiting finality, or this many blocks without, before the finality check. Default 8. */
  finalityEvery?: number;
}

export interface SolanaTickResult {
  /** Newest confirmed slot seen. */
  tip: bigint | null;
  /** Blocks read in this tick. */
  blocks: number;
  deposits: number;
  /** Newest slot known final after this tick. */
  finalSlot: bigint | null;
  /** Lowest slot removed by a fork in this tick. */
  forkFrom: bigint | null;
  behind: boolean;
}

interface StoredBlock {
  slot: bigint;
  blockhash: string;
  deposits: number;
  /** Its deposits as [signature, index]; null for a block stored before they were. */
  transfers: Array<[string, number]> | null;
}

interface Cursor {
  slot: bigint;
  blockhash: string;
  finalSlot: bigint;
  startSlot: bigint;
}

export class SolanaWatcher extends PollingWatcher<SolanaTickResult> {
  private readonly native: TokenConfig | null;
  private readonly mints: Map<string, TokenConfig>;
  private readonly maxSlotsPerTick: number;
  private readonly batch: number;
  private readonly concurrency: number;
  private readonly finalityEvery: number;

  private readonly news: SlotNews;
  /** Blocks read since the last finality check. */
  private sinceFinality = 0;
  /** The announced root of the last finality check on the push path. */
  private checkedRoot = -1n;

  constructor(private readonly opts: SolanaWatcherOptions) {
    // Each notification is recorded and deduplicated by its slot and root (slot-news.ts).
    const news = new SlotNews();
    super('solana', { ...opts, push: opts.push && { ...opts.push, news: (r) => news.hear(r) } });
    this.news = news;
    this.native = opts.network.tokens.find((t) => t.kind === 'native') ?? null;
    this.mints = new Map(
      opts.network.tokens.filter((t) => t.kind === 'spl' && t.contract).map((t) => [t.contract!, t] as const),
    );
    this.maxSlotsPerTick = Math.max(1, opts.maxSlotsPerTick ?? 1000);
    this.batch = Math.max(1, opts.batch ?? 100);
    this.concurrency = Math.max(1, opts.fetchConcurrency ?? 4);
    this.finalityEvery = opts.finalityEvery ?? 8;
  }

  async cursor(): Promise<Cursor | null> {
    const row = await this.cursorRow('solana_cursors');
    return row
      ? {
          slot: BigInt(row.slot),
          blockhash: row.blockhash,
          finalSlot: BigInt(row.final_slot),
          startSlot: BigInt(row.start_slot),
        }
      : null;
  }

  protected async run(): Promise<SolanaTickResult> {
    const result: SolanaTickResult = {
      tip: null,
      blocks: 0,
      deposits: 0,
      finalSlot: null,
      forkFrom: null,
      behind: false,
    };
    let cursor = (await this.cursor()) ?? (await this.initCursor());
    let failures = 0;
    let depositsAwaiting = await this.depositsAwaitingFinality(cursor);
    // What the node announced, trusted while the push channel is live (slot-news.ts).
    const news = this.watchPath === 'push' ? this.news : null;
    for (;;) {
      try {
        const limit = Math.min(this.batch, this.maxSlotsPerTick - result.blocks);
        const { slots, read, listed } = await this.nextSlots(cursor, limit, news);
        if (slots.length > 0) {
          const scan = await this.scan(cursor, slots, read);
          if (scan === 'fork') {
            cursor = await this.fork(cursor, 'confirmed', result);
            continue;
          }
          result.blocks += slots.length;
          result.deposits += scan.deposits;
          if (scan.deposits > 0) depositsAwaiting = true;
          this.sinceFinality += slots.length;
          cursor = scan.cursor;
          result.tip = cursor.slot;
          failures = 0;
        }
        const more = listed && slots.length === limit;
        // Finality can only have moved when the announced root did; without news, every tick that read blocks checks.
        const rootMoved = !news || news.root === null || news.root > this.checkedRoot;
        const due =
          depositsAwaiting || this.sinceFinality >= this.finalityEvery || (!news && !more && this.sinceFinality > 0);
        if (rootMoved && due) {
          if (news?.root != null) this.checkedRoot = news.root;
          const checked = await this.checkFinality(cursor, result);
          this.sinceFinality = 0;
          if (checked === 'fork') {
            cursor = (await this.cursor())!;
            depositsAwaiting = true;
            continue;
          }
          cursor = checked;
          depositsAwaiting = await this.depositsAwaitingFinality(cursor);
        }
        if (more && result.blocks < this.maxSlotsPerTick) continue;
        result.behind = more;
        result.tip ??= cursor.slot;
        result.finalSlot = cursor.finalSlot;
        return result;
      } catch (err) {
        if ((await this.afterFailure(err, failures++, this.opts.rpc, this.opts)) === 'yield') return result;
      }
    }
  }

  /**
   * The slots to read next, up to `limit`: on the push path the announced one (its block already `read`), or none when
   * no slot after the cursor was announced; else those the node lists after the cursor (`listed`).
   */
  private async nextSlots(
    cursor: Cursor,
    limit: number,
    news: SlotNews | null,
  ): Promise<{ slots: bigint[]; read: RpcBlock[] | null; listed: boolean }> {
    if (limit <= 0) return { slots: [], read: null, listed: false };
    const announced = news ? await news.block(this.opts.rpc, cursor) : null;
    if (announced === 'quiet') return { slots: [], read: null, listed: false };
    if (announced) return { slots: [announced.slot], read: [announced.block], listed: false };
    return { slots: await this.producedSlots(cursor.slot + 1n, limit, 'confirmed'), read: null, listed: true };
  }

  private async producedSlots(from: bigint, limit: number, commitment: Commitment): Promise<bigint[]> {
    const r = await this.opts.rpc.request<number[]>('getBlocksWithLimit', [Number(from), limit, { commitment }]);
    return r.map((s) => BigInt(s));
  }

  private async block(slot: bigint, commitment: Commitment, details: 'accounts' | 'none'): Promise<RpcBlock> {
    try {
      return await this.opts.rpc.request<RpcBlock>('getBlock', getBlockParams(slot, commitment, details));
    } catch (err) {
      if (err instanceof SolanaRpcError && err.code !== null && SKIPPED_SLOT_CODES.has(err.code))
        throw new InconsistentChainError(`slot ${slot} was listed with a block, then reported skipped`);
      throw err;
    }
  }

  /**
   * Reads `slots` (produced slots after the cursor, ascending; their blocks when already `read`), records their
   * deposits and moves the cursor.
   */
  private async scan(
    cursor: Cursor,
    slots: bigint[],
    read: RpcBlock[] | null,
  ): Promise<{ cursor: Cursor; deposits: number } | 'fork'> {
    const blocks = read ?? (await this.blocks(slots));
    const first = blocks[0]!;
    if (BigInt(first.parentSlot) !== cursor.slot || first.previousBlockhash !== cursor.blockhash) {
      // A parent above the cursor means a block was left out of the list: the node is inconsistent, not forked.
      if (BigInt(first.parentSlot) > cursor.slot)
        throw new InconsistentChainError(`block ${slots[0]} builds on slot ${first.parentSlot}, which was not listed`);
      return 'fork';
    }
    for (let i = 1; i < blocks.length; i++) {
      if (BigInt(blocks[i]!.parentSlot) !== slots[i - 1] || blocks[i]!.previousBlockhash !== blocks[i - 1]!.blockhash) {
        throw new InconsistentChainError(`block ${slots[i]} does not build on block ${slots[i - 1]}`);
      }
    }
    const found = blocks.map((b) => transfersOf(b.transactions ?? [], this.native, this.mints));
    const candidates = [...new Set(found.flat().map((t) => t.to))];
    const watched =
      candidates.length > 0
        ? await this.opts.sink.watchedAddresses(this.mode, this.chain, candidates)
        : new Map<string, string>();
    const observations: DepositObservation[] = [];
    const perBlock: Array<Array<[string, number]>> = blocks.map(() => []);
    found.forEach((list, i) => {
      const b = blocks[i]!;
      for (const t of list) {
        if (watched.get(t.to) !== t.to) continue;
        perBlock[i]!.push([t.signature, t.index]);
        observations.push({
          chain: this.chain,
          address: t.to,
          token: t.token.id,
          txHash: t.signature,
          index: t.index,
          amount: t.amount,
          from: t.from,
          blockNumber: slots[i]!,
          blockHash: b.blockhash,
          blockTime: b.blockTime === null ? null : new Date(b.blockTime * 1000),
        });
      }
    });
    if (observations.length > 0) {
      await this.opts.sink.recordDeposits(this.mode, observations);
      // In a confirmed block: one confirmation, not final; the finality check reports them final (checkFinality).
      await this.opts.sink.depositsProgressed(
        this.mode,
        this.chain,
        observations.map((o) => ({ txHash: o.txHash, index: o.index, confirmations: 1, final: false })),
      );
    }
    const last = blocks[blocks.length - 1]!;
    const next: Cursor = { ...cursor, slot: slots[slots.length - 1]!, blockhash: last.blockhash };
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursor(tx, cursor, next);
      await tx
        .insertInto('solana_blocks')
        .values(
          blocks.map((b, i) => ({
            mode: this.mode,
            chain: this.chain,
            slot: slots[i]!,
            blockhash: b.blockhash,
            parent_slot: BigInt(b.parentSlot),
            deposits: perBlock[i]!.length,
            transfers: JSON.stringify(perBlock[i]),
          })),
        )
        .onConflict((oc) =>
          oc.columns(['mode', 'chain', 'slot']).doUpdateSet((eb) => ({
            blockhash: eb.ref('excluded.blockhash'),
            parent_slot: eb.ref('excluded.parent_slot'),
            deposits: eb.ref('excluded.deposits'),
            transfers: eb.ref('excluded.transfers'),
          })),
        )
        .execute();
      if (observations.length > 0) {
        const bySlot = new Map<string, bigint>();
        for (const o of observations)
          if (o.blockNumber !== null && (bySlot.get(o.address) ?? -1n) < o.blockNumber)
            bySlot.set(o.address, o.blockNumber);
        for (const [address, slot] of bySlot) {
          await tx
            .updateTable('solana_addresses')
            .set({ last_deposit_slot: sql`greatest(last_deposit_slot, ${slot.toString()}::bigint)` })
            .where(this.onNetwork)
            .where('address', '=', address)
            .execute();
        }
      }
    });
    this.opts.metrics?.chainBlocks.inc({ chain: this.chain }, blocks.length);
    return { cursor: next, deposits: observations.length };
  }

  private async blocks(slots: bigint[]): Promise<RpcBlock[]> {
    const out: RpcBlock[] = new Array(slots.length);
    let next = 0;
    const worker = async () => {
      while (next < slots.length) {
        const i = next++;
        out[i] = await this.block(slots[i]!, 'confirmed', 'accounts');
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, slots.length) }, worker));
    return out;
  }

  /**
   * Compares the finalized chain after `final_slot` with the stored blocks. Matching blocks become final (the
   * cursor's final slot moves, stored blocks below it are pruned); a stored block the finalized chain does not have
   * (or a finalized block that was never read) is a fork: handled as in `fork`, and 'fork' is returned.
   */
  private async checkFinality(cursor: Cursor, result: SolanaTickResult): Promise<Cursor | 'fork'> {
    const stored = await this.stored(cursor.finalSlot);
    const final = await this.producedSlots(cursor.finalSlot + 1n, Math.max(64, stored.length + 64), 'finalized');
    if (final.length === 0) return cursor;
    const finalSet = new Set(final.map(String));
    const top = final[final.length - 1]!;
    let agreed = cursor.finalSlot;
    for (const s of final) {
      if (s > cursor.slot) break;
      if (s > cursor.startSlot && !stored.some((b) => b.slot === s)) {
        this.opts.log.warn(
          { chain: this.chain, mode: this.mode, slot: s.toString() },
          'finalized block was never read at confirmed: fork',
        );
        await this.fork(cursor, 'finalized', result);
        return 'fork';
      }
      agreed = s;
    }
    for (const b of stored) {
      if (b.slot > top) break;
      if (!finalSet.has(String(b.slot))) {
        await this.fork(cursor, 'finalized', result);
        return 'fork';
      }
    }
    if (agreed === cursor.finalSlot) return cursor;
    await this.reportFinal(stored.filter((b) => b.slot <= agreed && b.deposits > 0));
    const next = { ...cursor, finalSlot: agreed };
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursorRow(tx, 'solana_cursors', { final_slot: cursor.finalSlot }, { final_slot: agreed });
      await tx.deleteFrom('solana_blocks').where(this.onNetwork).where('slot', '<', agreed).execute();
    });
    return next;
  }

  /**
   * Tells the sink the deposits of newly finalized blocks are final (confirmations: the network's
   * `finality_confirmations`). A block stored without its transfers (read before they were stored) is read again.
   */
  private async reportFinal(blocks: StoredBlock[]): Promise<void> {
    const keys: TransferKey[] = [];
    for (const b of blocks) {
      const pairs = b.transfers ?? (await this.depositsIn(b.slot));
      keys.push(...pairs.map(([txHash, index]) => ({ txHash, index })));
    }
    if (keys.length === 0) return;
    const confirmations = this.network.finalityConfirmations;
    await this.opts.sink.depositsProgressed(
      this.mode,
      this.chain,
      keys.map((k) => ({ ...k, confirmations, final: true })),
    );
  }

  /** The deposits of a finalized block, read again from the node. */
  private async depositsIn(slot: bigint): Promise<Array<[string, number]>> {
    const found = transfersOf(
      (await this.block(slot, 'finalized', 'accounts')).transactions ?? [],
      this.native,
      this.mints,
    );
    const watched =
      found.length > 0
        ? await this.opts.sink.watchedAddresses(this.mode, this.chain, [...new Set(found.map((t) => t.to))])
        : new Map<string, string>();
    return found.filter((t) => watched.get(t.to) === t.to).map((t) => [t.signature, t.index]);
  }

  private async stored(above: bigint): Promise<StoredBlock[]> {
    const rows = await this.opts.db
      .selectFrom('solana_blocks')
      .select(['slot', 'blockhash', 'deposits', 'transfers'])
      .where(this.onNetwork)
      .where('slot', '>', above)
      .orderBy('slot')
      .execute();
    return rows.map((r) => ({
      slot: BigInt(r.slot),
      blockhash: r.blockhash,
      deposits: r.deposits,
      transfers: r.transfers,
    }));
  }

  private async depositsAwaitingFinality(cursor: Cursor): Promise<boolean> {
    return (await this.stored(cursor.finalSlot)).some((b) => b.deposits > 0);
  }

  /**
   * Walks back from the cursor through the stored blocks to the newest one the node still has at `commitment`
   * (same slot, same blockhash), tells the sink that everything above it left the chain, and moves the cursor there.
   * The sink is told first: a crash before the cursor moves finds the same fork again.
   */
  private async fork(cursor: Cursor, commitment: Commitment, result: SolanaTickResult): Promise<Cursor> {
    const stored = (await this.stored(cursor.finalSlot)).reverse();
    let ancestor: { slot: bigint; blockhash: string } | null = null;
    for (const b of stored) {
      let node: RpcBlock | null = null;
      try {
        node = await this.opts.rpc.request<RpcBlock>('getBlock', [
          Number(b.slot),
          {
            commitment,
            encoding: 'json',
            transactionDetails: 'none',
            rewards: false,
            maxSupportedTransactionVersion: 0,
          },
        ]);
      } catch (err) {
        if (
          !(
            err instanceof SolanaRpcError &&
            err.code !== null &&
            (SKIPPED_SLOT_CODES.has(err.code) || err.code === -32004)
          )
        )
          throw err;
      }
      if (node && node.blockhash === b.blockhash) {
        ancestor = b;
        break;
      }
    }
    if (!ancestor) {
      const final = await this.opts.db
        .selectFrom('solana_blocks')
        .select(['slot', 'blockhash'])
        .where(this.onNetwork)
        .where('slot', '<=', cursor.finalSlot)
        .orderBy('slot', 'desc')
        .executeTakeFirst();
      ancestor = final ? { slot: BigInt(final.slot), blockhash: final.blockhash } : null;
      if (!ancestor)
        throw new Error(
          `${this.chain}: a fork below every block the watcher kept (wrong cluster, or a node far behind)`,
        );
    }
    if (ancestor.slot === cursor.slot)
      throw new InconsistentChainError(`block ${cursor.slot} is both kept and replaced`);
    const fromSlot = ancestor.slot + 1n;
    this.opts.log.warn(
      { chain: this.chain, mode: this.mode, from: fromSlot.toString(), cursor: cursor.slot.toString(), commitment },
      'solana fork: blocks left the chain',
    );
    await this.opts.sink.blocksRemoved(this.mode, this.chain, fromSlot);
    const next: Cursor = { ...cursor, slot: ancestor.slot, blockhash: ancestor.blockhash };
    await withTx(this.opts.db, async (tx) => {
      await this.moveCursor(tx, cursor, next);
      await tx.deleteFrom('solana_blocks').where(this.onNetwork).where('slot', '>=', fromSlot).execute();
    });
    result.forkFrom = result.forkFrom === null || fromSlot < result.forkFrom ? fromSlot : result.forkFrom;
    return next;
  }

  /** First start: the cursor is the block at the configured start slot's predecessor, or the confirmed tip. */
  private async initCursor(): Promise<Cursor> {
    const finalized = BigInt(await this.opts.rpc.request<number>('getSlot', [{ commitment: 'finalized' }]));
    let at: bigint;
    if (this.opts.startSlot != null) {
      const before = this.opts.startSlot > 0n ? this.opts.startSlot - 1n : 0n;
      // The newest block at or before the slot before start_slot.
      const list = await this.opts.rpc.request<number[]>('getBlocks', [
        Number(before > 1000n ? before - 1000n : 0n),
        Number(before),
        { commitment: 'confirmed' },
      ]);
      if (list.length === 0)
        throw new Error(`${this.chain}: no block within 1000 slots before start_slot ${this.opts.startSlot}`);
      at = BigInt(list[list.length - 1]!);
    } else {
      at = BigInt(await this.opts.rpc.request<number>('getSlot', [{ commitment: 'confirmed' }]));
    }
    const b = await this.block(at, 'confirmed', 'none');
    const finalSlot = finalized < at ? finalized : at;
    await withTx(this.opts.db, async (tx) => {
      await tx
        .insertInto('solana_cursors')
        .values({
          mode: this.mode,
          chain: this.chain,
          slot: at,
          blockhash: b.blockhash,
          final_slot: finalSlot,
          start_slot: at,
        })
        .onConflict((oc) => oc.columns(['mode', 'chain']).doNothing())
        .execute();
      await tx
        .insertInto('solana_blocks')
        .values({
          mode: this.mode,
          chain: this.chain,
          slot: at,
          blockhash: b.blockhash,
          parent_slot: BigInt(b.parentSlot),
          deposits: 0,
        })
        .onConflict((oc) => oc.columns(['mode', 'chain', 'slot']).doNothing())
        .execute();
    });
    return (await this.cursor())!;
  }

  private async moveCursor(tx: Tx, prev: Cursor, next: Cursor): Promise<void> {
    const at = (c: Cursor) => ({ slot: c.slot, blockhash: c.blockhash });
    await this.moveCursorRow(tx, 'solana_cursors', at(prev), at(next));
  }
}
