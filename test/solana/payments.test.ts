/**
 * Solana payments end to end through the public API, on a PRIVATE Solana test node (this file skips slots, drops
 * transactions and finalizes by hand): a payment on solana:sol or solana:usdc gets its own deposit key and a Solana
 * Pay URI, a payer signs a real transfer, the watcher (ticked by hand) reads the confirmed block and the payment goes
 * detected → confirming → paid (at `confirmed` for a tier of 1, at `finalized` for a tier of 32), with signed
 * webhooks. Then under-, over-, late and wrong-asset payments, skipped slots, a transaction dropped before finality
 * (orphaned, payment.reorged, ledger reversed), a restart mid-watch, and failover to the second RPC URL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseTransferRequestUri } from '../harness/transfer-request.ts';
import { solanaKeys } from '../../src/chains/solana/index.ts';
import { MINUTE } from '../../src/core/clock.ts';
import { createTestDatabase } from '../harness/db.ts';
import { startSolanaKasse, type SolanaKasse } from '../harness/solana-kasse.ts';

let k: SolanaKasse;

before(async () => {
  k = await startSolanaKasse();
  await k.tick(); // no cursor yet: starts at the confirmed tip
});
after(() => k?.close());

let seq = 0;
async function createPayment(token: 'solana:sol' | 'solana:usdc', cents = 1000) {
  const res = await k.m.test.post('/payments', {
    price_amount: cents,
    price_currency: 'USD',
    order_id: `sol-${++seq}`,
    description: 'Two mugs',
    chain: 'solana',
    token,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const attempt = res.body.attempts[0];
  return { id: res.body.id as string, address: attempt.address as string, amount: BigInt(attempt.pay_amount), attempt };
}

async function get(id: string) {
  const res = await k.m.test.get(`/payments/${id}`);
  assert.equal(res.status, 200);
  return res.body;
}

async function balanceCents(): Promise<number> {
  return (await k.m.test.get('/balance')).body.available_usd_cents;
}

describe('payment flow', () => {
  test('solana:sol: its own deposit key, a Solana Pay URI, paid at confirmed (tier 1), final once finalized', async () => {
    const p = await createPayment('solana:sol', 1000);
    assert.equal(p.amount, 66_666_667n, '10 USD at 150 USD/SOL, rounded up to a lamport');
    const keys = solanaKeys(k.secrets);
    const index = BigInt(
      (
        await k.t.kasse.db
          .selectFrom('attempts')
          .select('address_index')
          .where('id', '=', p.attempt.id)
          .executeTakeFirstOrThrow()
      ).address_index,
    );
    assert.equal(
      p.address,
      keys.deposit('test', index).address,
      'the address is the SLIP-0010 deposit key of its index',
    );
    const uri = parseTransferRequestUri(p.attempt.uri);
    assert.equal(uri.recipient, p.address);
    assert.equal(uri.amount, '0.066666667');
    assert.equal(uri.splToken, null);
    assert.deepEqual(uri.references, [keys.reference(p.address)]);
    assert.equal(uri.label, 'Test shop');
    assert.equal(uri.message, 'Two mugs');

    const payer = await k.payer();
    const sig = await k.chain.sendSol(payer, p.address, p.amount);
    const slot = await k.chain.produce();
    const r = await k.tick();
    assert.equal(r.deposits, 1);
    const pay = await get(p.id);
    const dep = pay.attempts[0].deposits[0];
    assert.equal(dep.tx_hash, sig);
    assert.equal(dep.token, 'solana:sol');
    assert.equal(dep.amount, '66666667');
    assert.equal(dep.from, payer.address);
    assert.equal(dep.block_number, String(slot));
    assert.equal(dep.explorer_url, `https://explorer.solana.com/tx/${sig}?cluster=devnet`);
    assert.equal(pay.attempts[0].confirmation_tier, 1);
    assert.equal(pay.status, 'paid');
    assert.equal(dep.status, 'confirmed');
    assert.ok(dep.confirmations >= 1 && dep.confirmations < 32, `confirmed, not final: ${dep.confirmations}`);
    assert.ok(k.eventTypes(p.id).includes('payment.detected'));
    assert.equal(k.eventTypes(p.id).at(-1), 'payment.paid');

    await k.chain.finalize();
    await k.chain.produce();
    const f = await k.tick();
    assert.ok(f.finalSlot! >= BigInt(slot));
    const after = (await get(p.id)).attempts[0].deposits[0];
    assert.equal(after.status, 'final');
    assert.equal(after.confirmations, 32, 'final at the finalized commitment: finality_confirmations');
  });

  test('solana:usdc above 100 USD: detected at confirmed, paid only at finalized, credited once', async () => {
    const before = await balanceCents();
    const p = await createPayment('solana:usdc', 20_000);
    assert.equal(p.amount, 200_000_000n);
    assert.equal(p.attempt.confirmation_tier, 2);
    assert.equal(Number(p.attempt.confirmations_required), 32);
    const uri = parseTransferRequestUri(p.attempt.uri);
    assert.equal(uri.splToken, k.usdc);
    assert.equal(uri.amount, '200');
    const payer = await k.payer(1_000_000_000n, 500_000_000n);
    const sig = await k.chain.sendUsdc(payer, p.address, p.amount, { createAta: true });
    await k.chain.produce();
    await k.tick();
    let pay = await get(p.id);
    assert.equal(pay.status, 'confirming');
    const dep = pay.attempts[0].deposits[0];
    assert.equal(dep.tx_hash, sig);
    assert.equal(dep.token, 'solana:usdc');
    assert.equal(dep.amount, '200000000');
    assert.equal(dep.from, payer.address);
    assert.equal(dep.status, 'pending');
    assert.equal(await balanceCents(), before);

    await k.chain.finalize();
    await k.chain.produce();
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].deposits[0].status, 'final');
    assert.deepEqual(k.eventTypes(p.id), ['payment.detected', 'payment.confirming', 'payment.paid']);
    assert.equal(await balanceCents(), before + 19_800, '200 USD less the 1 % fee');
    await k.tick();
    assert.equal(await balanceCents(), before + 19_800);
  });

  test('underpaid, then the rest within the hold: paid', async () => {
    const p = await createPayment('solana:usdc', 1000);
    const payer = await k.payer(1_000_000_000n, 50_000_000n);
    await k.chain.sendUsdc(payer, p.address, 4_000_000n, { createAta: true });
    await k.chain.produce();
    await k.tick();
    assert.equal((await get(p.id)).status, 'underpaid');
    await k.chain.sendUsdc(payer, p.address, 6_000_000n);
    await k.chain.produce();
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].received_amount, '10000000');
    assert.deepEqual(
      k.eventTypes(p.id).filter((e) => e !== 'payment.confirming' && e !== 'payment.detected'),
      ['payment.underpaid', 'payment.paid'],
    );
  });

  test('underpayment tolerance: short by exactly the allowed amount is paid, one unit more is underpaid', async () => {
    assert.equal((await k.m.test.patch('/account', { underpayment_tolerance_bps: 25 })).status, 200);
    try {
      const atBound = await createPayment('solana:usdc', 1000);
      const over = await createPayment('solana:usdc', 1000);
      const allowed = (atBound.amount * 25n) / 10_000n; // 10 000 000 × 0.25 % = 25 000
      assert.equal(allowed, 25_000n);
      const payer = await k.payer(1_000_000_000n, 50_000_000n);
      const before = await balanceCents();
      await k.chain.sendUsdc(payer, atBound.address, atBound.amount - allowed, { createAta: true });
      await k.chain.sendUsdc(payer, over.address, over.amount - allowed - 1n, { createAta: true });
      await k.chain.produce();
      await k.tick();
      const paid = await get(atBound.id);
      assert.equal(paid.status, 'paid');
      assert.equal(paid.underpaid_within_tolerance, true);
      assert.equal(paid.tolerance_shortfall, '25000');
      assert.equal(k.eventTypes(atBound.id).at(-1), 'payment.paid');
      // Credited at floor(1000 × 0.9975) = 997 cents, less the 1 % fee on that (10).
      assert.equal((await balanceCents()) - before, 987, 'the value received is credited, less the fee on it');
      const short = await get(over.id);
      assert.equal(short.status, 'underpaid');
      assert.equal(k.eventTypes(over.id).at(-1), 'payment.underpaid');
    } finally {
      await k.m.test.patch('/account', { underpayment_tolerance_bps: 0 });
    }
  });

  test('overpaid: paid and payment.overpaid', async () => {
    const p = await createPayment('solana:sol', 1000);
    const payer = await k.payer();
    await k.chain.sendSol(payer, p.address, p.amount + 1_000_000n);
    await k.chain.produce();
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'paid');
    assert.equal(pay.attempts[0].overpaid, true);
    assert.ok(k.eventTypes(p.id).includes('payment.overpaid'));
  });

  test('late: money after the coin hold is reported late', async () => {
    const p = await createPayment('solana:sol', 1000);
    k.t.clock.advance(11 * MINUTE);
    await k.t.kasse.payments.runDue();
    const payer = await k.payer();
    await k.chain.sendSol(payer, p.address, p.amount);
    await k.chain.rpc('harness_setTime', [Math.floor(k.t.clock.now().getTime() / 1000)]);
    await k.chain.produce();
    await k.chain.rpc('harness_setTime', [null]);
    await k.tick();
    assert.equal((await get(p.id)).status, 'late');
    assert.ok(k.eventTypes(p.id).includes('payment.late'));
  });

  test('wrong asset both ways: USDC into a SOL choice, SOL into a USDC choice', async () => {
    const solChoice = await createPayment('solana:sol', 1000);
    const usdcChoice = await createPayment('solana:usdc', 1000);
    const payer = await k.payer(10_000_000_000n, 50_000_000n);
    await k.chain.sendUsdc(payer, solChoice.address, 5_000_000n, { createAta: true });
    await k.chain.sendSol(payer, usdcChoice.address, 50_000_000n);
    await k.chain.produce();
    await k.tick();
    const a = await get(solChoice.id);
    assert.equal(a.status, 'waiting');
    assert.equal(a.attempts[0].wrong_asset, true);
    assert.equal(a.attempts[0].deposits[0].token, 'solana:usdc');
    assert.equal(a.attempts[0].received_amount, '0');
    const b = await get(usdcChoice.id);
    assert.equal(b.attempts[0].wrong_asset, true);
    assert.equal(b.attempts[0].deposits[0].token, 'solana:sol');
    assert.ok(k.eventTypes(solChoice.id).includes('payment.wrong_asset'));
    assert.ok(k.eventTypes(usdcChoice.id).includes('payment.wrong_asset'));
  });

  test('SOL moved by another program (the Token program closing an account to the deposit key) counts too', async () => {
    const p = await createPayment('solana:sol', 1000);
    const payer = await k.payer(10_000_000_000n, 1_000_000n);
    const { getCloseAccountInstruction, getTransferCheckedInstruction } = await import('@solana-program/token');
    const { getTransferSolInstruction } = await import('@solana-program/system');
    const ata = await k.chain.ata(payer.address);
    const rent = BigInt((await k.chain.rpc('getAccountInfo', [ata, { encoding: 'base64' }])).value.lamports);
    const sinkAta = await k.chain.ata(k.hotWallet);
    const tx = await k.chain.sign(payer, [
      getTransferSolInstruction({ source: payer, destination: ata, amount: p.amount - rent }),
      getTransferCheckedInstruction({
        source: ata,
        mint: k.usdc as never,
        destination: sinkAta,
        authority: payer,
        amount: 1_000_000n,
        decimals: 6,
      }),
      getCloseAccountInstruction({ account: ata, destination: p.address as never, owner: payer }),
    ]);
    await k.chain.send(tx);
    await k.chain.produce();
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.attempts[0].received_amount, p.amount.toString());
    assert.equal(pay.status, 'paid');
  });
});

describe('chain events', () => {
  test('skipped slots: the block after the gap is read and its deposit found', async () => {
    const p = await createPayment('solana:sol', 1000);
    await k.chain.skip(5);
    const payer = await k.payer();
    await k.chain.skip(3);
    await k.chain.sendSol(payer, p.address, p.amount);
    await k.chain.produce();
    const r = await k.tick();
    assert.ok(r.blocks >= 2);
    assert.equal((await get(p.id)).status, 'paid');
  });

  test("finality is the chain's commitment, not a slot count: a deposit confirmed 40 skipped slots past the finalized block pays at once", async () => {
    await k.chain.finalize();
    await k.chain.produce();
    await k.tick();
    const p = await createPayment('solana:sol', 1000);
    const payer = await k.payer();
    await k.chain.skip(40);
    await k.chain.sendSol(payer, p.address, p.amount);
    const slot = await k.chain.produce();
    const state = await k.chain.state();
    assert.ok(
      slot - state.finalized > 40,
      `the finalized slot ${state.finalized} is more than 31 slots behind the deposit's ${slot}`,
    );
    await k.tick();
    const pay = await get(p.id);
    assert.equal(pay.status, 'paid', 'confirmed is one confirmation, whatever the finalized slot');
    assert.deepEqual([pay.attempts[0].deposits[0].status, pay.attempts[0].deposits[0].confirmations], ['confirmed', 1]);
    // As if read before blocks kept their deposits' signatures: the finality check reads the block again.
    await k.t.kasse.db.updateTable('solana_blocks').set({ transfers: null }).where('slot', '=', BigInt(slot)).execute();
    await k.chain.finalize();
    await k.chain.produce();
    await k.tick();
    assert.deepEqual(
      [(await get(p.id)).attempts[0].deposits[0].status, (await get(p.id)).attempts[0].deposits[0].confirmations],
      ['final', 32],
    );
  });

  test('a transaction dropped before finality: deposit orphaned, payment.reorged, ledger reversed; paid again when it lands again', async () => {
    const before = await balanceCents();
    // SOL is converted: the merchant is credited the price less the default fee (1 % of $10.00: 10 cents) and the
    // default conversion spread (0.5 %: 5 cents).
    assert.deepEqual([k.t.config.feeBps, k.t.config.swapFeeBps], [100, 50], 'the default fee and spread');
    const credit = 985;
    const p = await createPayment('solana:sol', 1000);
    const payer = await k.payer();
    const { getTransferSolInstruction } = await import('@solana-program/system');
    const tx = await k.chain.sign(payer, [
      getTransferSolInstruction({ source: payer, destination: p.address as never, amount: p.amount }),
    ]);
    const sig = await k.chain.send(tx);
    await k.chain.produce();
    await k.tick();
    assert.equal((await get(p.id)).status, 'paid');
    assert.equal(await balanceCents(), before + credit);

    await k.chain.drop(sig, false);
    await k.chain.produce(2);
    const r = await k.tick();
    assert.ok(r.forkFrom !== null);
    let pay = await get(p.id);
    assert.equal(pay.status, 'waiting');
    assert.equal(pay.attempts[0].deposits[0].status, 'orphaned');
    assert.equal(pay.attempts[0].received_amount, '0');
    assert.equal(k.eventTypes(p.id).at(-1), 'payment.reorged');
    assert.equal(await balanceCents(), before);

    // The payer's wallet sends the same signed transaction again; it lands in a new slot.
    const { value } = await k.chain.rpc('getSignatureStatuses', [[sig]]);
    assert.equal(value[0], null);
    assert.equal(await k.chain.send(tx), sig);
    await k.chain.produce();
    await k.tick();
    pay = await get(p.id);
    assert.equal(pay.attempts[0].deposits.length, 1, 'the same transfer, revived in its new slot');
    assert.equal(pay.attempts[0].deposits[0].status, 'confirmed');
    assert.equal(pay.status, 'paid');
    assert.equal(k.eventTypes(p.id).at(-1), 'payment.paid');
    assert.equal(await balanceCents(), before + credit);
  });

  test('restart mid-watch: a new Kasse on the same database resumes from the stored cursor and finds what landed while it was down', async () => {
    const db = await createTestDatabase();
    const first = await startSolanaKasse({ node: k.node, databaseUrl: db.url, chain: k.chain });
    try {
      await first.tick();
      const res = await first.m.test.post('/payments', {
        price_amount: 1000,
        price_currency: 'USD',
        order_id: 'restart',
        chain: 'solana',
        token: 'solana:sol',
      });
      const attempt = res.body.attempts[0];
      const cursor = (await first.watcher.cursor())!;
      await first.close();
      const payer = await k.payer();
      await k.chain.sendSol(payer, attempt.address, BigInt(attempt.pay_amount));
      await k.chain.skip(2);
      await k.chain.produce(3);
      const second = await startSolanaKasse({
        node: k.node,
        databaseUrl: db.url,
        chain: k.chain,
        secrets: first.secrets,
        unfunded: true,
      });
      try {
        const produced = (
          await k.chain.rpc<number[]>('getBlocks', [Number(cursor.slot) + 1, { commitment: 'confirmed' }])
        ).length;
        const r = await second.tick();
        assert.equal(r.blocks, produced, 'every block after the cursor, once');
        assert.equal(r.deposits, 1);
        assert.equal(
          (await second.watcher.cursor())!.slot,
          BigInt(await k.chain.rpc<number>('getSlot', [{ commitment: 'confirmed' }])),
        );
        await k.chain.produce(33);
        await second.tick();
        const row = await second.t.kasse.db
          .selectFrom('payments')
          .select('status')
          .where('id', '=', res.body.id)
          .executeTakeFirstOrThrow();
        assert.equal(row.status, 'paid');
      } finally {
        await second.close();
      }
    } finally {
      await db.drop();
    }
  });

  test('failover: the first RPC URL down and then lagging; the watcher reads on through the second', async () => {
    const p = await createPayment('solana:sol', 1000);
    const payer = await k.payer();
    await k.chain.rpc('harness_setListener', [0, { down: true }]);
    try {
      const second = new (await import('../harness/solana-chain.ts')).SolanaTestChain(k.node.urls[1]!);
      await second.sendSol(payer, p.address, p.amount);
      await second.produce();
      const r = await k.tick();
      assert.equal(r.deposits, 1);
      assert.notEqual((await get(p.id)).status, 'waiting');
      await second.produce(33);
      await k.tick();
      assert.equal((await get(p.id)).status, 'paid');
    } finally {
      await k.chain.rpc('harness_setListener', [0, { down: false }]);
    }
    assert.match(k.adapter.rpc().currentUrl, new RegExp(new URL(k.node.urls[1]!).port));
    // Now the second lags behind: its answers do not reach the new block; the watcher moves back to the first.
    await k.chain.rpc('harness_setListener', [1, { lag: 3 }]);
    try {
      const q = await createPayment('solana:sol', 1000);
      await k.chain.sendSol(payer, q.address, q.amount);
      await k.chain.produce();
      for (let i = 0; i < 3 && (await get(q.id)).status === 'waiting'; i++) {
        k.adapter.rpc().failover();
        await k.tick();
      }
      assert.notEqual((await get(q.id)).status, 'waiting');
    } finally {
      await k.chain.rpc('harness_setListener', [1, { lag: 0 }]);
    }
  });
});
