/**
 * Reading a payer-signed x402 `exact` transaction on Solana (`@x402/svm`'s layout, Kasse's hot wallet as fee payer)
 * without any network I/O: what x402.ts checks before it asks the chain anything. The rules and the refusal codes
 * (the official facilitator's `invalidReason` values) are in docs/solana.md ("x402").
 */
import { createHash } from 'node:crypto';
import {
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getPublicKeyFromAddress,
  getTransactionDecoder,
  verifySignature,
  type Address,
  type Transaction,
} from '@solana/kit';
import {
  getTransferCheckedInstructionDataDecoder,
  identifyTokenInstruction,
  TOKEN_PROGRAM_ADDRESS,
  TokenInstruction,
} from '@solana-program/token';
import {
  COMPUTE_BUDGET_PROGRAM_ADDRESS,
  LIGHTHOUSE_PROGRAM_ADDRESS,
  MEMO_PROGRAM_ADDRESS,
  SOLANA_DEVNET_CAIP2,
  SOLANA_MAINNET_CAIP2,
} from '@x402/svm';
import type { Mode } from '../../core/mode.ts';
import type { TokenConfig } from '../types.ts';
import { LAMPORTS_PER_SIGNATURE } from './plans.ts';
import { MAX_TRANSACTION_BYTES } from './transactions.ts';

/** The `invalidReason` / `errorReason` codes of `@x402/svm`'s facilitator that Kasse answers. */
export const SVM_REASONS = {
  scheme: 'invalid_exact_svm_unsupported_scheme',
  network: 'invalid_exact_svm_network_mismatch',
  missingFeePayer: 'invalid_exact_svm_payload_missing_fee_payer',
  feePayerNotManaged: 'invalid_exact_svm_fee_payer_not_managed_by_facilitator',
  feePayerMismatch: 'invalid_exact_svm_fee_payer_mismatch',
  transaction: 'invalid_exact_svm_payload_transaction',
  undecodable: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
  signature: 'invalid_exact_svm_payload_signature_invalid',
  signers: 'invalid_exact_svm_payload_excessive_signers',
  instructions: 'invalid_exact_svm_payload_transaction_instructions_length',
  computeLimit: 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
  computePrice: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
  computePriceTooHigh: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
  noTransfer: 'invalid_exact_svm_payload_no_transfer_instruction',
  optional: 'invalid_exact_svm_payload_unknown_optional_instruction',
  feePayerTransferring: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
  mint: 'invalid_exact_svm_payload_mint_mismatch',
  recipient: 'invalid_exact_svm_payload_recipient_mismatch',
  amount: 'invalid_exact_svm_payload_amount_mismatch',
  memo: 'invalid_exact_svm_payload_memo_mismatch',
  simulation: 'invalid_exact_svm_transaction_simulation_failed',
  insufficientFunds: 'insufficient_funds',
  duplicate: 'duplicate_settlement',
  failed: 'invalid_exact_svm_transaction_failed',
  pending: 'settlement_pending',
} as const;

/** The CAIP-2 id of a Kasse Solana network: mainnet in live mode, devnet in test mode (the local node poses as it). */
export function solanaCaip2(mode: Mode): string {
  return mode === 'live' ? SOLANA_MAINNET_CAIP2 : SOLANA_DEVNET_CAIP2;
}

/** The priority fee the hot wallet pays on top of the signature fees, at most (lamports). */
export const MAX_PRIORITY_LAMPORTS = LAMPORTS_PER_SIGNATURE;

export type Refusal = { reason: string; message: string };
export interface Checked {
  tx: Transaction;
  payer: string;
  blockhash: string;
  /** SHA-256 of the message, hex: the authorization's key. */
  key: string;
  /** Position of the merchant's token account among the message's accounts (the watcher's deposit index). */
  index: number;
}
const b64enc = getBase64Encoder();
export const no = (reason: string, message: string): Refusal => ({ reason, message });

function u64le(data: ArrayLike<number>, at: number, bytes: number): bigint | null {
  if (data.length !== at + bytes) return null;
  let v = 0n;
  for (let i = bytes - 1; i >= 0; i--) v = (v << 8n) | BigInt(data[at + i]!);
  return v;
}

/**
 * Reads and checks a payer-signed x402 transaction against what Kasse expects (no network I/O); see the header
 * comment. Answers the refusal, or the decoded transaction with its payer.
 */
