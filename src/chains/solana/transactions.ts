/**
 * Building and reading Solana transactions with @solana/kit and the System and Token program clients: associated
 * token accounts, the instructions of refunds, token accounts and sweeps, signing with Kasse's keys, and decoding
 * the accounts the sender and the sweep read.
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash as toBlockhash,
  createSignerFromKeyPair,
  createTransactionMessage,
  getBase64Decoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  getTransactionEncoder,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type KeyPairSigner,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import {
  AccountState,
  findAssociatedTokenPda,
  getCloseAccountInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getTokenDecoder,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { keyPairOf, type SolanaKey } from './keys.ts';

/** NOTE: Solana's packet limit: a serialized transaction is at most 1232 bytes. */
export const MAX_TRANSACTION_BYTES = 1232;
export const TOKEN_ACCOUNT_SIZE = 165;

export async function associatedTokenAccount(owner: string, mint: string): Promise<Address> {
  return (
    await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: TOKEN_PROGRAM_ADDRESS })
  )[0];
}

const signers = new WeakMap<SolanaKey, Promise<KeyPairSigner>>();

/** A kit signer of one of Kasse's keys (the WebCrypto key pair is made once per key object). */
export function signerOf(key: SolanaKey): Promise<KeyPairSigner> {
  let s = signers.get(key);
  if (!s) {
    s = keyPairOf(key).then((kp) => createSignerFromKeyPair(kp));
    signers.set(key, s);
  }
  return s;
}

export interface Lifetime {
  blockhash: string;
  lastValidBlockHeight: bigint;
}

export interface SignedTransaction {
  /** Base64 wire transaction, as sendTransaction takes it. */
  raw: string;
  signature: string;
  size: number;
}

/** A v0 message of `instructions` that lives until `lifetime`'s blockhash expires; its fee payer is set after. */
export function messageOf(instructions: Instruction[], lifetime: Lifetime) {
  return pipe(
    createTransactionMessage({ version: 0 }),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: toBlockhash(lifetime.blockhash), lastValidBlockHeight: lifetime.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
}

/** Signs a v0 transaction paid by `feePayer`; every signer the instructions name signs too. */
export async function signInstructions(
  feePayer: KeyPairSigner,
  instructions: Instruction[],
  lifetime: Lifetime,
): Promise<SignedTransaction> {
  const msg = setTransactionMessageFeePayerSigner(feePayer, messageOf(instructions, lifetime));
  const tx = await signTransactionMessageWithSigners(msg);
  return {
    raw: getBase64EncodedWireTransaction(tx),
    signature: getSignatureFromTransaction(tx),
    size: getTransactionEncoder().encode(tx).length,
  };
}

/** SOL or an SPL token from `source` (a signer) to `destination`'s wallet; the recipient's token account is opened if needed, paid by `payer`. */
export async function transferInstructions(
  payer: KeyPairSigner,
  source: KeyPairSigner,
  token: { kind: string; contract: string | null; decimals: number },
  destination: string,
  amount: bigint,
): Promise<Instruction[]> {
  if (token.kind === 'native')
    return [getTransferSolInstruction({ source, destination: address(destination), amount })];
  if (token.kind !== 'spl' || !token.contract) throw new Error(`a Solana transfer cannot move a ${token.kind} token`);
  const mint = address(token.contract);
  const to = await associatedTokenAccount(destination, mint);
  return [
    getCreateAssociatedTokenIdempotentInstruction({ payer, ata: to, owner: address(destination), mint }),
    getTransferCheckedInstruction({
      source: await associatedTokenAccount(source.address, mint),
      mint,
      destination: to,
      authority: source,
      amount,
      decimals: token.decimals,
    }),
  ];
}

export function openTokenAccountInstruction(
  payer: KeyPairSigner,
  owner: string,
  mint: string,
  ata: Address,
): Instruction {
  return getCreateAssociatedTokenIdempotentInstruction({ payer, ata, owner: address(owner), mint: address(mint) });
}

/**
 * Moves a token account's whole `amount` to `to` (an existing token account) and closes it, its rent to `rentTo`
 * (null: the account stays open).
 */
export function emptyTokenAccountInstructions(
  owner: KeyPairSigner,
  account: Address,
  mint: string,
  decimals: number,
  amount: bigint,
  to: Address,
  rentTo: string | null,
): Instruction[] {
  const out: Instruction[] = [];
  if (amount > 0n)
    out.push(
      getTransferCheckedInstruction({
        source: account,
        mint: address(mint),
        destination: to,
        authority: owner,
        amount,
        decimals,
      }),
    );
  if (rentTo !== null) out.push(getCloseAccountInstruction({ account, destination: address(rentTo), owner }));
  return out;
}

export function solTransferInstruction(source: KeyPairSigner, destination: string, amount: bigint): Instruction {
  return getTransferSolInstruction({ source, destination: address(destination), amount });
}

/** An account as getAccountInfo / getMultipleAccounts answer it with base64 encoding. */
export interface RpcAccount {
  data: [string, 'base64'];
  lamports: number;
  owner: string;
}

const b64 = getBase64Decoder();
const tokenDecoder = getTokenDecoder();

/** An SPL Token account's mint, owner, amount, whether it is frozen and who may close it; null when it is not one. */
export function readTokenAccount(
  account: RpcAccount | null,
): { mint: string; owner: string; amount: bigint; frozen: boolean; closeAuthority: string | null } | null {
  if (!account || account.owner !== TOKEN_PROGRAM_ADDRESS) return null;
  const bytes = Buffer.from(account.data[0], 'base64');
  if (bytes.length !== TOKEN_ACCOUNT_SIZE) return null;
  const t = tokenDecoder.decode(bytes);
  return {
    mint: t.mint,
    owner: t.owner,
    amount: t.amount,
    frozen: t.state === AccountState.Frozen,
    closeAuthority: t.closeAuthority.__option === 'Some' ? t.closeAuthority.value : null,
  };
}

export { b64 as base64Decoder, TOKEN_PROGRAM_ADDRESS };
