/**
 * A Solana ledger for tests: LiteSVM executes the transactions, this class lays them out as a chain of slots the
 * way a validator's RPC presents it. Transactions are executed when they arrive (visible at `processed`) and go into
 * the block of the next slot produced; every produced block is `confirmed` at once, and a block becomes `finalized`
 * when `finalityDepth` blocks are built on it (or `finalize()` is called). Controls: produce slots, skip slots (slot
 * numbers without a block, as when a leader misses its turn), and drop a transaction before finality (its block and
 * every block after it leave the chain, their state is rolled back, and the other transactions are replayed into
 * the next block, as on a fork that lost).
 *
 * Recent blockhashes are checked here, not by LiteSVM: a transaction's blockhash must be a block of this fork at most
 * 150 blocks below the block it lands in (`lastValidBlockHeight` = height + 150). Signatures are verified by LiteSVM.
 * Account state is LiteSVM's current state at every commitment (no historical state), which is all tests read.
 */
import { randomBytes } from 'node:crypto';
import {
  address,
  getBase58Decoder,
  getBase58Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  lamports,
  type Address,
  type EncodedAccount,
  type MaybeEncodedAccount,
  type Transaction,
} from '@solana/kit';
import { LiteSVM } from 'litesvm';

export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
/** NOTE: Solana's MAX_PROCESSING_AGE: a blockhash is usable for 150 blocks. */
export const BLOCKHASH_VALIDITY = 150n;
const LAMPORTS_PER_SIGNATURE = 5000n;

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: { amount: string; decimals: number; uiAmount: number | null; uiAmountString: string };
}

export interface LedgerTx {
  signature: string;
  wire: Uint8Array;
  version: 'legacy' | 0;
  accountKeys: Array<{ pubkey: string; signer: boolean; writable: boolean }>;
  recentBlockhash: string;
  header: { numRequiredSignatures: number; numReadonlySignedAccounts: number; numReadonlyUnsignedAccounts: number };
  instructions: Array<{ programIdIndex: number; accounts: number[]; data: Uint8Array }>;
  /** Account state before the transaction, for rolling it back when its block leaves the chain. */
  before: MaybeEncodedAccount[];
  err: unknown;
  fee: bigint;
  preBalances: bigint[];
  postBalances: bigint[];
  preTokenBalances: TokenBalance[];
  postTokenBalances: TokenBalance[];
  logMessages: string[];
  innerInstructions: Array<{
    index: number;
    instructions: Array<{ programIdIndex: number; accounts: number[]; data: Uint8Array; stackHeight: number }>;
  }>;
  computeUnitsConsumed: bigint;
}

export interface Block {
  slot: bigint;
  parentSlot: bigint;
  blockhash: string;
  previousBlockhash: string;
  blockHeight: bigint;
  blockTime: number;
  txs: LedgerTx[];
}

/** A JSON-RPC error as a Solana node sends it. */
export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

const b58 = getBase58Decoder();
const b58enc = getBase58Encoder();
const txDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();

const randomHash = (): string => b58.decode(randomBytes(32));

/**
 * A LiteSVM error rendered as the JSON a Solana node sends (`"AccountNotFound"`, `{"InstructionError":[0,{"Custom":1}]}`),
 * read from its Rust debug text.
 */
export function errJson(text: string): unknown {
  const parse = (s: string): unknown => {
    s = s.trim();
    const call = /^(\w+)\((.*)\)$/s.exec(s);
    if (call) {
      const parts = splitTop(call[2]!);
      const args = parts.map((p) => (/^\d+$/.test(p.trim()) ? Number(p.trim()) : parse(p)));
      return { [call[1]!]: args.length === 1 ? args[0] : args };
    }
    const struct = /^(\w+) \{(.*)\}$/s.exec(s);
    if (struct) {
      const fields: Record<string, unknown> = {};
      for (const f of splitTop(struct[2]!)) {
        const [k, v] = f.split(':').map((x) => x.trim());
        fields[k!] = /^\d+$/.test(v!) ? Number(v) : v;
      }
      return { [struct[1]!]: fields };
    }
    return s;
  };
  return parse(text);
}

