/**
 * Paying a Solana coin choice from a browser wallet, and USDC by signature with Kasse's hot wallet as fee payer.
 *
 * `buildPayment` makes the unsigned transaction a wallet signs (Solana Pay's transaction-request idea, served by
 * Kasse): SOL is a System transfer, USDC a Token `TransferChecked` from the payer's associated token account to
 * the deposit key's, each carrying the coin choice's Solana Pay reference as a read-only account. For a gasless
 * payment the fee payer is the hot wallet, so the payer needs no SOL at all.
 *
 * `RelayService.submit` takes the payer-signed gasless transaction back and, before anything is written, checks it
 * (`checkRelayTransaction`): at most 1232 bytes, legacy or v0 without lookup tables, the hot wallet as fee payer and
 * in no instruction (nothing can spend it but the fee), exactly two signers (the hot wallet, unsigned yet, and the
 * payer, whose signature must verify), exactly one instruction: a TransferChecked of the coin's mint and decimals for
 * exactly the coin choice's pay_amount into the deposit key's token account (extra accounts only read-only
 * references), a blockhash the cluster still accepts, and the coin choice still open. Kasse then co-signs,
 * simulates (the hot wallet may lose only the fee), records it through the crash-safe sender (one active relay per
 * coin choice) and sends it. The watcher sees the transfer like any other deposit. Rules: docs/solana.md.
 */
import {
  AccountRole,
  address,
  compileTransaction,
  createNoopSigner,
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getPublicKeyFromAddress,
  getSignatureFromTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
  setTransactionMessageFeePayer,
  verifySignature,
  type Address,
  type Instruction,
  type ReadonlyUint8Array,
  type Transaction,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  getTransferCheckedInstructionDataDecoder,
  identifyTokenInstruction,
  TOKEN_PROGRAM_ADDRESS,
  TokenInstruction,
} from '@solana-program/token';
import { ApiError, invalid } from '../../core/errors.ts';
import { ulid } from '../../core/ids.ts';
import { withTx, isUniqueViolation } from '../../db/index.ts';
import type { TokenConfig } from '../types.ts';
import type { SolanaAdapter } from './adapter.ts';
import { keyPairOf } from './keys.ts';
import { LAMPORTS_PER_SIGNATURE } from './plans.ts';
import { associatedTokenAccount, MAX_TRANSACTION_BYTES, messageOf, type Lifetime } from './transactions.ts';

/** What the checkout knows of a coin choice (from the payments module's read-only port). */
export interface PayableAttempt {
  id: string;
  paymentId: string;
  token: TokenConfig;
  /** The deposit key. */
  address: string;
  payAmount: bigint;
  /** Waiting, inside its hold, on a payment that is not final. */
  open: boolean;
}

const impossible = (message: string, param: string | null = null) => new ApiError('invalid_state', message, param);
const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();

/** The unsigned transaction a wallet signs to pay `attempt` from `payer` (base64 wire bytes, empty signature slots). */
export async function buildPayment(
  adapter: SolanaAdapter,
  attempt: PayableAttempt,
  payer: string,
  opts: { gasless: boolean },
): Promise<{ transaction: string; fee_payer: string; last_valid_block_height: string }> {
  if (!attempt.open)
    throw impossible('This coin choice is no longer open for payment; choose the coin again.', 'attempt_id');
  if (!adapter.isValidAddress(payer)) throw invalid('account is not a Solana address.', 'account');
  const token = attempt.token;
  const hot = adapter.deps.keys.hotWallet().address;
  if (opts.gasless && (!token.gasless || token.kind !== 'spl' || !adapter.sender))
    throw impossible(`${token.id} cannot be paid by signature; send the coins instead.`, 'attempt_id');
  if (payer === hot || payer === attempt.address) throw invalid('account cannot pay this coin choice.', 'account');
  const reference = adapter.deps.keys.reference(attempt.address);
  const withReference = (ix: Instruction): Instruction => ({
    ...ix,
    accounts: [...(ix.accounts ?? []), { address: address(reference), role: AccountRole.READONLY }],
  });
  const signer = createNoopSigner(address(payer));
  const instructions: Instruction[] = [];
  if (token.kind === 'native') {
    instructions.push(
      withReference(
        getTransferSolInstruction({ source: signer, destination: address(attempt.address), amount: attempt.payAmount }),
      ),
    );
  } else if (token.kind === 'spl' && token.contract) {
    const mint = address(token.contract);
    const to = await associatedTokenAccount(attempt.address, mint);
    if (!opts.gasless)
      instructions.push(
        getCreateAssociatedTokenIdempotentInstruction({
          payer: signer,
          ata: to,
          owner: address(attempt.address),
          mint,
        }),
      );
    instructions.push(
      withReference(
        getTransferCheckedInstruction({
          source: await associatedTokenAccount(payer, mint),
          mint,
          destination: to,
          authority: signer,
          amount: attempt.payAmount,
          decimals: token.decimals,
        }),
      ),
    );
  } else {
    throw impossible(`${token.id} cannot be paid from a Solana wallet.`);
  }
  return unsignedTransaction(adapter, instructions, opts.gasless ? hot : address(payer));
}

