/**
 * USDC by signature on Solana: a payer holding 0 SOL signs the transfer Kasse built with its hot wallet as fee
 * payer; the relay checks it, co-signs and sends it; the watcher sees the deposit and the payment is paid. Every
 * refusal (wrong amount, destination or token, an instruction that would spend the fee payer, a missing or forged
 * signature, an expired blockhash, a second relay for one coin choice, a coin that is not gasless) changes nothing.
 * The same fee-payer relay carries a subscription grant: the payer approves a delegate for the grant's total, each
 * period is charged by the delegate, a revoke on chain stops the next charge.
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
import {
  getApproveCheckedInstruction,
  getTokenDecoder,
  getRevokeInstruction,
  getTransferCheckedInstruction,
} from '@solana-program/token';
import { buildPayment, RelayService, type PayableAttempt } from '../../src/chains/solana/gasless.ts';
import { recordSweeps, sweepResults } from '../../src/chains/solana/sweep.ts';
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

const WEEK_MS = 7 * 86_400_000;
/** $12.00 a week in USDC units. */
const AMOUNT = 12_000_000n;

async function postJson(url: string, body: unknown) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: new URL(url).origin },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** A weekly subscription charged automatically: helpers reading it and driving the sender and the scheduler. */
async function chargedSubscription(email: string) {
  const created = await k.m.test.post('/subscriptions', {
    customer_email: email,
    title: 'Coffee, weekly',
    amount_usd_cents: 1200,
    interval: 'week',
    grace_days: 2,
    collection: 'charge_automatically',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = created.body.id as string;
  const subscription = async () => (await k.m.test.get(`/subscriptions/${id}`)).body;
  const runDue = async () => {
    await k.send();
    await k.t.kasse.subscriptions.runDue();
    await k.t.kasse.webhooks.drain();
  };
  return {
    id,
    page: k.t.kasse.subscriptionLinks.url(id, new Date(k.t.clock.now().getTime() + 90 * 86_400_000)),
    subscription,
    runDue,
    /** Runs the due work, then a slot (finalized) and 5 s of Kasse's clock, until `done` holds. */
    async until(done: (s: any) => boolean, what: string) {
      for (let i = 0; i < 20; i++) {
        await runDue();
        if (done(await subscription())) return;
        await k.chain.produce();
        await k.chain.finalize();
        k.t.clock.advance(5_000);
      }
      assert.fail(`${what}: not reached`);
    },
  };
}

/** The payer signs the approval the page offers and posts it back; the first period is charged. */
async function granted(sub: Awaited<ReturnType<typeof chargedSubscription>>, payer: Wallet) {
  const offer = await postJson(`${sub.page}/grant/offer`, { network: 'solana', payer: payer.address });
  assert.equal(offer.status, 200, JSON.stringify(offer.body));
  const r = await postJson(`${sub.page}/grant`, {
    network: 'solana',
    payer: payer.address,
    terms: offer.body.terms,
    signatures: { transaction: await signAsPayer(offer.body.sign.transaction, payer) },
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await sub.until((s) => s.periods_paid === 1, 'period 1 charged');
  return offer.body;
}

/** The delegate of a token account on chain, and how much it may still move. */
async function delegation(account: string): Promise<{ delegate: string | null; amount: bigint }> {
  const r = await k.chain.rpc<{ value: { data: [string, string] } }>('getAccountInfo', [
    account,
    { encoding: 'base64' },
  ]);
  const t = getTokenDecoder().decode(Buffer.from(r.value.data[0], 'base64'));
  return { delegate: t.delegate.__option === 'Some' ? t.delegate.value : null, amount: t.delegatedAmount };
}

test('a subscription charged automatically: the payer approves a delegate once, two periods charge themselves, a revoke on chain stops the third; another amount or delegate is refused', async () => {
  const sub = await chargedSubscription('ravi@example.com');
  const { page, subscription, runDue, until } = sub;
  const payer = await poorPayer(100_000_000n);
  const grantRelays = async () =>
    (await k.t.kasse.db.selectFrom('solana_transfers').select('id').where('purpose', '=', 'grant').execute()).length;
  const offer = await postJson(`${page}/grant/offer`, { network: 'solana', payer: payer.address });
  assert.equal(offer.status, 200, JSON.stringify(offer.body));
  const terms = offer.body.terms;
  assert.equal(terms.amount_per_period, AMOUNT.toString());
  assert.equal(offer.body.sign.amount, terms.total, 'the approval caps the grant at its total');
  assert.equal(offer.body.sign.fee_payer, k.hotWallet);
  const account = await k.chain.ata(payer.address);
  assert.equal(offer.body.sign.account, account);

  // An approval of another amount, or to another delegate, is refused with the Error body and stores nothing.
  const relaysBefore = await grantRelays();
  const approval = (amount: bigint, delegate: string) =>
    getApproveCheckedInstruction({
      source: account,
      mint: k.usdc as never,
      delegate: address(delegate),
      owner: payer,
      amount,
      decimals: 6,
    });
  for (const [bad, why] of [
    [approval(BigInt(terms.total) + 1n, offer.body.sign.delegate), /exactly the grant’s total/],
    [approval(BigInt(terms.total), k.treasury), /the grant’s delegate/],
  ] as const) {
    const r = await postJson(`${page}/grant`, {
      network: 'solana',
      payer: payer.address,
      terms,
      signatures: { transaction: await handBuilt(payer, [bad]) },
    });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'invalid_request');
    assert.equal(r.body.error.param, 'signatures.transaction');
    assert.match(r.body.error.message, why);
  }
  assert.equal((await subscription()).grant.status, 'none');
  assert.equal(await grantRelays(), relaysBefore, 'nothing recorded, nothing relayed');

  // The approval Kasse built, signed by the payer, is relayed with the hot wallet as fee payer.
  const granted = await postJson(`${page}/grant`, {
    network: 'solana',
    payer: payer.address,
    terms,
    signatures: { transaction: await signAsPayer(offer.body.sign.transaction, payer) },
  });
  assert.equal(granted.status, 202, JSON.stringify(granted.body));
  await until((s) => s.periods_paid === 1, 'period 1 charged');
  const receiver = terms.receiver as string;
  k.t.clock.advance(WEEK_MS);
  await until((s) => s.periods_paid === 2, 'period 2 charged');
  let s = await subscription();
  assert.equal(s.grant.status, 'active');
  assert.deepEqual(
    s.charges.map((c: any) => [c.period, c.attempt, c.status]),
    [
      [1, 1, 'succeeded'],
      [2, 1, 'succeeded'],
    ],
  );
  // Exact on chain: the payer paid two periods and no SOL; the merchant's receiving key received them.
  assert.equal(await k.chain.tokenBalance(payer.address), 100_000_000n - 2n * AMOUNT);
  assert.equal(await k.chain.tokenBalance(receiver), 2n * AMOUNT);
  assert.equal(await k.chain.balance(payer.address), 0n, 'the payer spent no SOL');
  // Exact in the ledger: each period's payment is paid by its charge's transaction.
  for (const [i, inv] of s.invoices.entries()) {
    assert.equal(inv.status, 'paid');
    const p = (await k.m.test.get(`/payments/${inv.payment_id}`)).body;
    assert.deepEqual(
      p.attempts.at(-1).deposits.map((d: any) => [d.tx_hash, d.amount, d.token, d.from]),
      [[s.charges[i].transaction, AMOUNT.toString(), 'solana:usdc', payer.address]],
    );
  }

  // The merchant's receiving key is swept to the treasury like a deposit key once the charges are final.
  await k.tick();
  assert.ok((await recordSweeps(k.adapter, { dryRun: true })).addresses?.includes(receiver), 'the receiver is due');
  const sweeps = await recordSweeps(k.adapter, { batch: 1 });
  const sweep = sweeps.transfers.find((t) => t.addresses.includes(receiver))!;
  for (let i = 0; i < 3; i++) {
    await k.send();
    await k.chain.produce();
    await k.chain.finalize();
  }
  const [swept] = await sweepResults(k.adapter, [sweep.id]);
  assert.equal(swept?.status, 'sent', JSON.stringify(swept));
  assert.equal(swept?.moved?.tokens['solana:usdc'], (2n * AMOUNT).toString());
  assert.equal(await k.chain.tokenBalance(receiver), 0n);

  // The payer revokes the delegate on chain with their own wallet (paying their own fee) before the third period.
  await k.chain.sendSol(k.funder, payer.address, 10_000_000n);
  await k.chain.produce();
  await k.chain.send(await k.chain.sign(payer, [getRevokeInstruction({ source: account, owner: payer })]));
  await k.chain.produce();
  k.t.clock.advance(WEEK_MS);
  await runDue();
  s = await subscription();
  assert.equal(s.periods_paid, 2, 'the third is not charged');
  assert.equal(s.grant.status, 'revoked');
  const last = s.charges.at(-1);
  assert.deepEqual(
    [last.period, last.status, last.failure_reason, last.transaction],
    [3, 'failed', 'grant_revoked', null],
  );
  assert.equal(await k.chain.tokenBalance(payer.address), 100_000_000n - 2n * AMOUNT);
});

test('the payer revokes on the subscription page: Kasse relays the signed Revoke as fee payer, the delegate is gone on chain, nothing more is charged', async () => {
  const sub = await chargedSubscription('mei@example.com');
  const payer = await poorPayer(100_000_000n);
  const offer = await granted(sub, payer);
  const account = offer.sign.account as string;
  assert.deepEqual(await delegation(account), {
    delegate: offer.sign.delegate,
    amount: BigInt(offer.terms.total) - AMOUNT,
  });

  // Something else than the Revoke of this account is refused with the Error body; the grant stays in force.
  const revokeOffer = await postJson(`${sub.page}/revoke/offer`, {});
  assert.equal(revokeOffer.status, 200, JSON.stringify(revokeOffer.body));
  const other = await postJson(`${sub.page}/revoke`, {
    signatures: { transaction: await handBuilt(payer, [await transfer(payer, k.treasury, 1n)]) },
  });
  assert.equal(other.status, 400, JSON.stringify(other.body));
  assert.equal(other.body.error.param, 'signatures.transaction');
  assert.equal((await sub.subscription()).grant.status, 'active');

  const revoked = await postJson(`${sub.page}/revoke`, {
    signatures: { transaction: await signAsPayer(revokeOffer.body.sign.transaction, payer) },
  });
  assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
  assert.equal(revoked.body.grant.status, 'revoked');
  for (let i = 0; i < 3; i++) {
    await k.send();
    await k.chain.produce();
    await k.chain.finalize();
  }
  const relay = await k.t.kasse.db
    .selectFrom('solana_transfers')
    .select(['status', 'signature'])
    .where('purpose', '=', 'revoke')
    .where('destination', '=', offer.sign.delegate)
    .executeTakeFirstOrThrow();
  assert.equal(relay.status, 'sent');
  assert.deepEqual(await delegation(account), { delegate: null, amount: 0n });
  assert.equal(await k.chain.balance(payer.address), 0n, 'the payer spent no SOL');

  k.t.clock.advance(WEEK_MS);
  await sub.runDue();
  const s = await sub.subscription();
  assert.equal(s.periods_paid, 1);
  assert.deepEqual(
    s.charges.map((c: any) => c.status),
    ['succeeded'],
    'no charge after the revoke',
  );
  assert.equal(await k.chain.tokenBalance(payer.address), 100_000_000n - AMOUNT);
});
