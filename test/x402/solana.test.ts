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
import { solanaKeys } from '../../src/chains/solana/index.ts';
import { ImpossibleState } from '../../src/core/errors.ts';
import { SVM_REASONS, solanaX402 } from '../../src/chains/solana/x402.ts';
import type { X402Kind, X402Requirements, X402Scheme } from '../../src/chains/x402.ts';
import { eventually, ok } from '../harness/expect.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';
import type { Wallet } from '../harness/solana-chain.ts';

let k: SolanaKasse;
let x402: X402Scheme;
let kind: X402Kind;
/** The merchant's receiving key (its token account opened by the hot wallet). */
let payTo: string;
let seq = 0;

before(async () => {
  k = await startSolanaKasse();
  x402 = solanaX402({ chains: k.t.kasse.chains, keys: solanaKeys(k.t.kasse.secrets), adapters: [k.adapter] });
  kind = (await x402.kinds('test'))[0]!;
  payTo = await x402.payTo('test', 'solana', 900_000n);
  // The receiving key's USDC token account is opened from the hot wallet.
  await k.send();
  await k.chain.produce();
  assert.ok(await k.chain.exists(await k.chain.ata(payTo)));
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
  over: Partial<X402Requirements> = {},
): X402Requirements & { extra: Record<string, unknown> } {
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

type Payload = { payload: Record<string, unknown> };

/** The scheme, asked as the facilitator module asks it (which has matched network, payTo and amount already). */
const scheme = {
  request: (payload: Payload, req: X402Requirements) => ({
    mode: 'test' as const,
    kind,
    payTo,
    amount: BigInt(req.amount),
    requirements: req,
    payload: payload.payload,
  }),
  async verify(payload: Payload, req: X402Requirements) {
    return x402.verify(this.request(payload, req));
  },
  async settle(payload: Payload, req: X402Requirements, id = `x4s_${++seq}`) {
    return x402.settle(this.request(payload, req), id, new Date(k.t.clock.millis() + 30_000));
  },
};
const reasonOf = (v: { valid: boolean; reason?: string }) => (v.valid ? undefined : v.reason);

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
  return (await k.t.kasse.db.selectFrom('solana_transfers').select('id').where('id', 'like', 'x4s_%').execute()).length;
}

test('kinds: the CAIP-2 devnet id in test mode, the networks file USDC, the hot wallet as fee payer', async () => {
  assert.deepEqual(
    (await x402.kinds('test')).map((k2) => ({ ...k2, asset: k2.token.contract })),
    [
      {
        network: SOLANA_DEVNET_CAIP2,
        chain: 'solana',
        asset: k.usdc,
        token: kind.token,
        extra: { feePayer: k.hotWallet, asset: k.usdc, decimals: 6 },
        simulated: false,
        codes: { recipient: SVM_REASONS.recipient, replay: SVM_REASONS.duplicate },
      },
    ],
  );
  // Live mode has no Solana network with a sender here: nothing is offered (never simulated in live mode).
  assert.deepEqual(await x402.kinds('live'), []);
});

test('a payment the official client builds is verified and settled; the payer needs no SOL', async () => {
  const payer = await poorPayer();
  const req = requirements(1_000n); // $0.001
  const payload = await officialPayload(payer, req);
  const hotBefore = await k.chain.balance(k.hotWallet);
  const toBefore = await k.chain.tokenBalance(payTo);

  const v = await scheme.verify(payload, req);
  assert.equal(v.valid, true, JSON.stringify(v));
  assert.equal(v.valid && v.payer, payer.address);

  const s = await scheme.settle(payload, req, 'x4s_first');
  assert.equal(s.status, 'settled', s.status === 'failed' ? s.message : '');
  if (s.status !== 'settled') return;
  assert.equal(s.simulated, false);
  const status = await k.chain.rpc('getSignatureStatuses', [[s.transaction], { searchTransactionHistory: true }]);
  assert.equal(status.value[0].err, null);
  assert.equal(BigInt(status.value[0].slot), s.blockNumber);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 1_000n);
  assert.equal(await k.chain.tokenBalance(payer.address), 10_000_000n - 1_000n);
  assert.equal(await k.chain.balance(payer.address), 0n);
  const spent = hotBefore - (await k.chain.balance(k.hotWallet));
  assert.ok(spent > 0n && spent <= 15_000n, `the hot wallet paid ${spent} lamports`);
  // The index is the merchant's token account in the transaction, as the watcher would file it.
  const tx = await k.chain.rpc('getTransaction', [
    s.transaction,
    { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
  ]);
  assert.equal(tx.transaction.message.accountKeys[s.index], await k.chain.ata(payTo));

  // The same settlement asked again: the same transaction, nothing moved twice; `settlement` says the same.
  const again = await scheme.settle(payload, req, 'x4s_first');
  assert.deepEqual(again, s);
  assert.deepEqual(await x402.settlement('test', 'solana', 'x4s_first'), s);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 1_000n);
  // The payload no longer verifies, and cannot be settled under another id: it was settled.
  assert.equal(reasonOf(await scheme.verify(payload, req)), SVM_REASONS.duplicate);
  const other = await scheme.settle(payload, req, 'x4s_other');
  assert.equal(other.status === 'failed' && other.reason, SVM_REASONS.duplicate);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 1_000n);
});

