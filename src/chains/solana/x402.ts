/**
 * x402's `exact` scheme on Solana (`@x402/svm`), with Kasse's hot wallet as the fee payer (`extra.feePayer`).
 *
 * The payer's client builds a v0 transaction with the hot wallet as fee payer and signs it as the token authority:
 * SetComputeUnitLimit, SetComputeUnitPrice, a Token `TransferChecked` of the network's USDC from the payer's token
 * account to the associated token account of `payTo`, then at most four Memo (or Lighthouse) instructions. `check`
 * reads it and refuses, with the official facilitator's `invalidReason` codes, anything else: another fee payer,
 * a fee payer that appears in any instruction or signs for anything but the fee, more signers than the fee payer and
 * the payer, a missing or forged payer signature, another mint or decimals, another recipient, another amount, a
 * priority fee above one signature's fee, lookup tables, other programs. `verify` adds what only the chain knows: the
 * blockhash is still accepted, the transaction did not land before (its signature is the fee payer's, deterministic
 * for the message) and is not being settled by Kasse already, and a simulation, co-signed, succeeds and costs the hot
 * wallet no more than the fee.
 *
 * `settle` is idempotent on the message: the transfer id is `x402_` and the message's SHA-256, so settling the same
 * payload twice, or in two processes at once, records one relay in the crash-safe sender (sender.ts, stored before
 * it is sent, resent until its blockhash expires) and answers the same signature. It waits until the transaction
 * reaches the commitment the amount's confirmation tier asks for (1: confirmed; the finality count: finalized), at
 * most `SETTLE_TIMEOUT_MS`; after a crash, the sender loop carries the stored transaction on and a retried settle
 * finds it. Rules: docs/solana.md ("x402").
 */
import { createHash } from 'node:crypto';
import {
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getPublicKeyFromAddress,
  getSignatureFromTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
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
import { withTx } from '../../db/index.ts';
import { confirmationTier } from '../networks.ts';
import type { TokenConfig } from '../types.ts';
import type { SolanaAdapter } from './adapter.ts';
import { keyPairOf } from './keys.ts';
import { LAMPORTS_PER_SIGNATURE } from './plans.ts';
import { associatedTokenAccount, MAX_TRANSACTION_BYTES } from './transactions.ts';

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

/** How long `settle` waits for the transaction to reach its commitment before answering `settlement_pending`. */
export const SETTLE_TIMEOUT_MS = 60_000;
const POLL_MS = 400;
/** The priority fee the hot wallet pays on top of the signature fees, at most (lamports). */
const MAX_PRIORITY_LAMPORTS = LAMPORTS_PER_SIGNATURE;

/** The CAIP-2 id of a Kasse Solana network: mainnet in live mode, devnet in test mode (the local node poses as it). */
export function solanaCaip2(mode: 'live' | 'test'): string {
  return mode === 'live' ? SOLANA_MAINNET_CAIP2 : SOLANA_DEVNET_CAIP2;
}

/** The parts of x402's PaymentRequirements and PaymentPayload the scheme reads. */
export interface SvmRequirements {
  scheme: string;
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  extra?: Record<string, unknown>;
}
export interface SvmPayload {
  accepted?: { scheme?: string; network?: string };
  payload: Record<string, unknown>;
}

export interface SvmVerifyResult {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer: string;
}
export interface SvmSettleResult {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer: string;
  transaction: string;
  network: string;
}

type Refusal = { reason: string; message: string };
interface Checked {
  tx: Transaction;
  payer: string;
  blockhash: string;
  /** SHA-256 of the message, hex: the settlement's key. */
  key: string;
}

const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();
const no = (reason: string, message: string): Refusal => ({ reason, message });

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
  return {
    tx,
    payer,
    blockhash: message.lifetimeToken,
    key: messageKey(tx),
  };
}

/** The x402 `exact` scheme on one Solana network in one mode. */
export class SolanaX402 {
  constructor(private readonly adapter: SolanaAdapter) {}

  /** CAIP-2 network id (`solana:<genesis hash prefix>`). */
  get network(): string {
    return solanaCaip2(this.adapter.mode);
  }

  /** The network's USDC (the gasless SPL coin of the networks file), or null when it has none. */
  get usdc(): TokenConfig | null {
    return (
      this.adapter.network.tokens.find((t) => t.kind === 'spl' && t.gasless && t.symbol === 'USDC' && t.contract) ??
      null
    );
  }

  /** What a `supported` kind's `extra` carries: Kasse's hot wallet pays the fee. */
  extra(): { feePayer: string } {
    return { feePayer: this.adapter.deps.keys.hotWallet().address };
  }

  async verify(payload: SvmPayload, requirements: SvmRequirements, payTo: string): Promise<SvmVerifyResult> {
    const r = await this.inspect(payload, requirements, payTo);
    if ('reason' in r) return { isValid: false, invalidReason: r.reason, invalidMessage: r.message, payer: r.payer };
    return { isValid: true, payer: r.payer };
  }