function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const c of s) {
    if (c === '(' || c === '{') depth++;
    if (c === ')' || c === '}') depth--;
    if (c === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  if (cur.trim()) out.push(cur);
  return out;
}

/** Errors that keep a transaction out of the block (nothing executed, no fee), as opposed to failing inside it. */
const REJECTED =
  /^(AccountNotFound|InsufficientFundsForFee|InvalidAccountForFee|SignatureFailure|MissingSignatureForFee|SanitizeFailure|AccountInUse|AccountLoadedTwice|ProgramAccountNotFound|InvalidAccountIndex|InvalidProgramForExecution|UnsupportedVersion|TooManyAccountLocks)/;

export class SolanaValidator {
  readonly svm: LiteSVM;
  /** The blocks of the current fork, oldest first; blocks[0] is genesis. */
  readonly blocks: Block[] = [];
  /** Transactions executed since the last produced block (`processed`). */
  private open: LedgerTx[] = [];
  private nextSlot = 1n;
  private finalizedIndex = 0;
  finalityDepth: number;
  /** Unix seconds for the next blocks; null = the wall clock. */
  time: number | null = null;
  /** Signatures of transactions that left the chain by `dropTransaction` (never replayed). */
  private readonly dropped = new Set<string>();
  /** Called after every change of the slots: a block produced, slots skipped, finality moved, a fork (PubSub). */
  readonly slotListeners = new Set<() => void>();
  /** Funds airdrops (a real transfer, visible in blocks). */
  private faucet: { address: Address; keyPair: CryptoKeyPair } | null = null;

  constructor(opts: { finalityDepth?: number } = {}) {
    this.finalityDepth = opts.finalityDepth ?? 32;
    this.svm = new LiteSVM().withBlockhashCheck(false).withTransactionHistory(0n).withSigverify(true);
    this.blocks.push({
      slot: 0n,
      parentSlot: 0n,
      blockhash: randomHash(),
      previousBlockhash: '11111111111111111111111111111111',
      blockHeight: 0n,
      blockTime: this.now(),
      txs: [],
    });
  }

  private now(): number {
    return this.time ?? Math.floor(Date.now() / 1000);
  }

  get tip(): Block {
    return this.blocks[this.blocks.length - 1]!;
  }

  get finalized(): Block {
    return this.blocks[this.finalizedIndex]!;
  }

  /** The newest block at `commitment` (processed = confirmed here: the open slot has no block yet). */
  head(commitment: Commitment): Block {
    return commitment === 'finalized' ? this.finalized : this.tip;
  }

  /** The slot number the next block will take (getSlot at processed). */
  get currentSlot(): bigint {
    return this.nextSlot;
  }

  // ---- controls -------------------------------------------------------------------------------------------------

  /** Closes the open slot as a block and produces `n - 1` more (empty) blocks; returns the new tip. */
  produceSlots(n = 1): Block {
    for (let i = 0; i < n; i++) {
      const parent = this.tip;
      const slot = this.nextSlot++;
      this.blocks.push({
        slot,
        parentSlot: parent.slot,
        blockhash: randomHash(),
        previousBlockhash: parent.blockhash,
        blockHeight: parent.blockHeight + 1n,
        blockTime: this.now(),
        txs: this.open.map((t) => t),
      });
      this.open = [];
      this.svm.warpToSlot(slot + 1n);
      const due = this.blocks.length - 1 - this.finalityDepth;
      if (due > this.finalizedIndex) this.finalizedIndex = due;
      this.slotsChanged();
    }
    return this.tip;
  }

  private slotsChanged(): void {
    for (const listener of this.slotListeners) listener();
  }

  /** Leaders miss `n` slots: slot numbers pass without a block. */
  skipSlots(n = 1): void {
    this.nextSlot += BigInt(n);
    this.svm.warpToSlot(this.nextSlot);
    this.slotsChanged();
  }

  /** Every produced block becomes final. */
  finalize(): void {
    this.finalizedIndex = this.blocks.length - 1;
    this.slotsChanged();
  }

  /**
   * A fork drops the block holding `signature` (and every block after it, and the open slot): their state is rolled
   * back and, unless `replay` is false, their other transactions are executed again into the open slot (they land
   * in the next block). The dropped slots stay empty on this fork. Refused for a finalized block.
   */
  dropTransaction(signature: string, opts: { replay?: boolean } = {}): { droppedSlots: string[] } {
    const inOpen = this.open.some((t) => t.signature === signature);
    const at = inOpen ? this.blocks.length : this.blocks.findIndex((b) => b.txs.some((t) => t.signature === signature));
    if (at < 0) throw new RpcFailure(-32602, `transaction ${signature} is not on the chain`);
    if (at <= this.finalizedIndex) throw new RpcFailure(-32602, `transaction ${signature} is in a finalized block`);
    const removed = this.blocks.splice(at);
    const undone = [...removed.flatMap((b) => b.txs), ...this.open];
    this.open = [];
    for (const tx of [...undone].reverse()) this.rollBack(tx);
    this.dropped.add(signature);
    if (opts.replay !== false) {
      for (const tx of undone) {
        if (tx.signature === signature) continue;
        try {
          this.execute(txDecoder.decode(tx.wire), tx.wire);
        } catch {
          // no longer valid on this fork: it vanishes too
        }
      }
    }
    this.slotsChanged();
    return { droppedSlots: removed.map((b) => b.slot.toString()) };
  }

  // ---- transactions ---------------------------------------------------------------------------------------------

  /** The block of this fork with `hash`, if its transactions may still use it in the next block. */
  blockhashValid(hash: string): boolean {
    const b = this.blocks.find((x) => x.blockhash === hash);
    return !!b && this.tip.blockHeight + 1n <= b.blockHeight + BLOCKHASH_VALIDITY;
  }

  /** Where a signature is: the open slot (processed), a block, or nowhere. */
  findTransaction(signature: string): { tx: LedgerTx; block: Block | null } | null {
    const open = this.open.find((t) => t.signature === signature);
    if (open) return { tx: open, block: null };
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      const tx = this.blocks[i]!.txs.find((t) => t.signature === signature);
      if (tx) return { tx, block: this.blocks[i]! };
    }
    return null;
  }

  isFinalized(block: Block): boolean {
    return block.slot <= this.finalized.slot && this.blocks.indexOf(block) <= this.finalizedIndex;
  }

  /** Checks and executes a wire transaction (sendTransaction): the checks a node's preflight and banking stage make. */
  submit(wire: Uint8Array, opts: { skipPreflight?: boolean } = {}): string {
    let tx: Transaction;
    try {
      tx = txDecoder.decode(wire);
    } catch (err) {
      throw new RpcFailure(
        -32602,
        `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${(err as Error).message}`,
      );
    }
    const signature = firstSignature(tx);
    const message = messageDecoder.decode(tx.messageBytes);
    const preflight = (err: unknown, message: string, logs: string[] = []) =>
      new RpcFailure(-32002, `Transaction simulation failed: ${message}`, {
        err,
        logs,
        accounts: null,
        unitsConsumed: 0,
        returnData: null,
        innerInstructions: null,
      });
    if (this.findTransaction(signature)) {
      if (opts.skipPreflight) return signature;
      throw preflight('AlreadyProcessed', 'This transaction has already been processed');
    }
    if (!this.blockhashValid(message.lifetimeToken)) {
      if (opts.skipPreflight) return signature;
      throw preflight('BlockhashNotFound', 'Blockhash not found');
    }
    if (Object.values(tx.signatures).some((s) => s === null))
      throw new RpcFailure(-32003, 'Transaction signature verification failure');
    if (!opts.skipPreflight) {
      const sim = this.simulate(tx, true);
      if (sim.err !== null) throw preflight(sim.err, describe(sim.err), sim.logs);
    }
    this.execute(tx, wire);
    return signature;
  }

  /** Runs a transaction without keeping its effects. */
  simulate(
    tx: Transaction,
    sigVerify: boolean,
  ): { err: unknown; logs: string[]; unitsConsumed: bigint; postAccounts: EncodedAccount[] } {
    this.svm.withSigverify(sigVerify);
    try {
      const r = this.svm.simulateTransaction(tx);
      if ('err' in r && typeof (r as { err?: unknown }).err === 'function') {
        const failed = r as unknown as {
          err(): unknown;
          meta(): { logs(): string[]; computeUnitsConsumed(): bigint };
          toString(): string;
        };
        return {
          err: errOf(failed.toString()),
          logs: failed.meta().logs(),
          unitsConsumed: failed.meta().computeUnitsConsumed(),
          postAccounts: [],
        };
      }
      const ok = r as unknown as {
        meta(): { logs(): string[]; computeUnitsConsumed(): bigint };
        postAccounts(): EncodedAccount[];
      };
      return {
        err: null,
        logs: ok.meta().logs(),
        unitsConsumed: ok.meta().computeUnitsConsumed(),
        postAccounts: ok.postAccounts(),
      };
    } finally {
      this.svm.withSigverify(true);
    }
  }

  /** Executes into the open slot (the transaction was checked); a transaction that cannot even pay its fee is not kept. */
  private execute(tx: Transaction, wire: Uint8Array): LedgerTx | null {
    const message = messageDecoder.decode(tx.messageBytes);
    if (message.version === 1) throw new RpcFailure(-32015, 'Transaction version (1) is not supported');
    if ('addressTableLookups' in message && (message.addressTableLookups?.length ?? 0) > 0)
      throw new RpcFailure(-32602, 'address lookup tables are not supported by this test validator');
    const h = message.header;
    const keys = message.staticAccounts.map((pubkey, i) => {
      const signer = i < h.numSignerAccounts;
      const writable = signer
        ? i < h.numSignerAccounts - h.numReadonlySignerAccounts
        : i < message.staticAccounts.length - h.numReadonlyNonSignerAccounts;
      return { pubkey, signer, writable };
    });
    const before = keys.map((k) => this.svm.getAccount(address(k.pubkey)));
    const preTokenBalances = this.tokenBalances(keys.map((k) => k.pubkey));
    const result = this.svm.sendTransaction(tx) as unknown as {
      err?: () => unknown;
      meta?: () => Meta;
      toString(): string;
    } & Partial<Meta>;
    const failed = typeof result.err === 'function';
    const meta: Meta = failed ? result.meta!() : (result as unknown as Meta);
    const err = failed ? errOf(result.toString()) : null;
    if (failed && typeof err === 'string' && REJECTED.test(err)) {
      // Not executed: restore anything LiteSVM touched and keep it out of the ledger.
      keys.forEach((k, i) => {
        this.restore(k.pubkey, before[i]!);
      });
      return null;
    }
    const after = keys.map((k) => this.svm.getAccount(address(k.pubkey)));
    const ledgerTx: LedgerTx = {
      signature: firstSignature(tx),
      wire,
      version: message.version === 'legacy' ? 'legacy' : 0,
      accountKeys: keys,
      recentBlockhash: message.lifetimeToken,
      header: {
        numRequiredSignatures: h.numSignerAccounts,
        numReadonlySignedAccounts: h.numReadonlySignerAccounts,
        numReadonlyUnsignedAccounts: h.numReadonlyNonSignerAccounts,
      },
      instructions: message.instructions.map((ix) => ({
        programIdIndex: ix.programAddressIndex,
        accounts: [...(ix.accountIndices ?? [])],
        data: Uint8Array.from(ix.data ?? []),
      })),
      before,
      err,
      fee: LAMPORTS_PER_SIGNATURE * BigInt(h.numSignerAccounts),
      preBalances: before.map((a) => (a.exists ? a.lamports : 0n)),
      postBalances: after.map((a) => (a.exists ? a.lamports : 0n)),
      preTokenBalances,
      postTokenBalances: this.tokenBalances(keys.map((k) => k.pubkey)),
      logMessages: meta.logs(),
      innerInstructions: meta
        .innerInstructions()
        .map((list, index) => ({
          index,
          instructions: list.map((ii) => {
            const ix = ii.instruction();
            return {
              programIdIndex: ix.programIdIndex(),
              accounts: [...ix.accounts()],
              data: ix.data(),
              stackHeight: ii.stackHeight(),
            };
          }),
        }))
        .filter((x) => x.instructions.length > 0),
      computeUnitsConsumed: meta.computeUnitsConsumed(),
    };
    this.open.push(ledgerTx);
    return ledgerTx;
  }

  private rollBack(tx: LedgerTx): void {
    tx.accountKeys.forEach((k, i) => {
      this.restore(k.pubkey, tx.before[i]!);
    });
  }

  private restore(pubkey: string, account: MaybeEncodedAccount): void {
    if (account.exists) this.svm.setAccount(account);
    else
      this.svm.setAccount({
        address: address(pubkey),
        lamports: lamports(0n),
        programAddress: address('11111111111111111111111111111111'),
        data: new Uint8Array(),
        executable: false,
        space: 0n,
      } as unknown as EncodedAccount);
  }

  /** Token balances (SPL Token accounts among `keys`), as transaction metadata lists them. */
  tokenBalances(keys: string[]): TokenBalance[] {
    const out: TokenBalance[] = [];
    keys.forEach((k, accountIndex) => {
      const t = this.tokenAccount(k);
      if (!t) return;
      out.push({
        accountIndex,
        mint: t.mint,
        owner: t.owner,
        programId: TOKEN_PROGRAM,
        uiTokenAmount: uiAmount(t.amount, t.decimals),
      });
    });
    return out;
  }

  /** An SPL Token account's mint, owner, amount and the mint's decimals; null for anything else. */
  tokenAccount(key: string): { mint: string; owner: string; amount: bigint; decimals: number } | null {
    const a = this.svm.getAccount(address(key));
    if (!a.exists || a.programAddress !== TOKEN_PROGRAM || a.data.length !== 165) return null;
    const mint = b58.decode(a.data.subarray(0, 32));
    const m = this.svm.getAccount(address(mint));
    const decimals = m.exists ? m.data[44]! : 0;
    return {
      mint,
      owner: b58.decode(a.data.subarray(32, 64)),
      amount: new DataView(a.data.buffer, a.data.byteOffset).getBigUint64(64, true),
      decimals,
    };
  }

  /** Every SPL Token account whose owner field is `owner` (what getTokenAccountsByOwner scans), by address. */
  tokenAccountsOf(owner: string): Array<{ pubkey: string; mint: string; amount: bigint }> {
    return this.svm
      .getProgramAccounts(address(TOKEN_PROGRAM))
      .filter((a) => a.data.length === 165 && b58.decode(a.data.subarray(32, 64)) === owner)
      .map((a) => ({
        pubkey: a.address as string,
        mint: b58.decode(a.data.subarray(0, 32)),
        amount: new DataView(a.data.buffer, a.data.byteOffset).getBigUint64(64, true),
      }))
      .sort((x, y) => (x.pubkey < y.pubkey ? -1 : 1));
  }

  /** Whether `key` is an SPL Token mint. */
  tokenMint(key: string): boolean {
    const a = this.svm.getAccount(address(key));
    return a.exists && a.programAddress === TOKEN_PROGRAM && a.data.length === 82;
  }

  /** Sends `lamports` from the harness faucet as a real transfer (it lands in the next block). */
  async airdrop(to: string, amount: bigint): Promise<string> {
    const kit = await import('@solana/kit');
    const { getTransferSolInstruction } = await import('@solana-program/system');
    if (!this.faucet) {
      const signer = await kit.generateKeyPairSigner();
      this.svm.setAccount({
        address: signer.address,
        lamports: lamports(10n ** 18n),
        programAddress: address('11111111111111111111111111111111'),
        data: new Uint8Array(),
        executable: false,
        space: 0n,
      } as unknown as EncodedAccount);
      this.faucet = { address: signer.address, keyPair: signer.keyPair };
    }
    const signer = await kit.createSignerFromKeyPair(this.faucet.keyPair);
    const msg = kit.pipe(
      kit.createTransactionMessage({ version: 0 }),
      (m) => kit.setTransactionMessageFeePayerSigner(signer, m),
      (m) =>
        kit.setTransactionMessageLifetimeUsingBlockhash(
          {
            blockhash: kit.blockhash(this.tip.blockhash),
            lastValidBlockHeight: this.tip.blockHeight + BLOCKHASH_VALIDITY,
          },
          m,
        ),
      (m) =>
        kit.appendTransactionMessageInstruction(
          getTransferSolInstruction({ source: signer, destination: address(to), amount }),
          m,
        ),
    );
    const tx = await kit.signTransactionMessageWithSigners(msg);
    return this.submit(kit.getTransactionEncoder().encode(tx) as Uint8Array, { skipPreflight: false });
  }
}

