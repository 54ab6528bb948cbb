/**
 * Subscriptions that charge themselves, on chain: gas per charge through SubscriptionCollector (one `charge` per
 * transaction, and `chargeBatch` of BENCH_SUBSCRIPTION_BATCHES grants at once) against a plain USDC `transfer` of the
 * same amount from a payer to the same merchant, measured in the same run on a private Hardhat node with TestUSDC.
 * Steady state: the merchant already holds the token, every payer holds it and granted with a permit for the grant's
 * total (so each charge also lowers an allowance, as it will in use). Kept apart from bench/subscriptions.ts, which
 * runs the scheduler against PostgreSQL for minutes. Goal: a charge ≤ 1.3× a plain transfer, or ≤ 0.7× in batches.
 *
 * Then Kasse end to end (`due_at_once`): BENCH_SUBSCRIPTION_DUE subscriptions charged automatically, each granted
 * through the grants service as the subscription page does (permit and terms signed by its own payer, relayed by the
 * hot wallet), all due at the same instant: wall time from the due time to the last period paid (the scheduler
 * invoicing and recording the charges, the charging worker checking and submitting them, the hot-wallet sender
 * signing, sending and confirming them, the payments settled), every period charged once, against as many plain
 * USDC transfers from the hot wallet in the same run (bench/disbursements.ts's `plainRun`), before and after.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { getAddress, maxUint256, parseSignature, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { erc20Abi, subscriptionCollectorAbi } from '../src/chains/evm/contracts.ts';
import { permitTypedData, termsTypedData, type SubscriptionTerms } from '../src/chains/evm/subscription-collector.ts';
import { customerActor } from '../src/modules/subscriptions/index.ts';
import { startEvmKasse } from '../test/harness/evm-kasse.ts';
import { startHardhatNode, TestChain, type TestWallet } from '../test/harness/hardhat.ts';
import { dueSubscriptions, seedSubscriptions } from '../test/harness/subscriptions.ts';
import { benchDatabase } from './_pg.ts';
import { plainRun } from './disbursements.ts';

const SINGLE = Number(process.env.BENCH_SUBSCRIPTION_SINGLE ?? 20);
const DUE = Number(process.env.BENCH_SUBSCRIPTION_DUE ?? 1000);
const BATCHES = (process.env.BENCH_SUBSCRIPTION_BATCHES ?? '10,50,200').split(',').map(Number);
const CHAIN_ID = 31337;
const USDC = 1_000_000n;
const AMOUNT = 15n * USDC;

const median = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[Math.floor(xs.length / 2)]!;

export async function run() {
  const gas = await gasRun();
  const due_at_once = DUE > 0 ? await dueAtOnce(DUE) : null;
  return { ...gas, due_at_once };
}

async function gasRun() {
  const node = await startHardhatNode();
  try {
    const chain = new TestChain(node.url);
    const operator = await chain.newWallet();
    const usdc = await chain.deployTestUsdc(operator);
    const collector = await chain.deployContract(operator, 'SubscriptionCollector');
    const merchant = getAddress(`0x${randomBytes(20).toString('hex')}`);
    await chain.receipt(await chain.mint(operator, usdc, merchant, 1n));
    const start = Number((await chain.client.getBlock()).timestamp);

    /** A payer holding the token who granted 12 monthly charges of AMOUNT to the merchant. */
    const grantor = async (permitValue = AMOUNT * 12n): Promise<{ payer: TestWallet; terms: SubscriptionTerms }> => {
      const payer = await chain.newWallet();
      await chain.receipt(await chain.mint(operator, usdc, payer.address, 1_000n * USDC));
      const terms: SubscriptionTerms = {
        payer: payer.address,
        token: usdc,
        receiver: merchant,
        operator: operator.address,
        amountPerPeriod: AMOUNT,
        period: 30 * 86_400,
        start,
        end: start + 12 * 30 * 86_400,
        salt: `0x${randomBytes(32).toString('hex')}` as Hex,
      };
      const signature = await payer.signTypedData({
        account: payer.account,
        ...termsTypedData(CHAIN_ID, collector, terms),
      });
      const deadline = BigInt(start + 86_400);
      const permit = parseSignature(
        await payer.signTypedData({
          account: payer.account,
          ...permitTypedData(
            CHAIN_ID,
            { address: usdc, name: 'Test USDC', version: '2' },
            { owner: payer.address, spender: collector, value: permitValue, nonce: 0n, deadline },
          ),
        }),
      );
      await chain.write(operator, collector, subscriptionCollectorAbi, 'grantWithPermit', [
        terms,
        signature,
        permitValue,
        deadline,
        Number(permit.v),
        permit.r,
        permit.s,
      ]);
      return { payer, terms };
    };

    const plain: bigint[] = [];
    const single: bigint[] = [];
    for (let i = 0; i < SINGLE; i++) {
      const a = await grantor();
      plain.push((await chain.write(a.payer, usdc, erc20Abi, 'transfer', [merchant, AMOUNT])).gasUsed);
      const b = await grantor();
      single.push(
        (await chain.write(operator, collector, subscriptionCollectorAbi, 'charge', [b.terms, AMOUNT])).gasUsed,
      );
    }
    const batched: Record<string, { gas_total: number; gas_per_charge: number; ratio_to_plain: number }> = {};
    const plainGas = median(plain);
    const batch = async (size: number, permitValue?: bigint) => {
      const items = [];
      for (let i = 0; i < size; i++) items.push({ terms: (await grantor(permitValue)).terms, amount: AMOUNT });
      const r = await chain.write(operator, collector, subscriptionCollectorAbi, 'chargeBatch', [items]);
      if (r.logs.length !== 2 * size) throw new Error(`batch of ${size}: ${r.logs.length} logs, expected ${2 * size}`);
      const per = r.gasUsed / BigInt(size);
      return {
        gas_total: Number(r.gasUsed),
        gas_per_charge: Number(per),
        ratio_to_plain: Math.round((Number(per) / Number(plainGas)) * 100) / 100,
      };
    };
    for (const size of BATCHES) batched[String(size)] = await batch(size);
    // For comparison: payers who permitted an unlimited allowance, which the token then never writes down.
    const largest = Math.max(...BATCHES);
    const unlimited = await batch(largest, maxUint256);
    const unlimitedSingle = (
      await chain.write(operator, collector, subscriptionCollectorAbi, 'charge', [
        (await grantor(maxUint256)).terms,
        AMOUNT,
      ])
    ).gasUsed;
    return {
      gas: { plain_transfer: Number(plainGas), charge: Number(median(single)) },
      ratio_to_plain: { charge: Math.round((Number(median(single)) / Number(plainGas)) * 100) / 100 },
      batched,
      goal: { charge: 1.3, batched: 0.7 },
      unlimited_permit: {
        charge: Number(unlimitedSingle),
        charge_ratio_to_plain: Math.round((Number(unlimitedSingle) / Number(plainGas)) * 100) / 100,
        [`batched_${largest}`]: unlimited,
      },
      notes:
        `Gas per transaction (21,000 base included); charge and plain_transfer are medians of ${SINGLE}. Each ` +
        'charge moves the amount from a payer whose balance slot is cold to the merchant and lowers its allowance; ' +
        'a batch pays the 21,000 base once and finds the merchant and token warm after its first charge. ' +
        'unlimited_permit: the same with payers who permitted type(uint256).max (no allowance write per charge); ' +
        'Kasse asks for the grant total instead.',
    };
  } finally {
    await node.stop();
  }
}

