/** An EVM hot-wallet transfer: its row and call types, the call moving a token, revert decoding, nonce allocation. */
import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import { encodeFunctionData, getAddress, type Hex } from 'viem';
import type { Mode } from '../../core/mode.ts';
import type { DbOrTx, Tx } from '../../db/index.ts';
import { tokenAmountTier } from '../networks.ts';
import type { NetworkConfig, TokenConfig } from '../types.ts';
import { erc20Abi } from './contracts.ts';
import type { EvmTransfersTable } from './schema.ts';
import { RpcError } from './rpc.ts';

export type TransferPurpose =
  | 'refund'
  | 'payout'
  | 'gasless'
  | 'disperse'
  | 'approve'
  | 'x402'
  // hold and capture: the hot wallet's calls to the escrow (holds.ts); a refund of captured money is a `refund`
  | 'authorize'
  | 'capture'
  | 'void'
  // subscriptions charged automatically: a payer's grant and revoke relayed to the collector, and each charge
  | 'grant'
  | 'revoke'
  | 'charge';
export type TransferRow = Selectable<EvmTransfersTable>;

/**
 * The confirmations a transfer of the hot wallet settles with: an x402 settlement those of its amount's tier, as a
 * payment of that size gets (a tenth of a cent does not wait for the blocks a large payment does), anything else the
 * network's highest tier.
 */
export function transferConfirmations(
  network: NetworkConfig,
  t: { purpose: string; token: string | null; amount: string | bigint | null },
): number {
  const token = t.purpose === 'x402' && t.amount !== null ? network.tokens.find((k) => k.id === t.token) : undefined;
  if (token) return tokenAmountTier(network, token, BigInt(t.amount!)).confirmations;
  return network.confirmationTiers[network.confirmationTiers.length - 1]!.confirmations;
}

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

/** How a transfer settles (a batch's logs say which of its payouts the token refused). */
export interface Settlement {
  status: 'sent' | 'failed';
  txHash: string | null;
  error: string | null;
  blockNumber?: bigint;
  gasUsed?: bigint;
  logs?: RpcReceipt['logs'];
}

/** A transfer's row, locked in `tx` as it is now. */
export function lockRow(tx: Tx, id: string): Promise<TransferRow | undefined> {
  return tx.selectFrom('evm_transfers').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

/**
 * Settles a transfer (a single one, or a batch's own row) that is still `from`: its status, hash, error, block and
 * gas. False when it was no longer `from` (another pass settled it).
 */
export async function settleRow(
  db: DbOrTx,
  id: string,
  from: 'pending' | 'broadcast',
  result: Settlement,
  now: Date,
): Promise<boolean> {
  const settled = await db
    .updateTable('evm_transfers')
    .set({
      status: result.status,
      tx_hash: result.txHash,
      error: result.error,
      block_number: result.blockNumber ?? null,
      gas_used: result.gasUsed ?? null,
      settled_at: now,
    })
    .where('id', '=', id)
    .where('status', '=', from)
    .returning('id')
    .executeTakeFirst();
  return settled !== undefined;
}

export interface RpcReceipt {
  status: Hex;
  blockNumber: Hex | null;
  gasUsed: Hex;
  logs?: Array<{ address: Hex; topics: [Hex, ...Hex[]]; data: Hex }>;
}

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
export function transferCall(
  token: TokenConfig,
  destination: string,
  amount: bigint,
): { to: string; value: bigint; data: Hex } {
  if (token.kind === 'native') return { to: getAddress(destination), value: amount, data: '0x' };
  if (token.kind === 'erc20' && token.contract) {
    return {
      to: getAddress(token.contract),
      value: 0n,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [getAddress(destination), amount] }),
    };
  }
  throw new Error(`${token.id}: an EVM sender cannot send a ${token.kind} token`);
}

/**
 * Allocates the hot wallet's next nonce on (mode, chain) inside `tx` and returns it. The stored counter wins unless
 * the chain has seen more transactions from the wallet (`chainNonce`, its mined transaction count: the wallet was
 * used outside this counter), then it jumps there. Anything else that signs with the hot wallet on a network must
 * take its nonces here too.
 */
export async function allocateNonce(
  tx: Tx,
  key: { mode: Mode; chain: string; address: string },
  chainNonce: bigint,
  now: Date,
): Promise<bigint> {
  const { rows } = await sql<{ nonce: string | bigint }>`
    INSERT INTO evm_nonces (mode, chain, address, next_nonce, updated_at)
    VALUES (${key.mode}, ${key.chain}, ${key.address}, ${(chainNonce + 1n).toString()}::bigint, ${now})
    ON CONFLICT (mode, chain, address) DO UPDATE
      SET next_nonce = GREATEST(evm_nonces.next_nonce, ${chainNonce.toString()}::bigint) + 1, updated_at = excluded.updated_at
    RETURNING next_nonce - 1 AS nonce`.execute(tx);
  return BigInt(rows[0]!.nonce);
}