interface Meta {
  logs(): string[];
  innerInstructions(): Array<
    Array<{
      instruction(): { programIdIndex(): number; accounts(): Uint8Array; data(): Uint8Array };
      stackHeight(): number;
    }>
  >;
  computeUnitsConsumed(): bigint;
}

function firstSignature(tx: Transaction): string {
  const sig = Object.values(tx.signatures)[0];
  return sig ? b58.decode(sig) : '1111111111111111111111111111111111111111111111111111111111111111';
}

/** The `err` of a LiteSVM failure's debug text (`FailedTransactionMetadata { err: X, meta: … }`). */
function errOf(text: string): unknown {
  const m = /err: (.*?), meta: TransactionMetadata/s.exec(text);
  return errJson(m ? m[1]! : text);
}

/** What a Solana node says of a transaction error (the `Display` of Agave's `TransactionError`), as preflight messages read. */
const ERROR_TEXT: Record<string, string | ((fields: Record<string, unknown>) => string)> = {
  AccountInUse: 'Account in use',
  AccountLoadedTwice: 'Account loaded twice',
  AccountNotFound: 'Attempt to debit an account but found no record of a prior credit.',
  ProgramAccountNotFound: 'Attempt to load a program that does not exist',
  InsufficientFundsForFee: 'Insufficient funds for fee',
  InvalidAccountForFee: 'This account may not be used to pay transaction fees',
  AlreadyProcessed: 'This transaction has already been processed',
  BlockhashNotFound: 'Blockhash not found',
  MissingSignatureForFee: 'Transaction requires a fee but has no signature present',
  InvalidAccountIndex: 'Transaction contains an invalid account reference',
  SignatureFailure: 'Transaction did not pass signature verification',
  InvalidProgramForExecution: 'This program may not be used for executing instructions',
  SanitizeFailure: 'Transaction failed to sanitize accounts offsets correctly',
  UnsupportedVersion: 'Transaction version is unsupported',
  InvalidWritableAccount: 'Transaction loads a writable account that cannot be written',
  TooManyAccountLocks: 'Transaction locked too many accounts',
  InsufficientFundsForRent: (f) =>
    `Transaction results in an account (${f.account_index}) with insufficient funds for rent`,
  ProgramExecutionTemporarilyRestricted: (f) =>
    `Execution of the program referenced by account at index ${f.account_index} is temporarily restricted.`,
};