test('two settles of one settlement at once send exactly one transaction', async () => {
  const payer = await poorPayer();
  const req = requirements(10_000n);
  const payload = await officialPayload(payer, req);
  const before = await relays();
  const toBefore = await k.chain.tokenBalance(payTo);
  const [a, b] = await Promise.all([scheme.settle(payload, req, 'x4s_race'), scheme.settle(payload, req, 'x4s_race')]);
  assert.equal(a.status, 'settled', a.status === 'failed' ? a.message : '');
  assert.deepEqual(b, a);
  assert.equal(await relays(), before + 1);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 10_000n);
});

test('wrong recipient, mint and amount are refused and nothing moves', async () => {
  const payer = await poorPayer();
  const toBefore = await k.chain.tokenBalance(payTo);
  const other = (await generateKeyPairSigner()).address;
  await k.chain.mintUsdc(k.funder, other, 0n);
  await k.chain.produce();

  // The client paid someone else while the requirements name the merchant.
  const elsewhere = await officialPayload(payer, requirements(1_000n, { payTo: other }));
  assert.equal(reasonOf(await scheme.verify(elsewhere, requirements(1_000n))), SVM_REASONS.recipient);

  // Another mint, in the transaction or in the requirements.
  const { mint } = await k.chain.createMint(k.funder, 6);
  await k.chain.produce();
  const fake = await officialPayload(payer, requirements(1_000n, { asset: mint }));
  assert.equal(reasonOf(await scheme.verify(fake, requirements(1_000n))), SVM_REASONS.mint);
  assert.equal(reasonOf(await scheme.verify(fake, requirements(1_000n, { asset: mint }))), SVM_REASONS.mint);

  // Less than asked, verified or settled.
  const under = await officialPayload(payer, requirements(999n));
  assert.equal(reasonOf(await scheme.verify(under, requirements(1_000n))), SVM_REASONS.amount);
  const settled = await scheme.settle(under, requirements(1_000n));
  assert.equal(settled.status === 'failed' && settled.reason, SVM_REASONS.amount);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore);
  assert.equal(await k.chain.tokenBalance(payer.address), 10_000_000n);
});

test('a payer without the amount is refused with insufficient_funds', async () => {
  const payer = await poorPayer(500n);
  const req = requirements(1_000n);
  const v = await scheme.verify(await officialPayload(payer, req), req);
  assert.equal(reasonOf(v), SVM_REASONS.insufficientFunds);
  assert.equal(v.payer, payer.address);
});

test('a forged or missing payer signature is refused', async () => {
  const payer = await poorPayer();
  const req = requirements(1_000n);
  const payload = await officialPayload(payer, req);
  const tx = getTransactionDecoder().decode(b64enc.encode(payload.payload.transaction as string));
  const forged = { ...tx, signatures: { ...tx.signatures, [payer.address]: new Uint8Array(64).fill(7) } };
  const bad = { ...payload, payload: { transaction: b64.decode(getTransactionEncoder().encode(forged as never)) } };
  assert.equal(reasonOf(await scheme.verify(bad, req)), SVM_REASONS.signature);
  const settled = await scheme.settle(bad, req);
  assert.equal(settled.status === 'failed' && settled.reason, SVM_REASONS.signature);
});

test('the fee payer signs for the fee and nothing else', async () => {
  const payer = await poorPayer();
  const req = requirements(1_000n);
  const hot = { address: address(k.hotWallet) } as Wallet;
  const pay = await usdcTransfer(payer, payTo, 1_000n);
  const refusal = async (ixs: Instruction[], signers: Wallet[] = [payer]) =>
    reasonOf(await scheme.verify({ payload: { transaction: await handBuilt(signers, ixs) } }, req));

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
    reasonOf(await scheme.verify({ payload: { transaction: ownPayload } }, req)),
    SVM_REASONS.feePayerMismatch,
  );
  // extra.feePayer that is not Kasse's.
  const foreign = requirements(1_000n, { extra: { feePayer: own.address } });
  assert.equal(
    reasonOf(await scheme.verify(await officialPayload(payer, req), foreign)),
    SVM_REASONS.feePayerNotManaged,
  );
});

test('garbage is refused as undecodable', async () => {
  const req = requirements(1_000n);
  assert.equal(
    reasonOf(await scheme.verify({ payload: { transaction: 'bm90IGEgdHg=' } }, req)),
    SVM_REASONS.undecodable,
  );
  assert.equal(reasonOf(await scheme.verify({ payload: {} }, req)), SVM_REASONS.transaction);
});

