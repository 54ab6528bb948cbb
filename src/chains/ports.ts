/**
 * The ports: the only ways a chain family reaches payment data. Kasse injects them into every family it loads
 * (`FamilyContext` in plugin.ts); the modules implement them. A family therefore never imports a module, a table or
 * the payment state machine, and a module never imports a family.
 *
 *   DepositSink     what a watcher sees: transfers into deposit addresses (in a block or still in the mempool), how far
 *                   they are confirmed (by depth, or by the chain's own commitment), reorgs and dropped transfers.
 *                   Implemented by the payments module.
 *   PaymentsPort    read-only payment data a family's checkout extension, relay and operator commands need.
 *                   Implemented by the payments module.
 *   TransferSink    where a family's sender reports how an outgoing transfer ended. Implemented by the transfers
 *                   module, which hands transfers to senders through `OutgoingSender`.
 *
 * Beside them, `stepFailure`: the one rule by which every family's sender tells a failed step it retries from one
 * that ends the transfer `failed`.
 */
import type { Mode } from '../core/mode.ts';
import type { Tx } from '../db/index.ts';
import { JsonRpcError } from './jsonrpc.ts';
import type { TokenConfig } from './types.ts';

// ---- Deposits ----

/** A transfer named by the chain: its transaction and its position in it (log index, output index, …). */
export interface TransferKey {
  txHash: string;
  /** Position inside the transaction; with txHash it identifies the transfer. */
  index: number;
}

/** One transfer into a watched address, as a watcher sees it. */
export interface DepositObservation extends TransferKey {
  chain: string;
  /** Deposit address as issued (adapters compare case-insensitively where the chain does). */
  address: string;
  token: string;
  amount: bigint;
  from: string | null;
  /** The block holding the transfer; null for a sighting before any block holds it (a mempool transaction). */
  blockNumber: bigint | null;
  blockHash: string | null;
  /**
   * When the block was produced, if the chain says. The deposit counts as seen no later than this, so a watcher
   * catching up after downtime does not turn payments made within the coin hold into late ones.
   */
  blockTime?: Date | null;
}

/** How far a transfer is, for chains whose finality is a commitment level rather than a depth. */
export interface DepositProgress extends TransferKey {
  /** Confirmations to compare with the attempt's `confirmations_required` (e.g. 1 at `confirmed`). */
  confirmations: number;
  /** The chain says the transfer can no longer be reverted (e.g. `finalized`). */
  final: boolean;
}

/** Implemented by the payments module; called by chain watchers. Every method is idempotent. */
export interface DepositSink {
  /** Which of `addresses` are deposit addresses Kasse issued on `chain` (any case); returned in canonical form. */
  watchedAddresses(mode: Mode, chain: string, addresses: string[]): Promise<Map<string, string>>;
  /**
   * Records transfers seen in blocks or in the mempool; idempotent on (chain, txHash, index). A transfer reported
   * again takes the block it is reported in now (a mempool sighting moves into its block); reported again without a
   * block, it keeps the block it was recorded in: only `blocksRemoved` and `depositsDropped` take it out.
   */
  recordDeposits(mode: Mode, deposits: DepositObservation[]): Promise<void>;
  /** Depth finality: the chain's head moved; confirmations of deposits in blocks are recounted from it. */
  headAdvanced(mode: Mode, chain: string, head: bigint): Promise<void>;
  /** Commitment finality: the chain says how far these transfers are. */
  depositsProgressed(mode: Mode, chain: string, progress: DepositProgress[]): Promise<void>;
  /** Blocks at or above `fromBlock` left the chain: their deposits become `orphaned`. */
  blocksRemoved(mode: Mode, chain: string, fromBlock: bigint): Promise<void>;
  /** Transfers that will not happen after all (dropped from the mempool, in a skipped slot): `orphaned`. */
  depositsDropped(mode: Mode, chain: string, transfers: TransferKey[]): Promise<void>;
  /** Whether a coin choice on `chain` waits for its money now (a watcher may look more often while one does). */
  depositsOpen(mode: Mode, chain: string): Promise<boolean>;
}