/** `instructions` as an unsigned transaction paid by `feePayer` on a fresh blockhash (base64 wire bytes). */
export async function unsignedTransaction(
  adapter: SolanaAdapter,
  instructions: Instruction[],
  feePayer: Address,
): Promise<{ transaction: string; fee_payer: string; last_valid_block_height: string }> {
  const lifetime = await latestBlockhash(adapter);
  const message = setTransactionMessageFeePayer(feePayer, messageOf(instructions, lifetime));
  const tx = compileTransaction(message);
  return {
    transaction: b64.decode(getTransactionEncoder().encode(tx)),
    fee_payer: feePayer,
    last_valid_block_height: lifetime.lastValidBlockHeight.toString(),
  };
}

async function latestBlockhash(adapter: SolanaAdapter): Promise<Lifetime> {
  const r = await adapter
    .rpc()
    .request<{ value: { blockhash: string; lastValidBlockHeight: number } }>('getLatestBlockhash', [
      { commitment: 'confirmed' },
    ]);
  return { blockhash: r.value.blockhash, lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight) };
}

/** What a relayed transaction must be; see the header comment. */
export interface RelayExpectation {
  feePayer: string;
  mint: string;
  decimals: number;
  amount: bigint;
  /** The deposit key's associated token account. */
  destination: string;
}

/** Decodes and checks a payer-signed gasless transaction; throws a 400 naming `transaction` (or 422) on any breach. */
export async function checkRelayTransaction(
  base64: string,
  expect: RelayExpectation,
): Promise<{ tx: Transaction; payer: string; blockhash: string }> {
  const read = readPayerSigned(base64, expect.feePayer, 'the USDC transfer');
  const { keys, ix, accounts, payer } = read;
  const refuse = (why: string) => invalid(`transaction ${why}`, 'transaction');
  let data: { amount: bigint; decimals: number };
  try {
    if (identifyTokenInstruction(ix.data ?? new Uint8Array()) !== TokenInstruction.TransferChecked) throw new Error();
    data = getTransferCheckedInstructionDataDecoder().decode(ix.data!);
  } catch {
    throw refuse('must be a TransferChecked instruction.');
  }
  const [source, mint, destination, authority] = accounts.map((i) => keys[i]);
  if (mint !== expect.mint || data.decimals !== expect.decimals) throw refuse('transfers another token.');
  if (destination !== expect.destination)
    throw invalid(`transaction must pay the coin choice's token account ${expect.destination}.`, 'transaction');
  if (data.amount !== expect.amount)
    throw invalid(`transaction must move exactly the pay_amount ${expect.amount}.`, 'transaction');
  if (authority !== payer || source === undefined) throw refuse('must be authorized by the payer who signs it.');
  for (const i of accounts.slice(4))
    if (i < read.readonlyStart) throw refuse('may add only read-only reference accounts.');
  await verifyPayerSigned(read);
  return { tx: read.tx, payer, blockhash: read.blockhash };
}

/** A payer-signed transaction as far as every relay reads it: one SPL Token instruction, its accounts resolved. */
export interface PayerSigned {
  tx: Transaction;
  payer: string;
  blockhash: string;
  keys: string[];
  ix: { data?: ReadonlyUint8Array; accountIndices?: readonly number[]; programAddressIndex: number };
  accounts: readonly number[];
  /** The first index of the read-only unsigned accounts. */
  readonlyStart: number;
}