/** `n` charged subscriptions granted through Kasse and due at once: wall time to the last period paid. */
async function dueAtOnce(n: number) {
  const pg = await benchDatabase();
  process.env.KASSE_TEST_DATABASE_URL = pg.url;
  const node = await startHardhatNode();
  try {
    const chain = new TestChain(node.url);
    const collector = getAddress(await chain.deployContract(await chain.newWallet(), 'SubscriptionCollector'));
    const k = await startEvmKasse({
      rpcUrl: node.url,
      receiver: false,
      tiers: [{ max_usd_cents: null, confirmations: 1 }],
      finality: 2,
      evm: { subscription_collector: collector },
    });
    try {
      const kasse = k.t.kasse;
      const sender = k.adapter.sender!;
      await k.chain.receipt(await k.chain.mint(k.payer, k.usdc, sender.address, 10n ** 13n));
      const align = async () => k.t.clock.set((await k.chain.now()) * 1000);
      await align();
      const dueAt = new Date(k.t.clock.now().getTime() + 86_400_000);
      const rows = dueSubscriptions(k.m.id, n, dueAt, (i) => ({
        customer_email: `c${i}@example.com`,
        title: 'Charged box',
        amount_usd_cents: 1500,
      })).map((r) => ({ ...r, collection: 'charge_automatically' as const }));
      await seedSubscriptions(kasse.db, rows);

      // Each payer holds USDC and no ETH, and grants as on the subscription page: the permit and the terms signed.
      const tGrants = performance.now();
      for (const [i, r] of rows.entries()) {
        const payer = privateKeyToAccount(generatePrivateKey());
        const minted = await k.chain.mint(k.payer, k.usdc, payer.address, 100_000_000n);
        if (i === rows.length - 1) await k.chain.receipt(minted);
        const check = kasse.subscriptionLinks.verify(
          kasse.subscriptionLinks.token(r.id, new Date(dueAt.getTime() + 86_400_000)),
          k.t.clock.now(),
        );
        const offer = await kasse.subscriptions.grants.offer(check, 'base', payer.address);
        const sign = (typed: any) => {
          const { EIP712Domain: _d, ...types } = typed.types;
          return payer.signTypedData({
            domain: typed.domain,
            types,
            primaryType: typed.primaryType,
            message: typed.message,
          });
        };
        const signatures = {
          permit: await sign(offer.sign.permit),
          terms: await sign(offer.sign.terms),
          permit_deadline: offer.sign.permit_deadline,
        };
        await kasse.subscriptions.grants.submit(
          check,
          { network: 'base', payer: payer.address, terms: offer.terms, signatures },
          customerActor(null),
        );
      }
      const active = async () =>
        Number(
          (
            await kasse.db
              .selectFrom('subscription_grants')
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .where('status', '=', 'active')
              .executeTakeFirstOrThrow()
          ).n,
        );
      for (let pass = 0; (await active()) < n; pass++) {
        if (pass > 200) throw new Error(`${await active()} of ${n} grants active after 200 passes`);
        await sender.runDue();
        await kasse.subscriptions.runDue();
      }
      const grantsMs = performance.now() - tGrants;

      const plainBefore = await plainRun(k, n);
      // The due time on chain and in Kasse: every period falls due at once.
      await k.chain.rpc('evm_setNextBlockTimestamp', [Math.floor(dueAt.getTime() / 1000) + 1]);
      await k.chain.mine(1);
      await align();
      const load0 = loadavg()[0]!;
      const paidCount = async () =>
        Number(
          (
            await kasse.db
              .selectFrom('subscriptions')
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .where('merchant_id', '=', k.m.id)
              .where('periods_paid', '=', 1)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const t0 = performance.now();
      let passes = 0;
      while ((await paidCount()) < n) {
        if (++passes > 500) throw new Error(`${await paidCount()} of ${n} periods paid after 500 passes`);
        await kasse.subscriptions.runDue();
        await sender.runDue();
        k.t.clock.advance(5_000);
      }
      const chargedMs = performance.now() - t0;
      const load1 = loadavg()[0]!;
      const plainAfter = await plainRun(k, n);

      // Every period charged once: one succeeded charge per subscription, one transfer each, none failed.
      const charges = await kasse.db
        .selectFrom('subscription_charges')
        .select(['status'])
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .groupBy('status')
        .execute();
      const byStatus = Object.fromEntries(charges.map((c) => [c.status, Number(c.n)]));
      if (byStatus.succeeded !== n || Object.keys(byStatus).length !== 1)
        throw new Error(`charges by status: ${JSON.stringify(byStatus)}`);
      const transfers = Number(
        (
          await kasse.db
            .selectFrom('evm_transfers')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('purpose', '=', 'charge')
            .executeTakeFirstOrThrow()
        ).n,
      );
      if (transfers !== n) throw new Error(`${transfers} charge transfers for ${n} periods`);
      const plainMs = (plainBefore.wall_ms + plainAfter.wall_ms) / 2;
      return {
        subscriptions: n,
        charged_once: byStatus.succeeded,
        charge_transactions: transfers,
        due_to_last_paid_ms: Math.round(chargedMs),
        worker_passes: passes,
        plain_transfers: [plainBefore, plainAfter],
        wall_ratio_to_plain: Math.round((chargedMs / plainMs) * 100) / 100,
        grants_relayed_ms: Math.round(grantsMs),
        load_average_1m: { before: load0, after: load1 },
        note:
          'One Kasse process on a private Hardhat node (automine, one confirmation) and a throwaway PostgreSQL on the ' +
          'same cores; each worker pass runs the subscriptions (scheduler, relays, charges) then the hot-wallet sender, ' +
          'and moves the fake clock 5 s (a submitted charge is looked at again after 5 s). Charges are sent one ' +
          'transaction each from the one hot wallet, as the plain transfers are.',
      };
    } finally {
      await k.close();
    }
  } finally {
    await node.stop();
    await pg.stop();
  }
}
