/**
 * Test helpers over a Solana test node (solana.ts), spoken to over JSON-RPC only, as a payer's wallet would: funded
 * wallets (airdrops), a USDC-like mint, SOL and SPL transfers signed by real keys, and the node's controls.
 */
import {
  address,
  appendTransactionMessageInstructions,
  blockhash,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64Decoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type KeyPairSigner,
  type Transaction,
} from '@solana/kit';
import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeAccount3Instruction,
  getInitializeMint2Instruction,
  getMintSize,
  getMintToCheckedInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';

export type Wallet = KeyPairSigner;

export class SolanaRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export class SolanaTestChain {
  /** The mint tests use as USDC (6 decimals), after `createUsdc()`. */
  usdc: Address | null = null;
  private mintAuthority: Wallet | null = null;

  constructor(readonly url: string) {}

  async rpc<T = any>(method: string, params: unknown[] = []): Promise<T> {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await res.json()) as { result?: T; error?: { code: number; message: string; data?: unknown } };
    if (body.error) throw new SolanaRpcError(body.error.code, `${method}: ${body.error.message}`, body.error.data);
    return body.result as T;
  }

  produce(n = 1): Promise<number> {
    return this.rpc('harness_produceSlots', [n]);
  }
  skip(n = 1): Promise<number> {
    return this.rpc('harness_skipSlots', [n]);
  }
  finalize(): Promise<number> {
    return this.rpc('harness_finalize');
  }
  drop(signature: string, replay = true): Promise<{ droppedSlots: string[] }> {
    return this.rpc('harness_dropTransaction', [signature, { replay }]);
  }
  state(): Promise<{ tip: number; finalized: number; next_slot: number; block_height: number }> {
    return this.rpc('harness_state');
  }

  async balance(owner: string): Promise<bigint> {
    return BigInt((await this.rpc<{ value: number }>('getBalance', [owner, { commitment: 'processed' }])).value);
  }

  /** USDC held by `owner`'s associated token account (0 when it has none). */
  async tokenBalance(owner: string, mint: string = this.usdc!): Promise<bigint> {
    const [ata] = await findAssociatedTokenPda({
      owner: address(owner),
      mint: address(mint),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    });
    const info = await this.rpc<{ value: unknown }>('getAccountInfo', [
      ata,
      { encoding: 'base64', commitment: 'processed' },
    ]);
    if (!info.value) return 0n;
    return BigInt(
      (await this.rpc<{ value: { amount: string } }>('getTokenAccountBalance', [ata, { commitment: 'processed' }]))
        .value.amount,
    );
  }

  async exists(key: string): Promise<boolean> {
    return (
      (await this.rpc<{ value: unknown }>('getAccountInfo', [key, { encoding: 'base64', commitment: 'processed' }]))
        .value !== null
    );
  }

  /** A new wallet holding `sol` lamports (airdropped in the open slot; produce a slot to land it). */
  async newWallet(lamports = 10_000_000_000n): Promise<Wallet> {
    const w = await generateKeyPairSigner();
    if (lamports > 0n) await this.rpc('requestAirdrop', [w.address, Number(lamports)]);
    return w;
  }

  async latestBlockhash(): Promise<{ blockhash: string; lastValidBlockHeight: bigint }> {
    const r = await this.rpc<{ value: { blockhash: string; lastValidBlockHeight: number } }>('getLatestBlockhash', [
      { commitment: 'confirmed' },
    ]);
    return { blockhash: r.value.blockhash, lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight) };
  }

  /** Signs `instructions` with `payer` as fee payer (and any signers they carry). */
  async sign(payer: Wallet, instructions: Instruction[]): Promise<Transaction> {
    const bh = await this.latestBlockhash();
    const msg = pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: blockhash(bh.blockhash), lastValidBlockHeight: bh.lastValidBlockHeight },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    return signTransactionMessageWithSigners(msg);
  }

  /** Sends a signed transaction (with preflight); returns its signature. */
  async send(tx: Transaction): Promise<string> {
    await this.rpc('sendTransaction', [getBase64EncodedWireTransaction(tx), { encoding: 'base64' }]);
    return getSignatureFromTransaction(tx);
  }

  async sendSol(from: Wallet, to: string, lamports: bigint): Promise<string> {
    return this.send(
      await this.sign(from, [getTransferSolInstruction({ source: from, destination: address(to), amount: lamports })]),
    );
  }

  /** Creates the USDC-like mint (6 decimals) in the open slot. */
  async createUsdc(funder: Wallet): Promise<Address> {
    const { mint, authority } = await this.createMint(funder, 6);
    this.mintAuthority = authority;
    this.usdc = mint;
    return mint;
  }

  /** Creates a mint of `decimals` in the open slot; returns it with its mint authority. */
  async createMint(funder: Wallet, decimals: number): Promise<{ mint: Address; authority: Wallet }> {
    const mint = await generateKeyPairSigner();
    const authority = await generateKeyPairSigner();
    const rent = BigInt(await this.rpc<number>('getMinimumBalanceForRentExemption', [getMintSize()]));
    await this.send(
      await this.sign(funder, [
        getCreateAccountInstruction({
          payer: funder,
          newAccount: mint,
          lamports: rent,
          space: getMintSize(),
          programAddress: TOKEN_PROGRAM_ADDRESS,
        }),
        getInitializeMint2Instruction({ mint: mint.address, decimals, mintAuthority: authority.address }),
      ]),
    );
    return { mint: mint.address, authority };
  }

  /**
   * Opens a token account of `mint` owned by `owner` that is NOT its associated one (a fresh keypair account, as a
   * wallet or a program may make), paid by `payer`; then, when given, puts `fill.amount` into it: minted by
   * `fill.authority`, or else moved from the payer's associated account of the mint.
   */
  async openOtherTokenAccount(
    payer: Wallet,
    owner: string,
    mintKey: string,
    fill?: { amount: bigint; decimals: number; authority?: Wallet },
  ): Promise<Address> {
    const mint = address(mintKey);
    const account = await generateKeyPairSigner();
    const rent = BigInt(await this.rpc<number>('getMinimumBalanceForRentExemption', [165]));
    const ixs: Instruction[] = [
      getCreateAccountInstruction({
        payer,
        newAccount: account,
        lamports: rent,
        space: 165,
        programAddress: TOKEN_PROGRAM_ADDRESS,
      }),
      getInitializeAccount3Instruction({ account: account.address, mint, owner: address(owner) }),
    ];
    if (fill?.authority)
      ixs.push(
        getMintToCheckedInstruction({
          mint,
          token: account.address,
          mintAuthority: fill.authority,
          amount: fill.amount,
          decimals: fill.decimals,
        }),
      );
    else if (fill)
      ixs.push(
        getTransferCheckedInstruction({
          source: await this.ata(payer.address, mint),
          mint,
          destination: account.address,
          authority: payer,
          amount: fill.amount,
          decimals: fill.decimals,
        }),
      );
    await this.send(await this.sign(payer, ixs));
    return account.address;
  }

  async ata(owner: string, mint: string = this.usdc!): Promise<Address> {
    return (
      await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    )[0];
  }

  /** Mints USDC to `owner`'s associated token account (created if needed), paid by `funder`. */
  async mintUsdc(funder: Wallet, owner: string, amount: bigint): Promise<string> {
    const ata = await this.ata(owner);
    return this.send(
      await this.sign(funder, [
        getCreateAssociatedTokenIdempotentInstruction({ payer: funder, ata, owner: address(owner), mint: this.usdc! }),
        getMintToCheckedInstruction({
          mint: this.usdc!,
          token: ata,
          mintAuthority: this.mintAuthority!,
          amount,
          decimals: 6,
        }),
      ]),
    );
  }

  /**
   * The transfer a wallet makes for a Solana Pay USDC request: TransferChecked from the payer's associated token
   * account to the recipient's, creating the recipient's first when `createAta` (the payer pays its rent).
   */
  usdcTransfer(from: Wallet, fromAta: Address, toAta: Address, amount: bigint): Instruction {
    return getTransferCheckedInstruction({
      source: fromAta,
      mint: this.usdc!,
      destination: toAta,
      authority: from,
      amount,
      decimals: 6,
    });
  }

  async sendUsdc(from: Wallet, toOwner: string, amount: bigint, opts: { createAta?: boolean } = {}): Promise<string> {
    const toAta = await this.ata(toOwner);
    const ixs: Instruction[] = [];
    if (opts.createAta)
      ixs.push(
        getCreateAssociatedTokenIdempotentInstruction({
          payer: from,
          ata: toAta,
          owner: address(toOwner),
          mint: this.usdc!,
        }),
      );
    ixs.push(this.usdcTransfer(from, await this.ata(from.address), toAta, amount));
    return this.send(await this.sign(from, ixs));
  }

  /** Base64 of a wire transaction. */
  static base64(bytes: Uint8Array): string {
    return getBase64Decoder().decode(bytes);
  }
}