/**
 * The checks every payer-signed relay shares (see the header comment): the wire format and size, `feePayer` first
 * and in no instruction, exactly the fee payer and the payer as signers, exactly one SPL Token instruction (`what`).
 * The payer's signature is checked by `verifyPayerSigned`, after the instruction's own checks.
 */
export function readPayerSigned(base64: string, feePayer: string, what: string): PayerSigned {
  const refuse = (why: string) => invalid(`transaction ${why}`, 'transaction');
  let bytes: Uint8Array;
  let tx: Transaction;
  try {
    bytes = b64enc.encode(base64) as Uint8Array;
    tx = getTransactionDecoder().decode(bytes);
  } catch {
    throw refuse('is not a base64 Solana wire transaction.');
  }
  if (bytes.length > MAX_TRANSACTION_BYTES) throw refuse(`is ${bytes.length} bytes; at most ${MAX_TRANSACTION_BYTES}.`);
  let message: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>['decode']>;
  try {
    message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  } catch {
    throw refuse('has a message that cannot be read.');
  }
  if (message.version !== 'legacy' && message.version !== 0)
    throw refuse(`is version ${message.version}; legacy or v0 only.`);
  if ('addressTableLookups' in message && (message.addressTableLookups?.length ?? 0) > 0)
    throw refuse('must not use address lookup tables.');
  const keys = message.staticAccounts as string[];
  const h = message.header;
  if (keys[0] !== feePayer) throw refuse(`must have Kasse's hot wallet ${feePayer} as fee payer.`);
  if (h.numSignerAccounts !== 2) throw refuse('must have exactly two signers: the fee payer and the payer.');
  const payer = keys[1]!;
  if (new Set(keys).size !== keys.length) throw refuse('lists an account twice.');
  if (message.instructions.length !== 1) throw refuse(`must contain exactly one instruction: ${what}.`);
  const ix = message.instructions[0]!;
  const accounts = ix.accountIndices ?? [];
  if (keys[ix.programAddressIndex] !== TOKEN_PROGRAM_ADDRESS) throw refuse('must call the SPL Token program.');
  if (accounts.includes(0)) throw refuse('must not use the fee payer in an instruction.');
  return {
    tx,
    payer,
    blockhash: message.lifetimeToken,
    keys,
    ix,
    accounts,
    readonlyStart: keys.length - h.numReadonlyNonSignerAccounts,
  };
}

/** The payer's signature is there and verifies, and the fee payer's slot is the only other one. */
export async function verifyPayerSigned({ tx, payer }: PayerSigned): Promise<void> {
  const payerSig = tx.signatures[payer as Address];
  if (!payerSig) throw invalid('transaction is not signed by the payer.', 'transaction');
  if (!(await verifySignature(await getPublicKeyFromAddress(payer as Address), payerSig, tx.messageBytes)))
    throw invalid('transaction has a payer signature that does not verify.', 'transaction');
  if (Object.keys(tx.signatures).length !== 2)
    throw invalid('transaction must have exactly two signature slots.', 'transaction');
}

export interface RelayResult {
  signature: string;
  status: 'pending' | 'signed' | 'broadcast' | 'sent' | 'failed';
}

export class RelayService {
  constructor(private readonly adapter: SolanaAdapter) {}

