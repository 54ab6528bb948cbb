/**
 * USDC by signature on Solana: a payer holding 0 SOL signs the transfer Kasse built with its hot wallet as fee
 * payer; the relay checks it, co-signs and sends it; the watcher sees the deposit and the payment is paid. Every
 * refusal (wrong amount, destination or token, an instruction that would spend the fee payer, a missing or forged
 * signature, an expired blockhash, a second relay for one coin choice, a coin that is not gasless) changes nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  blockhash,
  compileTransaction,
  createTransactionMessage,
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
import { buildPayment, RelayService, type PayableAttempt } from '../../src/chains/solana/gasless.ts';
import { ApiError } from '../../src/core/errors.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';
import type { Wallet } from '../harness/solana-chain.ts';

let k: SolanaKasse;
let relay: RelayService;

before(async () => {
  k = await startSolanaKasse();
  await k.tick();
  relay = new RelayService(k.adapter);
});
after(() => k?.close());

const b64 = getBase64Decoder();
const b64enc = getBase64Encoder();
let seq = 0;

async function usdcChoice(cents = 2500): Promise<PayableAttempt> {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `gasless-${++seq}`,
    chain: 'solana',
    token: 'solana:usdc',
  });
  const a = res.body.attempts[0];
  // Kasse's hot wallet opens the deposit key's token account when the coin choice is issued.
  await k.send();
  await k.chain.produce();
  assert.ok(await k.chain.exists(await k.chain.ata(a.address)));
  return {
    id: a.id,
    paymentId: res.body.id,
    token: k.adapter.network.tokens.find((t) => t.id === 'solana:usdc')!,
    address: a.address,
    payAmount: BigInt(a.pay_amount),
    open: true,
  };
}

/** A payer with USDC and no SOL at all. */
async function poorPayer(usdc = 100_000_000n): Promise<Wallet> {
  const w = await k.chain.newWallet(0n);
  await k.chain.mintUsdc(k.funder, w.address, usdc);
  await k.chain.produce();
  return w;
}

async function signAsPayer(base64: string, payer: Wallet): Promise<string> {
  const tx = getTransactionDecoder().decode(b64enc.encode(base64));
  return b64.decode(getTransactionEncoder().encode(await partiallySignTransaction([payer.keyPair], tx)));
}

/** A hand-built transaction with the hot wallet as fee payer, signed by the payer. */
async function handBuilt(
  payer: Wallet,
  instructions: Instruction[],
  hash?: { blockhash: string; lastValidBlockHeight: bigint },
): Promise<string> {
  const bh = hash ?? (await k.chain.latestBlockhash());
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
  const tx = await partiallySignTransaction([payer.keyPair], compileTransaction(msg));
  return b64.decode(getTransactionEncoder().encode(tx));
}

async function transfer(payer: Wallet, toOwner: string, amount: bigint): Promise<Instruction> {
  return getTransferCheckedInstruction({
    source: await k.chain.ata(payer.address),
    mint: k.usdc as never,
    destination: await k.chain.ata(toOwner),
    authority: payer,
    amount,
    decimals: 6,
  });
}

async function relays(attemptId: string): Promise<number> {
  return (
    await k.t.kasse.db.selectFrom('solana_gasless').select('transfer_id').where('attempt_id', '=', attemptId).execute()
  ).length;
}

async function refused(
  attempt: PayableAttempt,
  tx: string,
  status: number,
  param: string,
  message?: RegExp,
): Promise<void> {
  await assert.rejects(relay.submit(attempt, tx), (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, status, err.message);
    assert.equal(err.param, param);
    if (message) assert.match(err.message, message);
    return true;
  });
  assert.equal(await relays(attempt.id), 0, 'nothing recorded');
}

test('a payer with 0 SOL pays USDC by signature: Kasse pays the fee, the payment is paid', async () => {
  const attempt = await usdcChoice();
  const payer = await poorPayer();
  assert.equal(await k.chain.balance(payer.address), 0n);
  const hotBefore = await k.chain.balance(k.hotWallet);
  const built = await buildPayment(k.adapter, attempt, payer.address, { gasless: true });
  assert.equal(built.fee_payer, k.hotWallet);
  const signed = await signAsPayer(built.transaction, payer);
  const r = await relay.submit(attempt, signed);
  assert.equal(r.status, 'broadcast');
  await k.chain.produce();
  await k.tick();
  const pay = (await k.m.test.get(`/payments/${attempt.paymentId}`)).body;
  assert.equal(pay.status, 'paid');
  assert.equal(pay.attempts[0].deposits[0].tx_hash, r.signature);
  assert.equal(pay.attempts[0].deposits[0].from, payer.address);
  assert.equal(await k.chain.balance(payer.address), 0n, 'the payer still holds no SOL');
  assert.equal(await k.chain.tokenBalance(payer.address), 100_000_000n - attempt.payAmount);
  assert.equal(hotBefore - (await k.chain.balance(k.hotWallet)), 10_000n, 'the hot wallet paid two signatures of fee');
  // The same coin choice cannot be relayed twice.
  await assert.rejects(relay.submit(attempt, signed), (e: unknown) => e instanceof ApiError && e.status === 422);
  await k.chain.finalize();
  await k.chain.produce();
  await k.send();
  const row = await k.t.kasse.db
    .selectFrom('solana_transfers')
    .selectAll()
    .where('signature', '=', r.signature)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, 'sent');
});

