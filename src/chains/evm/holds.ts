/**
 * The operator's side of hold and capture on EVM (docs/capture.md): a hold's terms are the escrow's `PaymentInfo`,
 * kept by the capture module as JSON (`HoldTerms`: amounts and salt as decimal or hex strings), and every
 * `HoldOperation` the transfers module hands the sender becomes one call of the hot wallet to the escrow at its
 * canonical address. Capture pays no fee on chain (Kasse's fee is taken in the ledger), so holds Kasse captures are
 * made with `minFeeBps` 0. A refund through the escrow takes the money from the hot wallet through the operator
 * refund collector, which needs the hot wallet's allowance (the sender records it once per token).
 */
import { encodeFunctionData, getAddress, type Address, type Hex } from 'viem';
import type { HoldOperation } from '../ports.ts';
import { authCaptureEscrowAbi } from './contracts.ts';
import { AUTH_CAPTURE_V1_1, type PaymentInfo } from './escrow.ts';

/** The purposes of transfers that are calls to the escrow (a refund is one too when it goes back through it). */
export const HOLD_TRANSFER_PURPOSES: readonly string[] = ['authorize', 'capture', 'void', 'refund'];

/** `PaymentInfo` as JSON: what the capture module stores and hands back with every operation. */
export interface HoldTerms {
  operator: string;
  payer: string;
  receiver: string;
  token: string;
  maxAmount: string;
  preApprovalExpiry: number;
  authorizationExpiry: number;
  refundExpiry: number;
  minFeeBps: number;
  maxFeeBps: number;
  feeReceiver: string;
  salt: string;
}

export function holdTerms(info: PaymentInfo): HoldTerms {
  return { ...info, maxAmount: info.maxAmount.toString(), salt: `0x${info.salt.toString(16).padStart(64, '0')}` };
}

export function paymentInfoOf(terms: unknown): PaymentInfo {
  const t = terms as HoldTerms | null;
  if (!t || typeof t !== 'object' || typeof t.maxAmount !== 'string' || typeof t.salt !== 'string')
    throw new Error('the hold has no escrow PaymentInfo');
  return {
    operator: getAddress(t.operator),
    payer: getAddress(t.payer),
    receiver: getAddress(t.receiver),
    token: getAddress(t.token),
    maxAmount: BigInt(t.maxAmount),
    preApprovalExpiry: t.preApprovalExpiry,
    authorizationExpiry: t.authorizationExpiry,
    refundExpiry: t.refundExpiry,
    minFeeBps: t.minFeeBps,
    maxFeeBps: t.maxFeeBps,
    feeReceiver: getAddress(t.feeReceiver),
    salt: BigInt(t.salt),
  };
}

/** The escrow call a hold operation of `amount` is: to the canonical escrow, from the hot wallet (the operator). */
export function escrowCall(op: HoldOperation, amount: bigint): { to: Address; data: Hex } {
  const info = paymentInfoOf(op.terms);
  const to = getAddress(AUTH_CAPTURE_V1_1.escrow);
  switch (op.kind) {
    case 'authorize':
      if (!op.signature) throw new Error('an authorize needs the payer signature');
      return {
        to,
        data: encodeFunctionData({
          abi: authCaptureEscrowAbi,
          functionName: 'authorize',
          args: [info, amount, AUTH_CAPTURE_V1_1.erc3009Collector, op.signature as Hex],
        }),
      };
    case 'capture':
      return {
        to,
        data: encodeFunctionData({
          abi: authCaptureEscrowAbi,
          functionName: 'capture',
          args: [info, amount, 0n, info.feeReceiver],
        }),
      };
    case 'void':
      return { to, data: encodeFunctionData({ abi: authCaptureEscrowAbi, functionName: 'void', args: [info] }) };
    case 'refund':
      return {
        to,
        data: encodeFunctionData({
          abi: authCaptureEscrowAbi,
          functionName: 'refund',
          args: [info, amount, AUTH_CAPTURE_V1_1.operatorRefundCollector, '0x'],
        }),
      };
  }
}
