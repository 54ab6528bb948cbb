/**
 * Kasse opens the token account of a USDC coin choice from its hot wallet (the payer needs none), and a sweep moves
 * final deposits to the treasury, closes the emptied token accounts (their rent back to the hot wallet), sweeps SOL
 * to the last lamport with the hot wallet paying the fees, and closes token accounts that were never used. Against a
 * node that does not serve getTokenAccountsByOwner (as hosted providers often do), the sweep takes the associated
 * token accounts and says so, `kasse solana status` lists the missing method, and a sweep the node refuses is
 * reported per key with the node's error and exit 1.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HOUR } from '../../src/core/clock.ts';
import { solanaCommands } from '../../src/chains/solana/commands.ts';
import { recordSweeps, sweepDue, sweepOutcome, sweepResults } from '../../src/chains/solana/sweep.ts';
import { answer } from '../../src/cli/program.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';

let k: SolanaKasse;

before(async () => {
  k = await startSolanaKasse();
  await k.tick();
});
after(() => k?.close());

async function choice(token: 'solana:sol' | 'solana:usdc', order: string) {
  const res = await k.m.test.post('/payments', {
    price_amount: 1000,
    price_currency: 'USD',
    order_id: order,
    chain: 'solana',
    token,
  });
  assert.equal(res.status, 201);
  return {
    id: res.body.id as string,
    address: res.body.attempts[0].address as string,
    amount: BigInt(res.body.attempts[0].pay_amount),
  };
}

async function runSender() {
  for (let i = 0; i < 6; i++) {
    await k.send();
    const open = await k.t.kasse.db
      .selectFrom('solana_transfers')
      .select('id')
      .where('status', 'in', ['pending', 'signed', 'broadcast'])
      .execute();
    if (open.length === 0) return;
    await k.chain.produce();
    await k.chain.finalize();
  }
}

/** Records sweeps of every due key, runs the sender until they settle, and answers what became of them. */
async function sweepNow() {
  const report = await recordSweeps(k.adapter);
  await runSender();
  return sweepResults(
    k.adapter,
    report.transfers.map((t) => t.id),
  );
}

test('the token account of a USDC coin choice is opened by the hot wallet; a sweep empties and closes it', async () => {
  const usdc = await choice('solana:usdc', 'sweep-usdc');
  const sol = await choice('solana:sol', 'sweep-sol');
  const ata = await k.chain.ata(usdc.address);
  assert.equal(await k.chain.exists(ata), false);
  const hot0 = await k.chain.balance(k.hotWallet);
  await runSender();
  assert.equal(await k.chain.exists(ata), true, 'opened by Kasse');
  const rent = BigInt((await k.chain.rpc('getAccountInfo', [ata, { encoding: 'base64' }])).value.lamports);
  assert.equal(hot0 - (await k.chain.balance(k.hotWallet)), rent + 5000n, 'the hot wallet paid the rent and the fee');

  const payer = await k.payer(10_000_000_000n, 50_000_000n);
  await k.chain.sendUsdc(payer, usdc.address, usdc.amount); // no account creation: it exists
  await k.chain.sendSol(payer, sol.address, sol.amount);
  await k.chain.sendSol(payer, usdc.address, 20_000_000n); // SOL into the USDC choice too
  await k.chain.produce();
  await k.tick();
  assert.equal((await k.m.test.get(`/payments/${usdc.id}`)).body.status, 'paid');
  assert.deepEqual(await sweepDue(k.adapter), [], 'nothing is swept before it is final');
  await k.chain.finalize();
  await k.chain.produce();
  await k.tick();
  const due = (await sweepDue(k.adapter)).map((d) => d.address).sort();
  assert.deepEqual(due, [usdc.address, sol.address].sort());

  const dry = await recordSweeps(k.adapter, { dryRun: true });
  assert.equal(dry.due, 2);
  assert.equal(dry.transfers.length, 0);
  const hot1 = await k.chain.balance(k.hotWallet);
  const report = await recordSweeps(k.adapter);
  assert.equal(report.transfers.length, 1);
  assert.deepEqual(await sweepDue(k.adapter), [], 'keys in an open sweep are not taken twice');
  await runSender();
  const [result] = await sweepResults(
    k.adapter,
    report.transfers.map((t) => t.id),
  );
  assert.equal(result!.status, 'sent', result!.error ?? '');
  assert.equal(await k.chain.tokenBalance(k.treasury), usdc.amount);
  assert.equal(await k.chain.balance(k.treasury), sol.amount + 20_000_000n);
  assert.equal(await k.chain.balance(usdc.address), 0n);
  assert.equal(await k.chain.balance(sol.address), 0n);
  assert.equal(await k.chain.exists(ata), false, 'closed');
  assert.equal(result!.moved!.closed.length, 1);
  const treasuryAtaRent = BigInt(
    (await k.chain.rpc('getAccountInfo', [await k.chain.ata(k.treasury), { encoding: 'base64' }])).value.lamports,
  );
  const fee = 5000n * 3n;
  assert.equal(
    (await k.chain.balance(k.hotWallet)) - hot1,
    rent - treasuryAtaRent - fee,
    'rent back, less the treasury account and the fees',
  );
  assert.deepEqual(await sweepDue(k.adapter), []);
});