  /** Checks, co-signs, records and sends a payer-signed gasless USDC payment of `attempt`. */
  async submit(attempt: PayableAttempt, base64: string): Promise<RelayResult> {
    const adapter = this.adapter;
    const sender = adapter.sender;
    const token = attempt.token;
    if (!token.gasless || token.kind !== 'spl' || !token.contract || !sender)
      throw impossible(`${token.id} cannot be paid by signature; send the coins instead.`, 'attempt_id');
    if (!attempt.open)
      throw impossible('This coin choice is no longer open for payment; choose the coin again.', 'attempt_id');
    const hot = adapter.deps.keys.hotWallet();
    const checked = await checkRelayTransaction(base64, {
      feePayer: hot.address,
      mint: token.contract,
      decimals: token.decimals,
      amount: attempt.payAmount,
      destination: await associatedTokenAccount(attempt.address, token.contract),
    });
    const open = await adapter.deps.db
      .selectFrom('solana_gasless')
      .select('transfer_id')
      .where('attempt_id', '=', attempt.id)
      .where('active', '=', true)
      .executeTakeFirst();
    if (open) throw impossible('This coin choice is already being paid by signature.', 'attempt_id');

    const { raw, signature, lifetime } = await coSign(adapter, checked, 'transfer');
    const id = `gsl_${ulid()}`;
    try {
      await withTx(adapter.deps.db, async (tx) => {
        await sender.recordRelay(
          tx,
          id,
          { raw, signature, size: 0, ...lifetime },
          { token: token.id, destination: attempt.address, amount: attempt.payAmount },
        );
        await tx
          .insertInto('solana_gasless')
          .values({
            transfer_id: id,
            mode: adapter.mode,
            chain: adapter.network.id,
            attempt_id: attempt.id,
            payer: checked.payer,
            created_at: adapter.deps.clock.now(),
          })
          .execute();
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw impossible('This coin choice is already being paid by signature.', 'attempt_id');
      throw err;
    }
    adapter.deps.log.info(
      {
        transferId: id,
        paymentId: attempt.paymentId,
        attemptId: attempt.id,
        chain: adapter.network.id,
        mode: adapter.mode,
        signature,
      },
      'solana gasless payment accepted',
    );
    const row = await sender.pushOrLeave(id);
    return { signature, status: row.status };
  }
}

/**
 * Co-signs a checked payer-signed transaction as fee payer after the cluster still takes its blockhash, and
 * simulates it: it must go through and the hot wallet may lose only the fee. `what` names it in a refusal.
 */
export async function coSign(
  adapter: SolanaAdapter,
  checked: { tx: Transaction; blockhash: string },
  what: string,
): Promise<{ raw: string; signature: string; lifetime: Lifetime }> {
  const hot = adapter.deps.keys.hotWallet();
  const rpc = adapter.rpc();
  const valid = await rpc.request<{ value: boolean }>('isBlockhashValid', [
    checked.blockhash,
    { commitment: 'confirmed' },
  ]);
  if (!valid.value)
    throw invalid('transaction has a blockhash the cluster no longer accepts; build it again.', 'transaction');
  const signed = await partiallySignTransaction([await keyPairOf(hot)], checked.tx);
  const raw = b64.decode(getTransactionEncoder().encode(signed));
  const sim = await rpc.request<{
    value: { err: unknown; logs: string[] | null; accounts: Array<{ lamports: number } | null> | null };
  }>('simulateTransaction', [
    raw,
    {
      encoding: 'base64',
      sigVerify: true,
      commitment: 'confirmed',
      accounts: { encoding: 'base64', addresses: [hot.address] },
    },
  ]);
  if (sim.value.err !== null) {
    const logs = (sim.value.logs ?? []).join('\n');
    const reason = /insufficient funds/i.test(logs)
      ? 'the payer does not hold the amount'
      : /owner does not match|invalid account data/i.test(logs)
        ? 'the payer has no token account of this coin'
        : JSON.stringify(sim.value.err);
    throw impossible(`The ${what} would fail on chain: ${reason}.`, 'transaction');
  }
  const before = await rpc.request<{ value: number }>('getBalance', [hot.address, { commitment: 'confirmed' }]);
  const after = sim.value.accounts?.[0]?.lamports;
  if (after === undefined || BigInt(before.value) - BigInt(after) > 2n * LAMPORTS_PER_SIGNATURE) throw refuseSpend();

  return {
    raw,
    signature: getSignatureFromTransaction(signed),
    lifetime: { blockhash: checked.blockhash, lastValidBlockHeight: await lastValidHeight(adapter) },
  };
}

function refuseSpend(): ApiError {
  return invalid('transaction would spend more of the fee payer than the fee.', 'transaction');
}

/**
 * The last block height at which the relayed transaction can land. The payer's wallet signed a blockhash Kasse
 * handed out moments ago; NOTE: its exact height is not in the transaction, so the newest blockhash's last valid
 * height bounds it from above (the sender only rebuilds after this height is finalized — and a relay never rebuilds).
 */
async function lastValidHeight(adapter: SolanaAdapter): Promise<bigint> {
  return (await latestBlockhash(adapter)).lastValidBlockHeight;
}