test('settle follows its transaction until the clock reaches the deadline, then answers pending; `settlement` reports it landing later', async () => {
  const payer = await poorPayer();
  const req = requirements(2_000n);
  const payload = await officialPayload(payer, req);
  const toBefore = await k.chain.tokenBalance(payTo);
  await k.chain.rpc('harness_autoProduce', [0]);
  try {
    const waits = k.t.clock.waits();
    const settling = x402.settle(scheme.request(payload, req), 'x4s_late', new Date(k.t.clock.millis() + 30_000));
    await eventually('settle to wait on the clock between looks at its transaction', () => k.t.clock.waits() > waits, {
      intervalMs: 5,
    });
    k.t.clock.advance(30_000);
    const s = await settling;
    assert.equal(s.status, 'pending');
    assert.ok(s.transaction, 'the transaction was stored and sent before the answer');
  } finally {
    await k.chain.rpc('harness_autoProduce', [50]);
  }
  // As after a restart: a scheme made anew only reads where the settlement stands.
  const fresh = solanaX402({ chains: k.t.kasse.chains, keys: solanaKeys(k.t.kasse.secrets), adapters: [k.adapter] });
  const impossible = (what: RegExp) => (e: unknown) =>
    e instanceof ImpossibleState && what.test(e.message) && e.message.includes('settlement x4s_late, transaction ');
  const relay = () => k.t.kasse.db.updateTable('solana_transfers').where('id', '=', 'x4s_late');
  // A stored relay without its amount: how many confirmations it needs is not guessed.
  await relay().set({ amount: null }).execute();
  try {
    await eventually('the landed relay to be refused a tier', () =>
      fresh.settlement('test', 'solana', 'x4s_late').then(() => false, impossible(/has no amount to set its tier by/)),
    );
    // Nor in a coin gone from the networks file.
    await relay().set({ amount: '2000', token: 'solana:retired' }).execute();
    await assert.rejects(
      fresh.settlement('test', 'solana', 'x4s_late'),
      impossible(/coin solana:retired is not configured on solana/),
    );
  } finally {
    await relay().set({ amount: '2000', token: kind.token.id }).execute();
  }
  const done = await eventually('the settlement to land', async () => {
    const s = await fresh.settlement('test', 'solana', 'x4s_late');
    return s.status === 'settled' ? s : null;
  });
  assert.equal(done.simulated, false);
  assert.equal(await k.chain.tokenBalance(payTo), toBefore + 2_000n);
  // A stored transaction without the transfer: its position is not guessed.
  const version = () => k.t.kasse.db.updateTable('solana_transfer_txs').where('transfer_id', '=', 'x4s_late');
  const { raw } = await k.t.kasse.db
    .selectFrom('solana_transfer_txs')
    .select('raw')
    .where('transfer_id', '=', 'x4s_late')
    .executeTakeFirstOrThrow();
  await version()
    .set({ raw: await handBuilt([], [computeLimit(20_000), computePrice(1n)]) })
    .execute();
  try {
    await assert.rejects(fresh.settlement('test', 'solana', 'x4s_late'), impossible(/no transfer to a token account/));
  } finally {
    await version().set({ raw }).execute();
  }
  // A settlement nothing was recorded for (its settle is still checking, or died before sending) is pending.
  assert.deepEqual(await fresh.settlement('test', 'solana', 'x4s_never'), { status: 'pending', transaction: null });
});

test('through the API: supported names the asset and decimals; one settlement answers success once, then duplicate_settlement', async () => {
  const merchantPayTo = (await ok(k.m.test.get(`/x402/pay_to?network=${SOLANA_DEVNET_CAIP2}`))).pay_to;
  const supported = (await ok(k.m.test.get('/x402/supported'))).kinds.find(
    (s: { network: string }) => s.network === SOLANA_DEVNET_CAIP2,
  );
  assert.deepEqual(supported.extra, { feePayer: k.hotWallet, asset: k.usdc, decimals: 6, payTo: merchantPayTo });
  // Its token account is opened from the hot wallet when the address is first given out.
  await k.send();
  await eventually('the token account to open', async () => k.chain.exists(await k.chain.ata(merchantPayTo)));
  const payer = await poorPayer();
  const req = requirements(3_000n, { payTo: merchantPayTo, extra: { feePayer: k.hotWallet } });
  const body = { x402Version: 2, paymentPayload: await officialPayload(payer, req), paymentRequirements: req };
  const first = await ok(k.m.test.post('/x402/settle', body));
  assert.equal(first.success, true, JSON.stringify(first));
  const again = await ok(k.m.test.post('/x402/settle', body));
  assert.deepEqual(
    [again.success, again.errorReason, again.transaction],
    [false, 'duplicate_settlement', ''],
    'the official Solana scheme fails a second settle of one transaction',
  );
  assert.equal(await k.chain.tokenBalance(merchantPayTo), 3_000n, 'moved once');
});
