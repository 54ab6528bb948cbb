/**
 * Subscriptions that charge themselves, on chain: gas per charge through SubscriptionCollector (one `charge` per
 * transaction, and `chargeBatch` of BENCH_SUBSCRIPTION_BATCHES grants at once) against a plain USDC `transfer` of the
 * same amount from a payer to the same merchant, measured in the same run on a private Hardhat node with TestUSDC.
 * Steady state: the merchant already holds the token, every payer holds it and granted with a permit for the grant's
 * total (so each charge also lowers an allowance, as it will in use). Kept apart from bench/subscriptions.ts, which
 * runs the scheduler against PostgreSQL for minutes; this one needs only the chain. Goal: a charge ≤ 1.3× a plain
 * transfer, or ≤ 0.7× in batches.
 */
import { randomBytes } from 'node:crypto';
import { getAddress, maxUint256, parseSignature, type Hex } from 'viem';
import { erc20Abi, subscriptionCollectorAbi } from '../src/chains/evm/contracts.ts';
import { permitTypedData, termsTypedData, type SubscriptionTerms } from '../src/chains/evm/subscription-collector.ts';
import { startHardhatNode, TestChain, type TestWallet } from '../test/harness/hardhat.ts';

const SINGLE = Number(process.env.BENCH_SUBSCRIPTION_SINGLE ?? 20);
const BATCHES = (process.env.BENCH_SUBSCRIPTION_BATCHES ?? '10,50,200').split(',').map(Number);
const CHAIN_ID = 31337;
const USDC = 1_000_000n;
const AMOUNT = 15n * USDC;

const median = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[Math.floor(xs.length / 2)]!;

export async function run() {
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