  async settle(payload: SvmPayload, requirements: SvmRequirements, payTo: string): Promise<SvmSettleResult> {
    const network = this.network;
    const fail = (reason: string, message: string, payer = '', transaction = ''): SvmSettleResult => ({
      success: false,
      errorReason: reason,
      errorMessage: message,
      payer,
      transaction,
      network,
    });
    const sender = this.adapter.sender;
    if (!sender) return fail(SVM_REASONS.network, 'No sender runs for this network.');
    const known = await this.recorded(payload);
    let id: string;
    let payer: string;
    if (known) {
      ({ id, payer } = known);
    } else {
      const r = await this.inspect(payload, requirements, payTo);
      if ('reason' in r) return fail(r.reason, r.message, r.payer);
      id = transferId(r.checked.key);
      payer = r.payer;
      await this.record(id, r.signed, r.checked.blockhash, requirements.amount, payTo);
    }
    const outcome = await this.await(id, BigInt(requirements.amount));
    if (outcome.status === 'landed') return { success: true, payer, transaction: outcome.signature, network };
    if (outcome.status === 'failed')
      return fail(SVM_REASONS.failed, outcome.error ?? 'The transaction failed.', payer, outcome.signature);
    return fail(
      SVM_REASONS.pending,
      `The transaction was sent but has not reached its commitment within ${SETTLE_TIMEOUT_MS / 1000} s; settle the same payment again to follow it.`,
      payer,
      outcome.signature,
    );
  }

  /** The relay Kasse already recorded for this payload's message, if any (a settle seen before). */
  private async recorded(payload: SvmPayload): Promise<{ id: string; payer: string } | null> {
    const raw = payload.payload?.transaction;
    if (typeof raw !== 'string') return null;
    let key: string;
    let payer: string;
    try {
      const tx = getTransactionDecoder().decode(b64enc.encode(raw));
      const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
      key = messageKey(tx);
      payer = String(message.staticAccounts[1] ?? '');
    } catch {
      return null;
    }
    const row = await this.adapter.sender!.get(transferId(key));
    return row ? { id: row.id, payer } : null;
  }

  /** Every check of `verify`; on success also the co-signed transaction. */
  private async inspect(
    payload: SvmPayload,
    req: SvmRequirements,
    payTo: string,
  ): Promise<
    (Refusal & { payer: string }) | { payer: string; checked: Checked; signed: { raw: string; signature: string } }
  > {
    const refuse = (r: Refusal, payer = '') => ({ ...r, payer });
    if (req.scheme !== 'exact' || (payload.accepted?.scheme ?? 'exact') !== 'exact')
      return refuse(no(SVM_REASONS.scheme, 'Only the exact scheme is supported.'));
    if (req.network !== this.network || (payload.accepted?.network ?? req.network) !== req.network)
      return refuse(no(SVM_REASONS.network, `This facilitator settles ${this.network} here.`));
    const feePayer = req.extra?.feePayer;
    if (typeof feePayer !== 'string') return refuse(no(SVM_REASONS.missingFeePayer, 'extra.feePayer is missing.'));
    const hot = this.adapter.deps.keys.hotWallet();
    if (feePayer !== hot.address)
      return refuse(no(SVM_REASONS.feePayerNotManaged, `extra.feePayer must be Kasse's ${hot.address}.`));
    const usdc = this.usdc;
    if (!usdc || req.asset !== usdc.contract)
      return refuse(no(SVM_REASONS.mint, `The asset must be the network's USDC ${usdc?.contract ?? ''}.`));
    if (req.payTo !== payTo) return refuse(no(SVM_REASONS.recipient, `payTo must be the merchant's ${payTo}.`));
    if (!/^[1-9][0-9]{0,19}$/.test(req.amount))
      return refuse(no(SVM_REASONS.amount, 'amount must be a positive integer of smallest units.'));
    const memo = typeof req.extra?.memo === 'string' ? req.extra.memo : undefined;
    const checked = await checkX402Transaction(payload.payload?.transaction, {
      feePayer: hot.address,
      token: usdc,
      destination: await associatedTokenAccount(payTo, usdc.contract!),
      amount: BigInt(req.amount),
      memo,
    });
    if ('reason' in checked) return refuse(checked);
    const payer = checked.payer;
    const signedTx = await partiallySignTransaction([await keyPairOf(hot)], checked.tx);
    const signed = { raw: b64.decode(getTransactionEncoder().encode(signedTx)), signature: '' };
    signed.signature = getSignatureFromTransaction(signedTx);
    if (await this.adapter.sender?.get(transferId(checked.key)))
      return refuse(no(SVM_REASONS.duplicate, 'This transaction was settled already.'), payer);
    const rpc = this.adapter.rpc();
    const [valid, seen] = await Promise.all([
      rpc.request<{ value: boolean }>('isBlockhashValid', [checked.blockhash, { commitment: 'confirmed' }]),
      rpc.request<{ value: unknown[] }>('getSignatureStatuses', [
        [signed.signature],
        { searchTransactionHistory: true },
      ]),
    ]);
    if (seen.value[0]) return refuse(no(SVM_REASONS.duplicate, 'This transaction is on chain already.'), payer);
    if (!valid.value)
      return refuse(no(SVM_REASONS.simulation, 'The blockhash has expired; sign a new transaction.'), payer);
    const spend = await this.simulate(signed.raw, hot.address);
    if (spend) return refuse(spend, payer);
    return { payer, checked, signed };
  }