test('a token account never used is closed by a sweep after ata_close_after_s, recovering its rent', async () => {
  const unused = await choice('solana:usdc', 'never-paid');
  await runSender();
  const ata = await k.chain.ata(unused.address);
  assert.equal(await k.chain.exists(ata), true);
  assert.ok(!(await sweepDue(k.adapter)).some((d) => d.address === unused.address));
  k.t.clock.advance(49 * HOUR);
  assert.ok((await sweepDue(k.adapter)).some((d) => d.address === unused.address));
  await recordSweeps(k.adapter);
  await runSender();
  assert.equal(await k.chain.exists(ata), false);
  assert.deepEqual(await sweepDue(k.adapter), []);
});

test('a payment into a token account the payer opened for the key (not its associated one) is swept; other mints are reported left', async () => {
  const usdc = await choice('solana:usdc', 'own-account');
  await runSender(); // Kasse opens the associated account; the payer does not use it
  const payer = await k.payer(10_000_000_000n, 50_000_000n);
  const own = await k.chain.openOtherTokenAccount(payer, usdc.address, k.usdc, { amount: usdc.amount, decimals: 6 });
  const other = await k.chain.createMint(payer, 2);
  const stray = await k.chain.openOtherTokenAccount(payer, usdc.address, other.mint, {
    amount: 1234n,
    decimals: 2,
    authority: other.authority,
  });
  await k.chain.produce();
  await k.tick();
  assert.equal(
    (await k.m.test.get(`/payments/${usdc.id}`)).body.status,
    'paid',
    'the watcher credits a transfer into any token account the key owns',
  );
  await k.chain.finalize();
  await k.chain.produce();
  await k.tick();
  assert.ok((await sweepDue(k.adapter)).some((d) => d.address === usdc.address));

  const treasury0 = await k.chain.tokenBalance(k.treasury);
  const results = await sweepNow();
  const result = results.find((r) => r.moved?.closed.includes(own));
  assert.ok(result, `a sweep moved the payer-opened account: ${JSON.stringify(results)}`);
  assert.equal(result.status, 'sent', result.error ?? '');
  assert.equal((await k.chain.tokenBalance(k.treasury)) - treasury0, usdc.amount, 'the treasury got the credited USDC');
  assert.equal(await k.chain.exists(own), false, 'the emptied account is closed');
  assert.equal(
    await k.chain.exists(await k.chain.ata(usdc.address)),
    false,
    'the unused associated account is closed too',
  );
  assert.deepEqual(
    result.left,
    [{ account: stray, mint: other.mint, amount: '1234', reason: 'the mint is not configured on this network' }],
    'what the sweep cannot move is reported',
  );
  assert.equal(await k.chain.exists(stray), true);
  assert.deepEqual(await sweepDue(k.adapter), []);
});

/** A USDC coin choice paid into its associated token account (and some SOL beside), final and due for a sweep. */
async function paidAndFinal(order: string) {
  const usdc = await choice('solana:usdc', order);
  await runSender(); // Kasse opens its associated token account
  const payer = await k.payer(10_000_000_000n, 50_000_000n);
  await k.chain.sendUsdc(payer, usdc.address, usdc.amount);
  await k.chain.sendSol(payer, usdc.address, 10_000_000n);
  await k.chain.produce();
  await k.tick();
  await k.chain.finalize();
  await k.chain.produce();
  await k.tick();
  assert.ok((await sweepDue(k.adapter)).some((d) => d.address === usdc.address));
  return usdc;
}

const command = (name: string) => solanaCommands.find((c) => c.name === name)!;

