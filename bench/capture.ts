/**
 * Hold and capture on chain: gas of the escrow's authorize, capture and void (AuthCaptureEscrow and the ERC-3009
 * payment collector placed at the canonical addresses on a private Hardhat node, with TestUSDC) against a plain USDC
 * `transferWithAuthorization` of the same payer to the same merchant, measured in the same run. Steady state: the
 * operator's token store is deployed and holds money, the merchant and fee receiver already hold the token; every
 * payer signature is fresh. Goal: authorize + one capture ≤ 2× a plain transfer. Each figure is the median of
 * BENCH_CAPTURE_N transactions (gas is deterministic up to signature length, so the spread is a few gas).
 */
import { randomBytes } from 'node:crypto';
import { getAddress, hexToBigInt, type Address, type Hex } from 'viem';
import { authCaptureEscrowAbi, erc20Abi } from '../src/chains/evm/contracts.ts';
import {
  AUTH_CAPTURE_V1_1,
  payerAgnosticHash,
  placeAuthCaptureContracts,
  type PaymentInfo,
} from '../src/chains/evm/escrow.ts';
import { startHardhatNode, TestChain, TRANSFER_WITH_AUTHORIZATION_TYPES } from '../test/harness/hardhat.ts';

const N = Number(process.env.BENCH_CAPTURE_N ?? 9);
const CHAIN_ID = 31337;
const USDC = 1_000_000n;
const { escrow: ESCROW, erc3009Collector: COLLECTOR } = AUTH_CAPTURE_V1_1;

const median = (xs: bigint[]) => [...xs].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[Math.floor(xs.length / 2)]!;
const fresh = (): Address => getAddress(`0x${randomBytes(20).toString('hex')}`);
const nonce = (): Hex => `0x${randomBytes(32).toString('hex')}`;

export async function run() {
  const node = await startHardhatNode();
  try {
    const chain = new TestChain(node.url);
    await placeAuthCaptureContracts({ request: (m, p) => chain.rpc(m, p) });
    const [operator, payer, relayer] = await Promise.all([chain.newWallet(), chain.newWallet(), chain.newWallet()]);
    const [merchant, feeReceiver] = [fresh(), fresh()];
    const usdc = await chain.deployTestUsdc(operator);
    await chain.receipt(await chain.mint(operator, usdc, payer.address, 10_000n * USDC));
    const domain = { name: 'Test USDC', version: '2', chainId: CHAIN_ID, verifyingContract: usdc } as const;

    const info = async (maxAmount = 10n * USDC): Promise<PaymentInfo> => {
      const now = Number((await chain.client.getBlock()).timestamp);
      return {
        operator: operator.address,
        payer: payer.address,
        receiver: merchant,
        token: usdc,
        maxAmount,
        preApprovalExpiry: now + 3600,
        authorizationExpiry: now + 7200,
        refundExpiry: now + 86_400,
        minFeeBps: 0,
        maxFeeBps: 100,
        feeReceiver,
        salt: hexToBigInt(nonce()),
      };
    };
    const sign = (p: PaymentInfo) =>
      payer.signTypedData({
        account: payer.account,
        domain,
        types: { ReceiveWithAuthorization: TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization },
        primaryType: 'ReceiveWithAuthorization',
        message: {
          from: payer.address,
          to: COLLECTOR,
          value: p.maxAmount,
          validAfter: 0n,
          validBefore: BigInt(p.preApprovalExpiry),
          nonce: payerAgnosticHash(CHAIN_ID, p),
        },
      });
    const escrow = async (fn: string, args: readonly unknown[]) =>
      (await chain.write(operator, ESCROW, authCaptureEscrowAbi, fn, args)).gasUsed;
    const authorize = async (amount = 10n * USDC) => {
      const p = await info();
      return { p, gas: await escrow('authorize', [p, amount, COLLECTOR, await sign(p)]) };
    };

    // Warm-up: the store is deployed and keeps a held payment; merchant and fee receiver hold the token.
    const held = await authorize();
    await escrow('capture', [held.p, 1n * USDC, 10_000n, feeReceiver]);
    const storeCreated = held.gas;

    const plain: bigint[] = [];
    const authorizeFull: bigint[] = [];
    const authorizePartial: bigint[] = [];
    const capture: bigint[] = [];
    const captureWithFee: bigint[] = [];
    const captureSecond: bigint[] = [];
    const voids: bigint[] = [];
    for (let i = 0; i < N; i++) {
      const message = {
        from: payer.address,
        to: merchant,
        value: 10n * USDC,
        validAfter: 0n,
        validBefore: BigInt(Number((await chain.client.getBlock()).timestamp) + 3600),
        nonce: nonce(),
      };
      const signature = await payer.signTypedData({
        account: payer.account,
        domain,
        types: TRANSFER_WITH_AUTHORIZATION_TYPES,
        primaryType: 'TransferWithAuthorization',
        message,
      });
      const args = [
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
        signature,
      ];
      plain.push((await chain.write(relayer, usdc, erc20Abi, 'transferWithAuthorization', args)).gasUsed);

      const full = await authorize();
      authorizeFull.push(full.gas);
      capture.push(await escrow('capture', [full.p, 10n * USDC, 0n, feeReceiver]));

      const partial = await authorize(8n * USDC);
      authorizePartial.push(partial.gas);
      captureWithFee.push(await escrow('capture', [partial.p, 5n * USDC, 50_000n, feeReceiver]));
      captureSecond.push(await escrow('capture', [partial.p, 2n * USDC, 0n, feeReceiver]));
      voids.push(await escrow('void', [partial.p]));
    }
    const m = {
      plain_transfer_with_authorization: median(plain),
      authorize: median(authorizeFull),
      authorize_below_max: median(authorizePartial),
      capture: median(capture),
      capture_with_fee: median(captureWithFee),
      capture_again: median(captureSecond),
      void: median(voids),
    };
    const ratio = (x: bigint) => Math.round((Number(x) / Number(m.plain_transfer_with_authorization)) * 100) / 100;
    return {
      transactions_per_figure: N,
      gas: Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Number(v)])),
      ratio_to_plain: {
        authorize: ratio(m.authorize),
        capture: ratio(m.capture),
        void: ratio(m.void),
        authorize_plus_capture: ratio(m.authorize + m.capture),
      },
      goal_authorize_plus_capture: 2,
      first_payment_of_an_operator_gas: Number(storeCreated),
      notes:
        'Gas per transaction (21,000 base included), medians. authorize: amount = maxAmount; authorize_below_max also ' +
        'returns the uncollected rest to the payer. capture_with_fee pays the fee receiver as well; capture_again is ' +
        "a second partial capture of the same payment; void returns the rest. The operator's token store is " +
        'deployed and non-empty (steady state); first_payment_of_an_operator_gas is the very first authorize.',
    };
  } finally {
    await node.stop();
  }
}
