/**
 * x402 on Solana: payloads the official `@x402/svm` exact client builds (Kasse's hot wallet as `extra.feePayer`)
 * are verified and settled by Kasse's scheme on the LiteSVM test node: the USDC lands in the merchant's receiving
 * key's token account, the payer needs no SOL, the hot wallet pays only the fee. Settling twice, or twice at once,
 * sends one transaction; a wrong recipient, mint or amount, a replay, a forged signature, a payer without the funds
 * and every way of making the fee payer pay more than the fee are refused with the official `invalidReason` codes.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  address,
  appendTransactionMessageInstructions,
  blockhash,
  compileTransaction,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64Decoder,
  getBase64Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
  partiallySignTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Instruction,
} from '@solana/kit';
import { getTransferSolInstruction } from '@solana-program/system';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { SOLANA_DEVNET_CAIP2 } from '@x402/svm';
import { SolanaX402, SVM_REASONS, type SvmRequirements } from '../../src/chains/solana/x402.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';
import type { Wallet } from '../harness/solana-chain.ts';

let k: SolanaKasse;
let scheme: SolanaX402;
/** The merchant's receiving key in these scheme-level tests (its token account exists). */
let payTo: string;

before(async () => {
  k = await startSolanaKasse();
  scheme = new SolanaX402(k.adapter);
  payTo = (await generateKeyPairSigner()).address;
  await k.chain.mintUsdc(k.funder, payTo, 0n);
  await k.chain.produce();
  // Blocks keep coming, as on a cluster: settle waits for its transaction to be confirmed.
  await k.chain.rpc('harness_autoProduce', [50]);
});
after(async () => {
  await k?.chain.rpc('harness_autoProduce', [0]).catch(() => {});
  await k?.close();
});

const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();

function requirements(
  amount: bigint,
  over: Partial<SvmRequirements> = {},
): SvmRequirements & {
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
} {
  return {
    scheme: 'exact',
    network: SOLANA_DEVNET_CAIP2,
    asset: k.usdc,
    amount: amount.toString(),
    payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: k.hotWallet },
    ...over,
  } as never;
}

/** A payer holding USDC and not a lamport of SOL. */
async function poorPayer(usdc = 10_000_000n): Promise<Wallet> {
  const w = await k.chain.newWallet(0n);
  await k.chain.mintUsdc(k.funder, w.address, usdc);
  await k.chain.produce();
  return w;
}

/** What the official client sends for `req`, as a PaymentPayload. */
async function officialPayload(payer: Wallet, req: ReturnType<typeof requirements>) {
  const client = new ExactSvmScheme(payer, { rpcUrl: k.node.urls[0] });
  const r = await client.createPaymentPayload(2, req as never);
  return { x402Version: 2, accepted: req, payload: r.payload as Record<string, unknown> };
}

/** A hand-built transaction with the hot wallet as fee payer, signed by `signers` (not the hot wallet). */
async function handBuilt(signers: Wallet[], instructions: Instruction[]): Promise<string> {
  const bh = await k.chain.latestBlockhash();
  const msg = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(address(k.hotWallet), m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: blockhash(bh.blockhash), lastValidBlockHeight: bh.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
  const tx = await partiallySignTransaction(
    signers.map((s) => s.keyPair),
    compileTransaction(msg),
  );
  return b64.decode(getTransactionEncoder().encode(tx));
}

const computeLimit = (units: number): Instruction => {
  const data = new Uint8Array(5);
  data[0] = 2;
  new DataView(data.buffer).setUint32(1, units, true);
  return { programAddress: address('ComputeBudget111111111111111111111111111111'), data };
};
const computePrice = (micro: bigint): Instruction => {
  const data = new Uint8Array(9);
  data[0] = 3;
  new DataView(data.buffer).setBigUint64(1, micro, true);
  return { programAddress: address('ComputeBudget111111111111111111111111111111'), data };
};
const memo = (text: string): Instruction => ({
  programAddress: address('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr'),
  data: new TextEncoder().encode(text),
});

async function usdcTransfer(from: Wallet, toOwner: string, amount: bigint, authority: Wallet = from) {
  return getTransferCheckedInstruction({
    source: await k.chain.ata(from.address),
    mint: k.usdc as never,
    destination: await k.chain.ata(toOwner),
    authority,
    amount,
    decimals: 6,
  });
}

async function relays(): Promise<number> {
  return (await k.t.kasse.db.selectFrom('solana_transfers').select('id').where('id', 'like', 'x402_%').execute())
    .length;
}

test('supported: the CAIP-2 devnet id in test mode and the hot wallet as fee payer', () => {
  assert.equal(scheme.network, SOLANA_DEVNET_CAIP2);
  assert.deepEqual(scheme.extra(), { feePayer: k.hotWallet });
  assert.equal(scheme.usdc?.contract, k.usdc);
});

test('a payment the official client builds is verified and settled; the payer needs no SOL', async () => {
  const payer = await poorPayer();
  const req = requirements(1_000n); // $0.001
  const payload = await officialPayload(payer, req);
  const hotBefore = await k.chain.balance(k.hotWallet);
  const toBefore = await k.chain.tokenBalance(payTo);

  const v = await scheme.verify(payload, req, payTo);
  assert.deepEqual(v, { isValid: true, payer: payer.address });

  const s = await scheme.settle(payload, req, payTo);
  assert.equal(s.success, true, JSON.stringify(s));
  assert.equal(s.payer, payer.address);
  assert.equal(s.network, SOLANA_DEVNET_CAIP2);
  const status = await k.chain.rpc('getSignatureStatuses', [[s.transaction], { searchTransactionHistory: true }]);
  assert.equal(status.value[0].err, null);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 1_000n);
  assert.equal(await k.chain.tokenBalance(payer.address), 10_000_000n - 1_000n);
  assert.equal(await k.chain.balance(payer.address), 0n);
  const spent = hotBefore - (await k.chain.balance(k.hotWallet));
  assert.ok(spent > 0n && spent <= 15_000n, `the hot wallet paid ${spent} lamports`);

  // The same payload settled again: the same transaction, nothing moved twice.
  const again = await scheme.settle(payload, req, payTo);
  assert.deepEqual(again, s);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 1_000n);
  // And it no longer verifies: it was settled.
  const replay = await scheme.verify(payload, req, payTo);
  assert.equal(replay.invalidReason, SVM_REASONS.duplicate);
});

