/**
 * Hold and capture on an EVM network (docs/capture.md): the escrow Kasse operates (AuthCaptureEscrow, escrow.ts) as
 * the network's `HoldAdapter`. A manual payment's coin choice becomes the escrow's `PaymentInfo` — Kasse's hot wallet
 * as operator and receiver, the coin choice's amount as `maxAmount`, its price hold as `preApprovalExpiry`, the
 * payment's `capture_before` and `refund_before` as the authorization and refund expiries, no fee, a salt from the
 * coin choice's id — so the checkout can show the payer exactly what to sign before knowing who pays: one ERC-3009
 * `ReceiveWithAuthorization` of `maxAmount` to the ERC-3009 collector, its nonce the payer-agnostic hash.
 *
 * The checkout posts the signature to `POST /p/<payment_id>/hold`; `submit` builds the terms with the payer, has the
 * node run the exact `authorize` call (an `eth_call` from the hot wallet: signature, balance, expiries all checked
 * on chain) and hands the hold to the capture module, which records it and asks for the `authorize` transfer. The
 * hot-wallet sender turns every hold operation into its escrow call (`call`).
 */
import { Type } from 'typebox';
import {
  decodeErrorResult,
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  keccak256,
  toHex,
  zeroAddress,
  type Address,
  type Hex,
} from 'viem';
import { ApiError, notFound } from '../../core/errors.ts';
import type { HoldAdapter } from '../plugin.ts';
import type { CoinChoice, HoldOperation, HoldsPort, HoldTerms } from '../ports.ts';
import type { TokenConfig } from '../types.ts';
import type { EvmAdapter } from './adapter.ts';
import type { EscrowSettings } from './config.ts';
import { authCaptureEscrowAbi } from './contracts.ts';
import { payerAgnosticHash, paymentInfoHash, type PaymentInfo } from './escrow.ts';
import { isRevert, revertData } from './transfer.ts';

/** The escrow's `PaymentInfo` as a hold keeps it (JSON: amounts and the salt as decimal strings). */
export interface StoredPaymentInfo extends Omit<PaymentInfo, 'maxAmount' | 'salt'> {
  maxAmount: string;
  salt: string;
}

export const toStored = (p: PaymentInfo): StoredPaymentInfo => ({
  ...p,
  maxAmount: p.maxAmount.toString(),
  salt: p.salt.toString(),
});

