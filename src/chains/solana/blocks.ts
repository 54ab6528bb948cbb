/** What a Solana block holds as the watcher reads it, and the SOL and configured-token transfers found in it. */
import { InconsistentChainError } from '../loops.ts';
import type { TokenConfig } from '../types.ts';
import type { Commitment } from './rpc.ts';

interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string };
}

interface AccountsTx {
  meta: {
    err: unknown;
    preBalances: number[];
    postBalances: number[];
    preTokenBalances?: TokenBalance[] | null;
    postTokenBalances?: TokenBalance[] | null;
  } | null;
  transaction: { accountKeys: Array<{ pubkey: string; signer: boolean }>; signatures: string[] };
}

export interface RpcBlock {
  blockhash: string;
  previousBlockhash: string;
  parentSlot: number;
  blockTime: number | null;
  transactions?: AccountsTx[];
}

/** A transfer found in a block, before the sink says whether its recipient is watched. */
export interface FoundTransfer {
  to: string;
  token: TokenConfig;
  signature: string;
  /** The account's position in the transaction (the watched key for SOL, the token account for SPL). */
  index: number;
  amount: bigint;
  from: string | null;
}

/** Balance increases of the successful transactions of a block: SOL to any key, configured mints to token owners. */
export function transfersOf(
  txs: AccountsTx[],
  native: TokenConfig | null,
  mints: Map<string, TokenConfig>,
): FoundTransfer[] {
  const out: FoundTransfer[] = [];
  for (const t of txs) {
    if (!t.meta || t.meta.err !== null) continue;
    const keys = t.transaction.accountKeys;
    const signature = t.transaction.signatures[0]!;
    if (native) {
      const { preBalances: pre, postBalances: post } = t.meta;
      // A missing balance read as 0 would turn an account's whole balance into a deposit.
      if (pre.length !== keys.length || post.length !== keys.length)
        throw new InconsistentChainError(
          `transaction ${signature} lists ${keys.length} accounts but ${pre.length} balances before and ${post.length} after`,
        );
      let from: string | null = null;
      let drop = 0;
      for (let i = 0; i < keys.length; i++) {
        const d = pre[i]! - post[i]!;
        if (d > drop) {
          drop = d;
          from = keys[i]!.pubkey;
        }
      }
      for (let i = 0; i < keys.length; i++) {
        const gain = BigInt(post[i]!) - BigInt(pre[i]!);
        if (gain > 0n) out.push({ to: keys[i]!.pubkey, token: native, signature, index: i, amount: gain, from });
      }
    }
    if (mints.size === 0) continue;
    const preTokens = new Map((t.meta.preTokenBalances ?? []).map((b) => [b.accountIndex, b] as const));
    const postTokens = t.meta.postTokenBalances ?? [];
    for (const b of postTokens) {
      const token = mints.get(b.mint);
      if (!token || !b.owner) continue;
      const before = preTokens.get(b.accountIndex);
      const gain =
        BigInt(b.uiTokenAmount.amount) - (before && before.mint === b.mint ? BigInt(before.uiTokenAmount.amount) : 0n);
      if (gain <= 0n) continue;
      let from: string | null = null;
      let drop = 0n;
      for (const p of preTokens.values()) {
        if (p.mint !== b.mint || !p.owner) continue;
        const after = postTokens.find((x) => x.accountIndex === p.accountIndex);
        const d = BigInt(p.uiTokenAmount.amount) - (after ? BigInt(after.uiTokenAmount.amount) : 0n);
        if (d > drop) {
          drop = d;
          from = p.owner;
        }
      }
      out.push({
        to: b.owner,
        token,
        signature,
        index: b.accountIndex,
        amount: gain,
        from: from ?? keys[0]?.pubkey ?? null,
      });
    }
  }
  return out;
}

/** `getBlock`'s parameters: one slot at `commitment`, JSON, no rewards. */
export const getBlockParams = (slot: bigint, commitment: Commitment, details: 'accounts' | 'none') => [
  Number(slot),
  { commitment, encoding: 'json', transactionDetails: details, rewards: false, maxSupportedTransactionVersion: 0 },
];
