/**
 * What the node's PubSub said last (`slotNotification`: the newest slot and the root). On the push path the watcher
 * reads the announced slot's block straight away instead of listing the slots after its cursor first, lists nothing
 * when no slot after its cursor was announced, and checks finality only when the root moved: about one RPC call per
 * slot (docs/solana.md). What it is told only saves calls: the block read must still build on the cursor.
 */
import { getBlockParams, type RpcBlock } from './blocks.ts';
import type { SolanaRpc } from './rpc.ts';

export class SlotNews {
  /** The newest slot announced; null before the first notification. */
  slot: bigint | null = null;
  /** The root (the newest finalized slot) announced with it; null when the node does not say. */
  root: bigint | null = null;
  /** The announced slot last read straight away (not read again: the slots are listed instead). */
  private tried: bigint | null = null;

  /** Records a notification's `result`; answers its news key for the push channel (push.ts `news`). */
  hear(result: unknown): string | null {
    const o = result as { slot?: unknown; root?: unknown } | null;
    if (!o || typeof o.slot !== 'number') return null;
    this.slot = BigInt(o.slot);
    this.root = typeof o.root === 'number' ? BigInt(o.root) : null;
    return `${o.slot}:${o.root}`;
  }

  /**
   * The announced slot's block when it builds on `cursor`, read with one call and no retry (a block not there yet is
   * no failure); `quiet` when no slot after the cursor was announced; null when the slots are to be listed as when
   * polling (nothing announced yet, the block not there, or blocks in between).
   */
  async block(
    rpc: SolanaRpc,
    cursor: { slot: bigint; blockhash: string },
  ): Promise<{ slot: bigint; block: RpcBlock } | 'quiet' | null> {
    const slot = this.slot;
    if (slot === null) return null;
    if (slot <= cursor.slot) return 'quiet';
    if (slot === this.tried) return null;
    this.tried = slot;
    const [block] = await rpc.batch<RpcBlock>('getBlock', [getBlockParams(slot, 'confirmed', 'accounts')]);
    if (!block || block instanceof Error) return null;
    const builds = BigInt(block.parentSlot) === cursor.slot && block.previousBlockhash === cursor.blockhash;
    return builds ? { slot, block } : null;
  }
}