/** The `PaymentInfo` of stored hold terms. */
export function paymentInfoOf(terms: unknown): PaymentInfo {
  const t = terms as StoredPaymentInfo | null;
  if (!t || typeof t.maxAmount !== 'string') throw new Error('the hold has no escrow terms');
  return { ...t, maxAmount: BigInt(t.maxAmount), salt: BigInt(t.salt) };
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/** The body of `POST /p/{payment_id}/hold`: the payer's signed ReceiveWithAuthorization of a held coin choice. */
export const HoldBody = Type.Object(
  {
    attempt_id: Type.String({ minLength: 1, maxLength: 64 }),
    from: Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' }),
    signature: Type.String({ pattern: '^0x([0-9a-fA-F]{2}){65,2048}$' }),
  },
  { additionalProperties: false },
);
export interface HoldSubmission {
  attempt_id: string;
  from: string;
  signature: string;
}

/** What the payer's wallet signs for a held coin choice (the checkout's button carries it). */
export interface HoldAsk {
  collector: Address;
  value: bigint;
  validBefore: number;
  nonce: Hex;
}

export class EvmHolds implements HoldAdapter {
  readonly escrow: Address;
  readonly collector: Address;
  readonly refundCollector: Address;

  constructor(
    private readonly adapter: EvmAdapter,
    settings: EscrowSettings,
  ) {
    this.escrow = getAddress(settings.escrow);
    this.collector = getAddress(settings.erc3009Collector);
    this.refundCollector = getAddress(settings.operatorRefundCollector);
  }

  /** Kasse's hot wallet: the escrow's operator, and the receiver captures pay. */
  private get operator(): Address {
    const sender = this.adapter.sender;
    if (!sender) throw new Error(`${this.adapter.network.id}: hold and capture needs the hot-wallet sender`);
    return sender.address;
  }

  canHold(token: TokenConfig): boolean {
    return token.chain === this.adapter.network.id && token.kind === 'erc20' && !!token.contract && token.gasless;
  }

  get receiver(): string {
    return this.operator;
  }

  /** The escrow's terms of a held coin choice, for `payer` (zero: what the payer's signature commits to). */
  paymentInfo(
    c: { attemptId: string; payAmount: bigint; expiresAt: Date; hold: HoldTerms },
    token: TokenConfig,
    payer: Address = zeroAddress,
  ): PaymentInfo {
    return {
      operator: this.operator,
      payer,
      receiver: this.operator,
      token: getAddress(token.contract!),
      maxAmount: c.payAmount,
      preApprovalExpiry: seconds(c.expiresAt),
      authorizationExpiry: seconds(c.hold.captureBefore),
      refundExpiry: seconds(c.hold.refundBefore),
      minFeeBps: 0,
      maxFeeBps: 0,
      feeReceiver: zeroAddress,
      salt: BigInt(keccak256(toHex(c.attemptId))),
    };
  }

  /** What the payer signs for a held coin choice. */
  ask(c: { attemptId: string; payAmount: bigint; expiresAt: Date; hold: HoldTerms }, token: TokenConfig): HoldAsk {
    const info = this.paymentInfo(c, token);
    return {
      collector: this.collector,
      value: info.maxAmount,
      validBefore: info.preApprovalExpiry,
      nonce: payerAgnosticHash(this.chainId, info, this.escrow),
    };
  }

  private get chainId(): number {
    return this.adapter.network.chainId!;
  }

  async held(terms: unknown): Promise<{ capturable: bigint; refundable: bigint }> {
    const id = paymentInfoHash(this.chainId, paymentInfoOf(terms), this.escrow);
    const data = encodeFunctionData({ abi: authCaptureEscrowAbi, functionName: 'paymentState', args: [id] });
    const out = await this.adapter.rpc().request<Hex>('eth_call', [{ to: this.escrow, data }, 'latest']);
    const [, capturable, refundable] = decodeFunctionResult({
      abi: authCaptureEscrowAbi,
      functionName: 'paymentState',
      data: out,
    });
    return { capturable, refundable };
  }

  /** The hot wallet's call to the escrow that carries out `op` moving `amount`. */
  call(op: HoldOperation, amount: bigint): { to: Address; data: Hex } {
    const info = paymentInfoOf(op.terms);
    const data =
      op.kind === 'authorize'
        ? encodeFunctionData({
            abi: authCaptureEscrowAbi,
            functionName: 'authorize',
            args: [info, amount, this.collector, op.signature as Hex],
          })
        : op.kind === 'capture'
          ? encodeFunctionData({
              abi: authCaptureEscrowAbi,
              functionName: 'capture',
              args: [info, amount, 0n, info.feeReceiver],
            })
          : op.kind === 'void'
            ? encodeFunctionData({ abi: authCaptureEscrowAbi, functionName: 'void', args: [info] })
            : encodeFunctionData({
                abi: authCaptureEscrowAbi,
                functionName: 'refund',
                args: [info, amount, this.refundCollector, '0x'],
              });
    return { to: this.escrow, data };
  }

  /**
   * A payer's signed authorization from the checkout: the hold's terms with the payer, the exact `authorize` run on
   * the node first (422 naming why it would fail), then handed to the capture module (`holds`). Answers 202.
   */
  async submit(
    choice: CoinChoice | 'no_payment' | 'no_attempt',
    body: HoldSubmission,
    token: TokenConfig | null,
    holds: HoldsPort,
  ): Promise<{ hold_id: string; status: 'authorizing' }> {
    if (choice === 'no_payment') throw notFound('payment');
    if (choice === 'no_attempt')
      throw new ApiError('invalid_request', 'attempt_id is not a coin choice of this payment.', 'attempt_id');
    if (!choice.hold || !token || !this.canHold(token))
      throw new ApiError(
        'invalid_state',
        'This coin choice is paid by sending coins, not by authorizing.',
        'attempt_id',
      );
    const payer = getAddress(body.from);
    const info = this.paymentInfo({ ...choice, hold: choice.hold }, token, payer);
    const signature = body.signature as Hex;
    const op: HoldOperation = { kind: 'authorize', terms: toStored(info), signature };
    const call = this.call(op, info.maxAmount);
    try {
      await this.adapter.rpc().request('eth_call', [{ from: this.operator, ...call }, 'latest']);
    } catch (err) {
      if (!isRevert(err)) throw err;
      throw new ApiError(
        'invalid_state',
        `The escrow refuses this authorization: ${reason(revertData(err))}. Check the account holds ${info.maxAmount} of ${token.id} and sign again.`,
        'signature',
      );
    }
    const { transferId } = await holds.holdSigned({
      mode: choice.mode,
      paymentId: choice.paymentId,
      attemptId: choice.attemptId,
      payer,
      reference: paymentInfoHash(this.chainId, info, this.escrow),
      terms: toStored(info),
      signature,
    });
    return { hold_id: transferId, status: 'authorizing' };
  }
}

/** A revert of the escrow or the token, in words. */
function reason(data: Hex | null): string {
  if (!data || data === '0x') return 'the call reverted';
  try {
    return decodeErrorResult({ abi: authCaptureEscrowAbi, data }).errorName;
  } catch {
    // The token's own revert (a bad signature, a short balance) surfaces as the collector's.
    return 'the token refused the signed authorization';
  }
}