test('two settles of one payload at once send exactly one transaction', async () => {
  const payer = await poorPayer();
  const req = requirements(10_000n);
  const payload = await officialPayload(payer, req);
  const before = await relays();
  const toBefore = await k.chain.tokenBalance(payTo);
  const [a, b] = await Promise.all([scheme.settle(payload, req, payTo), scheme.settle(payload, req, payTo)]);
  assert.equal(a.success, true, JSON.stringify(a));
  assert.equal(b.success, true, JSON.stringify(b));
  assert.equal(a.transaction, b.transaction);
  assert.equal(await relays(), before + 1);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 10_000n);
});

test('wrong recipient, mint, amount and network are refused and nothing moves', async () => {
  const payer = await poorPayer();
  const toBefore = await k.chain.tokenBalance(payTo);
  const other = (await generateKeyPairSigner()).address;
  await k.chain.mintUsdc(k.funder, other, 0n);
  await k.chain.produce();

  // The client paid someone else while the requirements name the merchant.
  const elsewhere = await officialPayload(payer, requirements(1_000n, { payTo: other }));
  const r1 = await scheme.verify(elsewhere, requirements(1_000n), payTo);
  assert.equal(r1.invalidReason, SVM_REASONS.recipient);
  // Requirements that are not this merchant's payTo.
  const r2 = await scheme.verify(elsewhere, requirements(1_000n, { payTo: other }), payTo);
  assert.equal(r2.invalidReason, SVM_REASONS.recipient);

  // Another mint.
  const { mint, authority } = await k.chain.createMint(k.funder, 6);
  await k.chain.produce();
  const fake = await officialPayload(payer, requirements(1_000n, { asset: mint }));
  assert.equal((await scheme.verify(fake, requirements(1_000n), payTo)).invalidReason, SVM_REASONS.mint);
  assert.equal(
    (await scheme.verify(fake, requirements(1_000n, { asset: mint }), payTo)).invalidReason,
    SVM_REASONS.mint,
  );
  void authority;

  // Less than asked.
  const under = await officialPayload(payer, requirements(999n));
  assert.equal((await scheme.verify(under, requirements(1_000n), payTo)).invalidReason, SVM_REASONS.amount);
  const settled = await scheme.settle(under, requirements(1_000n), payTo);
  assert.equal(settled.success, false);
  assert.equal(settled.errorReason, SVM_REASONS.amount);

  // Another network.
  const good = await officialPayload(payer, requirements(1_000n));
  assert.equal(
    (await scheme.verify(good, requirements(1_000n, { network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' }), payTo))
      .invalidReason,
    SVM_REASONS.network,
  );
  assert.equal(await k.chain.tokenBalance(payTo), toBefore);
});

test('a payer without the amount is refused with insufficient_funds', async () => {
  const payer = await poorPayer(500n);
  const req = requirements(1_000n);
  const payload = await officialPayload(payer, req);
  const v = await scheme.verify(payload, req, payTo);
  assert.equal(v.isValid, false);
  assert.equal(v.invalidReason, SVM_REASONS.insufficientFunds);
  assert.equal(v.payer, payer.address);
});

test('a forged or missing payer signature is refused', async () => {
  const payer = await poorPayer();
  const req = requirements(1_000n);
  const payload = await officialPayload(payer, req);
  const tx = getTransactionDecoder().decode(b64enc.encode(payload.payload.transaction as string));
  const forged = { ...tx, signatures: { ...tx.signatures, [payer.address]: new Uint8Array(64).fill(7) } };
  const bad = { ...payload, payload: { transaction: b64.decode(getTransactionEncoder().encode(forged as never)) } };
  assert.equal((await scheme.verify(bad, req, payTo)).invalidReason, SVM_REASONS.signature);
  const settled = await scheme.settle(bad, req, payTo);
  assert.equal(settled.errorReason, SVM_REASONS.signature);
});

test('the fee payer signs for the fee and nothing else', async () => {
  const payer = await poorPayer();
  const req = requirements(1_000n);
  const hot = { address: address(k.hotWallet) } as Wallet;
  const pay = await usdcTransfer(payer, payTo, 1_000n);
  const refusal = async (ixs: Instruction[], signers: Wallet[] = [payer]) =>
    (await scheme.verify({ accepted: req, payload: { transaction: await handBuilt(signers, ixs) } }, req, payTo))
      .invalidReason;

  // The layout the official client makes, by hand: accepted.
  assert.equal(await refusal([computeLimit(20_000), computePrice(1n), pay, memo('n1')]), undefined);
  // A System transfer out of the fee payer after the payment.
  const drain = getTransferSolInstruction({ source: hot as never, destination: payer.address, amount: 1_000_000n });
  assert.equal(await refusal([computeLimit(20_000), computePrice(1n), pay, drain]), SVM_REASONS.feePayerTransferring);
  // The fee payer as the token authority: Kasse's own USDC would move.
  const fromHot = getTransferCheckedInstruction({
    source: await k.chain.ata(k.hotWallet),
    mint: k.usdc as never,
    destination: await k.chain.ata(payTo),
    authority: hot as never,
    amount: 1_000n,
    decimals: 6,
  });
  assert.equal(await refusal([computeLimit(20_000), computePrice(1n), fromHot, pay]), SVM_REASONS.feePayerTransferring);
  // A priority fee the hot wallet would pay: 1 SOL worth of compute price.
  assert.equal(
    await refusal([computeLimit(1_400_000), computePrice(1_000_000_000n), pay]),
    SVM_REASONS.computePriceTooHigh,
  );
  // A third signer.
  const third = await k.chain.newWallet(0n);
  const withThird = { ...memo('x'), accounts: [{ address: third.address, role: 2 /* READONLY_SIGNER */ }] };
  assert.equal(
    await refusal([computeLimit(20_000), computePrice(1n), pay, withThird as never], [payer, third]),
    SVM_REASONS.signers,
  );
  // No compute budget layout, or another program after the transfer.
  assert.equal(await refusal([pay, memo('a'), memo('b')]), SVM_REASONS.computeLimit);
  const sol = getTransferSolInstruction({ source: payer, destination: address(payTo), amount: 1n });
  assert.equal(await refusal([computeLimit(20_000), computePrice(1n), pay, sol]), SVM_REASONS.optional);
  // Another fee payer than Kasse's.
  const own = await k.chain.newWallet(10_000_000n);
  await k.chain.produce();
  const ownTx = await k.chain.sign(own, [computeLimit(20_000), computePrice(1n), pay]);
  const ownPayload = b64.decode(getTransactionEncoder().encode(ownTx));
  assert.equal(
    (await scheme.verify({ accepted: req, payload: { transaction: ownPayload } }, req, payTo)).invalidReason,
    SVM_REASONS.feePayerMismatch,
  );
  // extra.feePayer that is not Kasse's.
  const foreign = requirements(1_000n, { extra: { feePayer: own.address } });
  assert.equal(
    (await scheme.verify(await officialPayload(payer, req), foreign, payTo)).invalidReason,
    SVM_REASONS.feePayerNotManaged,
  );
});

test('garbage is refused as undecodable', async () => {
  const req = requirements(1_000n);
  assert.equal(
    (await scheme.verify({ accepted: req, payload: { transaction: 'bm90IGEgdHg=' } }, req, payTo)).invalidReason,
    SVM_REASONS.undecodable,
  );
  assert.equal(
    (await scheme.verify({ accepted: req, payload: {} }, req, payTo)).invalidReason,
    SVM_REASONS.transaction,
  );
});