test('refusals change nothing', async () => {
  const attempt = await usdcChoice();
  const payer = await poorPayer();
  await refused(attempt, 'not base64!', 400, 'transaction');
  await refused(
    attempt,
    await handBuilt(payer, [await transfer(payer, attempt.address, attempt.payAmount - 1n)]),
    400,
    'transaction',
    /exactly the pay_amount/,
  );
  const stranger = (await k.chain.newWallet(0n)).address;
  await refused(
    attempt,
    await handBuilt(payer, [await transfer(payer, stranger, attempt.payAmount)]),
    400,
    'transaction',
    /token account/,
  );
  // An extra instruction that spends the fee payer's SOL.
  const spend = getTransferSolInstruction({
    source: { address: address(k.hotWallet) } as never,
    destination: payer.address,
    amount: 1_000_000n,
  });
  await refused(
    attempt,
    await handBuilt(payer, [await transfer(payer, attempt.address, attempt.payAmount), spend]),
    400,
    'transaction',
    /exactly one instruction/,
  );
  // The fee payer named inside the transfer (as a reference account).
  const withHot = await transfer(payer, attempt.address, attempt.payAmount);
  await refused(
    attempt,
    await handBuilt(payer, [
      { ...withHot, accounts: [...withHot.accounts!, { address: address(k.hotWallet), role: AccountRole.READONLY }] },
    ]),
    400,
    'transaction',
  );
  // Not signed by the payer, and a forged signature.
  const built = await buildPayment(k.adapter, attempt, payer.address, { gasless: true });
  await refused(attempt, built.transaction, 400, 'transaction', /not signed by the payer/);
  const forged = getTransactionDecoder().decode(b64enc.encode(await signAsPayer(built.transaction, payer)));
  const sig = new Uint8Array(forged.signatures[payer.address]!);
  sig[0] ^= 1;
  const tampered = { ...forged, signatures: { ...forged.signatures, [payer.address]: sig } };
  await refused(
    attempt,
    b64.decode(getTransactionEncoder().encode(tampered as never)),
    400,
    'transaction',
    /does not verify/,
  );
  // A blockhash the cluster no longer accepts.
  const old = await k.chain.latestBlockhash();
  await k.chain.produce(152);
  await refused(
    attempt,
    await handBuilt(payer, [await transfer(payer, attempt.address, attempt.payAmount)], old),
    400,
    'transaction',
    /blockhash/,
  );
  // A payer without the money: the simulation fails.
  const broke = await poorPayer(1n);
  await refused(
    attempt,
    await signAsPayer((await buildPayment(k.adapter, attempt, broke.address, { gasless: true })).transaction, broke),
    422,
    'transaction',
    /would fail/,
  );
  // A coin that is not gasless, and a coin choice that is no longer open.
  const sol = { ...attempt, token: k.adapter.network.tokens.find((t) => t.id === 'solana:sol')! };
  await refused(sol, await signAsPayer(built.transaction, payer), 422, 'attempt_id');
  await refused({ ...attempt, open: false }, await signAsPayer(built.transaction, payer), 422, 'attempt_id');
  assert.equal(await k.chain.balance(payer.address), 0n);
});

test('pay from a wallet (not gasless): SOL and USDC transactions the payer signs and sends itself', async () => {
  const res = await k.m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: `wallet-${++seq}`,
    chain: 'solana',
    token: 'solana:sol',
  });
  const a = res.body.attempts[0];
  const attempt: PayableAttempt = {
    id: a.id,
    paymentId: res.body.id,
    token: k.adapter.network.tokens.find((t) => t.id === 'solana:sol')!,
    address: a.address,
    payAmount: BigInt(a.pay_amount),
    open: true,
  };
  const payer = await k.payer();
  const built = await buildPayment(k.adapter, attempt, payer.address, { gasless: false });
  assert.equal(built.fee_payer, payer.address);
  const tx = getTransactionDecoder().decode(b64enc.encode(built.transaction));
  const signed = await partiallySignTransaction([payer.keyPair], tx);
  await k.chain.rpc('sendTransaction', [b64.decode(getTransactionEncoder().encode(signed)), { encoding: 'base64' }]);
  const slot = await k.chain.produce();
  // Finality trails the tip by 32 blocks here: a tier-1 payment is paid one block after its block is confirmed.
  await k.chain.produce();
  await k.tick();
  assert.equal((await k.m.test.get(`/payments/${res.body.id}`)).body.status, 'paid');
  // The Solana Pay reference is on the transfer, so tools that look a payment up by reference find it.
  const block = await k.chain.rpc('getBlock', [
    slot,
    { commitment: 'confirmed', transactionDetails: 'accounts', maxSupportedTransactionVersion: 0 },
  ]);
  const reference = k.adapter.deps.keys.reference(a.address);
  assert.ok(block.transactions[0].transaction.accountKeys.some((x: { pubkey: string }) => x.pubkey === reference));
});