  /** Simulates the co-signed transaction: it must succeed and cost the hot wallet no more than the fee. */
  private async simulate(raw: string, hot: string): Promise<Refusal | null> {
    const rpc = this.adapter.rpc();
    const [sim, before] = await Promise.all([
      rpc.request<{ value: { err: unknown; logs: string[] | null; accounts: Array<{ lamports: number } | null> } }>(
        'simulateTransaction',
        [
          raw,
          {
            encoding: 'base64',
            sigVerify: true,
            commitment: 'confirmed',
            accounts: { encoding: 'base64', addresses: [hot] },
          },
        ],
      ),
      rpc.request<{ value: number }>('getBalance', [hot, { commitment: 'confirmed' }]),
    ]);
    if (sim.value.err !== null) {
      const logs = (sim.value.logs ?? []).join('\n');
      if (/insufficient funds/i.test(logs))
        return no(SVM_REASONS.insufficientFunds, "The payer's token account does not hold the amount.");
      return no(SVM_REASONS.simulation, `The transfer would fail on chain: ${JSON.stringify(sim.value.err)}.`);
    }
    const after = sim.value.accounts?.[0]?.lamports;
    if (
      after === undefined ||
      BigInt(before.value) - BigInt(after) > 2n * LAMPORTS_PER_SIGNATURE + MAX_PRIORITY_LAMPORTS
    )
      return no(SVM_REASONS.feePayerTransferring, 'The transaction would spend more of the fee payer than the fee.');
    return null;
  }

  /** Records the co-signed relay (idempotent on `id`, also across processes) and sends it. */
  private async record(
    id: string,
    signed: { raw: string; signature: string },
    blockhash: string,
    amount: string,
    payTo: string,
  ): Promise<void> {
    const adapter = this.adapter;
    const sender = adapter.sender!;
    const latest = await adapter
      .rpc()
      .request<{ value: { lastValidBlockHeight: number } }>('getLatestBlockhash', [{ commitment: 'confirmed' }]);
    try {
      await withTx(adapter.deps.db, (tx) =>
        sender.recordRelay(
          tx,
          id,
          { ...signed, size: 0, blockhash, lastValidBlockHeight: BigInt(latest.value.lastValidBlockHeight) },
          { token: this.usdc!.id, destination: payTo, amount: BigInt(amount) },
        ),
      );
    } catch (err) {
      // Another settle of the same message recorded it first: follow that one.
      if ((err as { code?: string }).code !== '23505') throw err;
      return;
    }
    adapter.deps.log.info(
      { transferId: id, chain: adapter.network.id, mode: adapter.mode, signature: signed.signature },
      'solana x402 payment accepted',
    );
    await sender
      .push(id)
      .catch((err: unknown) =>
        adapter.deps.log.error(
          { err: err instanceof Error ? err.message : String(err), transferId: id },
          'solana x402 relay could not be sent now; the sender carries it on',
        ),
      );
  }

  /**
   * Waits until the relay's transaction reaches the commitment the amount's tier asks for, fails, or the time limit
   * passes; drives the sender's steps meanwhile (the sender loop does the same; both are guarded by its lease).
   */
  private async await(
    id: string,
    amount: bigint,
  ): Promise<{ status: 'landed' | 'failed' | 'pending'; signature: string; error?: string | null }> {
    const adapter = this.adapter;
    const sender = adapter.sender!;
    const cents = Number(amount / 10n ** BigInt(Math.max(0, this.usdc!.decimals - 2)));
    const finalized = confirmationTier(adapter.network, cents).confirmations >= adapter.network.finalityConfirmations;
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    for (;;) {
      const row = await sender.get(id);
      if (!row) throw new Error(`x402 relay ${id} is not recorded`);
      const signature = row.signature ?? '';
      if (row.status === 'failed') return { status: 'failed', signature, error: row.error };
      if (row.status === 'sent') return { status: 'landed', signature };
      if (row.status === 'broadcast' && signature) {
        const s = await adapter
          .rpc()
          .request<{ value: Array<{ err: unknown; confirmationStatus: string | null } | null> }>(
            'getSignatureStatuses',
            [[signature], { searchTransactionHistory: true }],
          );
        const st = s.value[0];
        if (st && st.err !== null)
          return { status: 'failed', signature, error: `The transaction failed on chain: ${JSON.stringify(st.err)}` };
        if (st && (st.confirmationStatus === 'finalized' || (!finalized && st.confirmationStatus === 'confirmed')))
          return { status: 'landed', signature };
      } else {
        await sender.push(id).catch(() => {});
      }
      if (Date.now() >= deadline) return { status: 'pending', signature };
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }
}

/** SHA-256 of the transaction's message, hex. */
function messageKey(tx: Transaction): string {
  return createHash('sha256').update(new Uint8Array(tx.messageBytes)).digest('hex');
}

function transferId(key: string): string {
  return `x402_${key}`;
}