// ---- Read-only payment data ----

/** A coin choice as a payer-facing relay sees it. */
export interface CoinChoice {
  paymentId: string;
  attemptId: string;
  mode: Mode;
  chain: string;
  token: string;
  address: string;
  payAmount: bigint;
  /** End of the price hold. */
  expiresAt: Date;
  /** Still payable: the coin choice is waiting and its payment is not final (the hold's end is the caller's check). */
  open: boolean;
  /**
   * A manual payment's hold terms (docs/capture.md): the payer authorizes a hold of `payAmount` that can be captured
   * until `captureBefore` and refunded through the escrow until `refundBefore`; null for a payment paid by sending.
   */
  hold: HoldTerms | null;
}

/** The deadlines of a hold, fixed when its payment was created. */
export interface HoldTerms {
  captureBefore: Date;
  refundBefore: Date;
}

/** A deposit address holding confirmed money. */
export interface FundedAddress {
  /** Lower case. */
  address: string;
  /** Derivation index the address was issued with. */
  index: bigint;
  /** Highest block holding a confirmed deposit to it. */
  lastBlock: bigint;
}

/** Implemented by the payments module: what families may read about payments, and nothing more. */
export interface PaymentsPort {
  /** A coin choice of a payment; `no_payment` / `no_attempt` when either does not exist (or do not belong together). */
  coinChoice(paymentId: string, attemptId: string): Promise<CoinChoice | 'no_payment' | 'no_attempt'>;
  /** Deposit addresses of `chain` with confirmed or final deposits in blocks, in index order (sweeps). */
  fundedAddresses(mode: Mode, chain: string): Promise<FundedAddress[]>;
}

// ---- Outgoing transfers ----

/** A transfer the transfers module hands to a family's sender. */
export interface TransferRequest {
  /** Id of the outgoing transfer (`rfd_…` for a refund, `po_…` for a payout); the sender is idempotent on it. */
  transferId: string;
  mode: Mode;
  /** Why it is sent: the module that asked (`refund`, `payout`). */
  purpose: string;
  token: TokenConfig;
  /** Where the money goes; for a hold operation: the payer (authorize, void, refund) or the receiver (capture). */
  destination: string;
  amount: bigint;
  /** Present when the transfer moves money held in an escrow (hold and capture) rather than the hot wallet's own. */
  hold?: HoldOperation;
  /** Confirmations it must have to settle; absent: the network's highest tier. */
  confirmations?: number;
}

/**
 * A transfer on a hold: the operator's call to the escrow (docs/capture.md). `terms` are the family's own terms of the
 * hold (for EVM, the escrow's `PaymentInfo`), as the family handed them to the capture module.
 */
export interface HoldOperation {
  /** authorize: lock the payer's signed amount in escrow; capture: pay `amount` of it to the receiver; void: return
   * the rest to the payer; refund: return `amount` of what was captured to the payer. */
  kind: 'authorize' | 'capture' | 'void' | 'refund';
  terms: unknown;
  /** authorize: the payer's signature that lets the escrow collect the money. */
  signature?: string;
}

/** How an outgoing transfer left (or failed to leave) the hot wallet; reported by a sender. */
export interface TransferResult {
  transferId: string;
  status: 'sent' | 'failed';
  txHash: string | null;
  error: string | null;
  /** The block the transaction landed in, where the family reports it (EVM). */
  blockNumber?: bigint | null;
}

/** How far an outgoing transfer got before it settled; reported by a sender as it happens. */
export interface TransferProgress {
  transferId: string;
  /** `signed`: stored signed (its hash known); `broadcast`: handed to the network. */
  status: 'signed' | 'broadcast';
  /** The newest signed version's hash (a replacement changes it). */
  txHash: string;
}