test('a node that does not serve getTokenAccountsByOwner, as hosted providers: status lists it; the sweep takes the associated token accounts and says what it could not look for', async () => {
  const status = () => command('solana status').run(k.t.kasse.familyContext, { mode: 'test' }, []) as Promise<any>;
  assert.deepEqual((await status()).missing_methods, [], 'this node serves every method Kasse asks for');
  const usdc = await paidAndFinal('hosted-1');
  await k.chain.rpc('harness_refuseMethods', [['getTokenAccountsByOwner']]);
  try {
    const s = await status();
    assert.equal(s.missing_methods.length, 1);
    assert.equal(s.missing_methods[0].method, 'getTokenAccountsByOwner');
    assert.match(s.missing_methods[0].answer, /Method not found \(-32601\)/, "the node's own answer");
    assert.match(s.missing_methods[0].without, /associated token accounts only/);

    const treasury0 = await k.chain.tokenBalance(k.treasury);
    const results = await sweepNow();
    const result = results.find((r) => r.addresses.includes(usdc.address))!;
    assert.equal(result.status, 'sent', result.error ?? '');
    assert.deepEqual(result.moved!.missing, ['getTokenAccountsByOwner']);
    assert.equal((await k.chain.tokenBalance(k.treasury)) - treasury0, usdc.amount, 'the USDC reached the treasury');
    assert.equal(await k.chain.exists(await k.chain.ata(usdc.address)), false, 'its token account is closed');
    assert.equal(await k.chain.balance(usdc.address), 0n, 'and its SOL swept');
    const outcome = sweepOutcome(results);
    assert.deepEqual(outcome.missing_methods, ['getTokenAccountsByOwner']);
    assert.deepEqual(outcome.failures, []);
    assert.ok(
      outcome.notes.some((n) => n.includes('getTokenAccountsByOwner') && n.includes(usdc.address)),
      'says which method was missing and which keys were swept without it',
    );
    assert.deepEqual(
      outcome.keys.find((x) => x.address === usdc.address),
      { address: usdc.address, transfer_id: result.id, status: 'sent', error: null },
    );
  } finally {
    await k.chain.rpc('harness_refuseMethods', [[]]);
  }
});

test("a sweep the node refuses is reported per key with the node's own error and exit 1: nothing stays pending in silence", async () => {
  const usdc = await paidAndFinal('hosted-2');
  // A node that serves neither: the sweep cannot even read the keys' accounts.
  await k.chain.rpc('harness_refuseMethods', [['getTokenAccountsByOwner', 'getMultipleAccounts']]);
  let out = '';
  let err = '';
  let code: number;
  try {
    code = await answer(
      command('solana sweep').run(k.t.kasse.familyContext, { mode: 'test', 'wait-seconds': '1' }, []),
      true,
      { out: (x) => void (out += x), err: (x) => void (err += x) },
    );
  } finally {
    await k.chain.rpc('harness_refuseMethods', [[]]);
  }
  assert.equal(code, 1, 'a non-zero exit');
  const printed = JSON.parse(out);
  const key = printed.keys.find((x: { address: string }) => x.address === usdc.address);
  assert.equal(key.status, 'pending');
  assert.match(key.error, /getMultipleAccounts: Method not found \(-32601\)/, "the node's own error, for the key");
  const result = printed.results.find((r: { id: string }) => r.id === key.transfer_id);
  assert.ok(result.tries >= 1);
  assert.match(result.waiting, /next try at/);
  assert.match(err, /did not go through/);
  assert.ok(err.includes(usdc.address), 'the failure names the key');
  assert.match(err, /getMultipleAccounts: Method not found/);

  // Served again, the same sweep goes through on the sender's next tries.
  k.t.clock.advance(10 * 60_000);
  await runSender();
  const [after] = await sweepResults(k.adapter, [key.transfer_id]);
  assert.equal(after!.status, 'sent', after!.error ?? '');
  assert.equal(await k.chain.exists(await k.chain.ata(usdc.address)), false);
});

test('the test node answers getTokenAccountsByOwner in the wire format of a Solana node', async () => {
  const payer = await k.payer(10_000_000_000n, 7n);
  const owner = (await k.chain.newWallet(0n)).address;
  const own = await k.chain.openOtherTokenAccount(payer, owner, k.usdc, { amount: 7n, decimals: 6 });
  const byMint = await k.chain.rpc('getTokenAccountsByOwner', [
    owner,
    { mint: k.usdc },
    { encoding: 'base64', commitment: 'processed' },
  ]);
  assert.equal(typeof byMint.context.slot, 'number');
  assert.equal(byMint.value.length, 1);
  assert.equal(byMint.value[0].pubkey, own);
  assert.equal(byMint.value[0].account.owner, 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
  assert.equal(byMint.value[0].account.data[1], 'base64');
  assert.equal(Buffer.from(byMint.value[0].account.data[0], 'base64').readBigUInt64LE(64), 7n);
  const byProgram = await k.chain.rpc('getTokenAccountsByOwner', [
    owner,
    { programId: 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' },
    { encoding: 'base64' },
  ]);
  assert.deepEqual(
    byProgram.value.map((v: { pubkey: string }) => v.pubkey),
    [own],
  );
  await assert.rejects(
    k.chain.rpc('getTokenAccountsByOwner', [owner, {}, { encoding: 'base64' }]),
    (err: { code: number }) => err.code === -32602,
  );
});