export async function checkX402Transaction(
  base64: unknown,
  expect: { feePayer: string; token: TokenConfig; destination: string; amount: bigint; memo?: string },
): Promise<Checked | Refusal> {
  if (typeof base64 !== 'string') return no(SVM_REASONS.transaction, 'payload.transaction must be a base64 string.');
  let bytes: Uint8Array;
  let tx: Transaction;
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
  try {
    bytes = b64enc.encode(base64) as Uint8Array;
    tx = getTransactionDecoder().decode(bytes);
    message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  } catch {
    return no(SVM_REASONS.undecodable, 'The transaction is not a Solana wire transaction.');
  }
  if (bytes.length > MAX_TRANSACTION_BYTES)
    return no(SVM_REASONS.transaction, `The transaction is ${bytes.length} bytes; at most ${MAX_TRANSACTION_BYTES}.`);
  if (message.version !== 'legacy' && message.version !== 0)
    return no(SVM_REASONS.transaction, `The transaction is version ${message.version}; legacy or v0 only.`);
  if ('addressTableLookups' in message && (message.addressTableLookups?.length ?? 0) > 0)
    return no(SVM_REASONS.transaction, 'The transaction must not use address lookup tables.');
  const keys = message.staticAccounts as string[];
  if (new Set(keys).size !== keys.length) return no(SVM_REASONS.transaction, 'The transaction lists an account twice.');
  if (keys[0] !== expect.feePayer)
    return no(SVM_REASONS.feePayerMismatch, `The fee payer must be Kasse's ${expect.feePayer}.`);
  if (message.header.numSignerAccounts !== 2)
    return no(SVM_REASONS.signers, 'The transaction must have exactly two signers: the fee payer and the payer.');
  const payer = keys[1]!;
  const ixs = message.instructions;
  if (ixs.length < 3 || ixs.length > 7)
    return no(SVM_REASONS.instructions, 'The transaction must have 3 to 7 instructions.');
  // Nothing may use the fee payer's account: it signs for the fee alone.
  if (ixs.some((ix) => (ix.accountIndices ?? []).includes(0)))
    return no(SVM_REASONS.feePayerTransferring, 'The fee payer must not appear in any instruction.');
  const program = (i: number) => keys[ixs[i]!.programAddressIndex];
  const limitData = ixs[0]!.data ?? new Uint8Array();
  const units = program(0) === COMPUTE_BUDGET_PROGRAM_ADDRESS && limitData[0] === 2 ? u64le(limitData, 1, 4) : null;
  if (units === null) return no(SVM_REASONS.computeLimit, 'The first instruction must be SetComputeUnitLimit.');
  const priceData = ixs[1]!.data ?? new Uint8Array();
  const price = program(1) === COMPUTE_BUDGET_PROGRAM_ADDRESS && priceData[0] === 3 ? u64le(priceData, 1, 8) : null;
  if (price === null) return no(SVM_REASONS.computePrice, 'The second instruction must be SetComputeUnitPrice.');
  if ((units * price + 999_999n) / 1_000_000n > MAX_PRIORITY_LAMPORTS)
    return no(
      SVM_REASONS.computePriceTooHigh,
      `The priority fee (compute units × price) must be at most ${MAX_PRIORITY_LAMPORTS} lamports.`,
    );
  const transfer = ixs[2]!;
  let data: { amount: bigint; decimals: number };
  try {
    if (program(2) !== TOKEN_PROGRAM_ADDRESS) throw new Error();
    if (identifyTokenInstruction(transfer.data ?? new Uint8Array()) !== TokenInstruction.TransferChecked)
      throw new Error();
    data = getTransferCheckedInstructionDataDecoder().decode(transfer.data!);
  } catch {
    return no(SVM_REASONS.noTransfer, 'The third instruction must be a Token TransferChecked.');
  }
  const accounts = transfer.accountIndices ?? [];
  if (accounts.length !== 4) return no(SVM_REASONS.noTransfer, 'The transfer must name exactly four accounts.');
  const [, mint, destination, authority] = accounts.map((i) => keys[i]);
  if (authority !== payer)
    return no(SVM_REASONS.transaction, 'The transfer must be authorized by the payer who signs the transaction.');
  if (mint !== expect.token.contract || data.decimals !== expect.token.decimals)
    return no(SVM_REASONS.mint, `The transfer must move ${expect.token.symbol} (${expect.token.contract}).`);
  if (destination !== expect.destination)
    return no(SVM_REASONS.recipient, `The transfer must pay the token account ${expect.destination}.`);
  if (data.amount !== expect.amount)
    return no(SVM_REASONS.amount, `The transfer must move exactly ${expect.amount} units.`);
  const memos: string[] = [];
  for (let i = 3; i < ixs.length; i++) {
    const p = program(i);
    if (p !== MEMO_PROGRAM_ADDRESS && p !== LIGHTHOUSE_PROGRAM_ADDRESS)
      return no(SVM_REASONS.optional, 'Only Memo instructions may follow the transfer.');
    if (p === MEMO_PROGRAM_ADDRESS) memos.push(new TextDecoder().decode(ixs[i]!.data ?? new Uint8Array()));
  }
  if (expect.memo !== undefined && (memos.length !== 1 || memos[0] !== expect.memo))
    return no(SVM_REASONS.memo, 'The transaction must carry the memo of the payment requirements.');
  const sig = tx.signatures[payer as Address];
  if (!sig || !(await verifySignature(await getPublicKeyFromAddress(payer as Address), sig, tx.messageBytes)))
    return no(SVM_REASONS.signature, "The payer's signature is missing or does not verify.");
  return { tx, payer, blockhash: message.lifetimeToken, key: messageKey(tx), index: accounts[2]! };
}

/** SHA-256 of a transaction's message, hex. */
export function messageKey(tx: Transaction): string {
  return createHash('sha256').update(new Uint8Array(tx.messageBytes)).digest('hex');
}

/** The message key of a base64 wire transaction, or null when it cannot be read. */
export function keyOf(base64: unknown): string | null {
  if (typeof base64 !== 'string') return null;
  try {
    return messageKey(getTransactionDecoder().decode(b64enc.encode(base64)));
  } catch {
    return null;
  }
}