function describe(err: unknown): string {
  if (err && typeof err === 'object' && 'InstructionError' in err) {
    const [i, e] = (err as { InstructionError: [number, unknown] }).InstructionError;
    return `Error processing Instruction ${i}: ${typeof e === 'object' && e && 'Custom' in e ? `custom program error: 0x${Number((e as { Custom: number }).Custom).toString(16)}` : String(e)}`;
  }
  const [name, fields] =
    typeof err === 'string'
      ? [err, {}]
      : err && typeof err === 'object'
        ? (Object.entries(err)[0] ?? ['', {}])
        : ['', {}];
  const text = ERROR_TEXT[name];
  if (typeof text === 'function')
    return text(fields && typeof fields === 'object' ? (fields as Record<string, unknown>) : {});
  return text ?? (typeof err === 'string' ? err : JSON.stringify(err));
}

export function uiAmount(amount: bigint, decimals: number): TokenBalance['uiTokenAmount'] {
  const base = 10n ** BigInt(decimals);
  const frac = (amount % base).toString().padStart(decimals, '0').replace(/0+$/, '');
  const text = frac ? `${amount / base}.${frac}` : `${amount / base}`;
  return { amount: amount.toString(), decimals, uiAmount: Number(text), uiAmountString: text };
}

export { b58enc as base58Encoder };