/** Implemented by the transfers module; called by senders. Idempotent: a settled transfer stays as it settled. */
export interface TransferSink {
  /**
   * Transfers that settled together (the transfers one chain transaction carried: one, or a batch's members), settled
   * in one database transaction.
   */
  transfersSettled(mode: Mode, results: readonly TransferResult[]): Promise<void>;
  /**
   * Transfers that moved on without settling (together: one chain transaction's). Informational and idempotent: a
   * report lost in a crash is made good by the next one or by the settlement, and a report after the settlement
   * changes nothing.
   */
  transfersProgressed(mode: Mode, progress: readonly TransferProgress[]): Promise<void>;
}

/**
 * A family's hot-wallet sender of one network and mode. `enqueue` records the transfer durably in the caller's
 * transaction (no network I/O); the sender's own worker signs, broadcasts and confirms it, then reports through
 * `TransferSink`.
 */
export interface OutgoingSender {
  enqueue(tx: Tx, request: TransferRequest): Promise<void>;
}

// ---- Holds ----

/** A payer's signed authorization of a hold for a coin choice, as a family's checkout verified it. */
export interface SignedHold {
  mode: Mode;
  paymentId: string;
  attemptId: string;
  /** The payer's address (where a void or a refund returns the money). */
  payer: string;
  /** The hold's identifier on its chain (for EVM, the escrow's payment-info hash). */
  reference: string;
  /** The family's terms of the hold (handed back with every operation on it). */
  terms: unknown;
  /** The payer's signature the authorize transfer submits. */
  signature: string;
}

/** Implemented by the capture module: where a family hands over a hold its payer signed. */
export interface HoldsPort {
  /**
   * Records the hold and asks for its `authorize` transfer (through the network's sender, in one transaction; no
   * network I/O). Returns that transfer's id. Throws an ApiError (404 payment, 422 coin choice not open or already
   * authorized) and records nothing when it cannot be taken.
   */
  holdSigned(hold: SignedHold): Promise<{ transferId: string }>;
}

// ---- Failed steps: retry, or fail the transfer ----

/**
 * A transfer step failed for a reason no retry can cure (a destination its chain cannot pay, a transaction that can
 * never be valid). Family code throws it where it knows; the sender ends the transfer `failed` with its message.
 */
export class PermanentTransferError extends Error {
  override name = 'PermanentTransferError';
}

/**
 * Node verdicts (any family) on a transaction that mean it can never be accepted as it is: an EVM revert; Core's
 * policy refusals of an output or of the transaction's shape (not its fee, its inputs or the mempool); Solana's
 * "the recipient would be left below rent-exempt". Matched in the node's message and, for Solana, its `err` data.
 */
const PERMANENT_VERDICTS =
  /execution reverted|\brevert|scriptpubkey|\bdust\b|tx-size|bad-txns-(?:vout-negative|vout-toolarge|txouttotal-toolarge|oversize)|mandatory-script-verify-flag-failed|InsufficientFundsForRent/i;

/** Why a step failed, and whether trying again can cure it. */
export interface StepFailure {
  /** True: the transfer ends `failed` with `reason`. False: it stays where it is and is tried again later. */
  permanent: boolean;
  reason: string;
}

/**
 * The one rule every sender applies to a failed step. Permanent: a `PermanentTransferError`, or a node's verdict (an
 * answer another node or a later try would repeat, `retryable` false) matching the verdicts above. Everything else
 * — network errors, timeouts, nodes behind or down, a hot wallet short of funds, fee and mempool refusals, database
 * errors — is retried. A sender fails a transfer on a permanent failure only while nothing of it can still land.
 */
export function stepFailure(err: unknown): StepFailure {
  const reason = err instanceof Error ? err.message : String(err);
  if (err instanceof PermanentTransferError) return { permanent: true, reason };
  if (err instanceof JsonRpcError && !err.retryable) {
    const data =
      err.data && typeof err.data === 'object' && 'err' in err.data
        ? JSON.stringify((err.data as { err: unknown }).err)
        : '';
    return {
      permanent: PERMANENT_VERDICTS.test(`${reason} ${data}`),
      reason: data && !reason.includes(data) ? `${reason}: ${data}` : reason,
    };
  }
  return { permanent: false, reason };
}
