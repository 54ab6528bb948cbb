/**
 * The EVM family's x402 `auth-capture` scheme (docs/x402.md, "Holds"): what the official `AuthCaptureEvmScheme`
 * client of `@x402/evm` signs — one ERC-3009 `ReceiveWithAuthorization` of the whole amount to the escrow's ERC-3009
 * collector, whose nonce is the payer-agnostic hash of the escrow's `PaymentInfo` rebuilt from the requirements and
 * the payload's salt — settled by Kasse's hot wallet as the escrow's operator: `authorize` (a hold the merchant
 * captures, voids and refunds through the payments API) or, when the requirements' `paymentFlow` is
 * `authorization`, `charge` (paid at once). Offered only on networks with a node whose escrow sits at the canonical
 * v1.1 address (`evm.auth_capture` in the networks file: the audited deployment live, this project's own placed
 * there on a local node by `kasse evm deploy-escrow`).
 *
 * Kasse is a delegated operator: `captureAuthorizer` must be its hot wallet, `policy` zero, and, as it takes its fee
 * in the ledger, `minFeeBps` 0 (captures pay no fee on chain). Everything the exact scheme checks is checked too, on
 * Kasse's clock, with the scheme's official `invalid_auth_capture_evm_*` codes; the relay and its following are the
 * exact scheme's (x402.ts), with the escrow's call and its event in place of the token's.
 */
import {
  decodeFunctionResult,
  encodeEventTopics,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  isAddress,
  keccak256,
  size,
  toHex,
  zeroAddress,
  type Address,
  type Hex,
} from 'viem';
import type { Mode } from '../../core/mode.ts';
import type { X402Hold, X402Kind, X402Request, X402Verdict } from '../x402.ts';
import type { EvmAdapter } from './adapter.ts';
import { authCaptureEscrowAbi, erc20Abi } from './contracts.ts';
import { AUTH_CAPTURE_V1_1, paymentInfoHash, payerAgnosticHash, type PaymentInfo } from './escrow.ts';
import { authorizationDigest, eip3009Abi, revertReason, type Authorization } from './gasless.ts';
import { toStored } from './holds.ts';
import type { EvmSender } from './sender.ts';
import { authorizationKey, authorizationOf, EvmX402, type ReceiptLog } from './x402.ts';

export const AUTH_CAPTURE = 'auth-capture';

/** The scheme's official refusal codes (the `auth-capture` EVM binding). */
export const X402_HOLD_ERRORS = {
  payload: 'invalid_auth_capture_evm_payload_format',
  extra: 'invalid_auth_capture_evm_extra',
  flow: 'invalid_auth_capture_evm_unsupported_payment_flow',
  operatorType: 'invalid_auth_capture_evm_unsupported_operator_type',
  operator: 'invalid_auth_capture_evm_operator_not_admitted',
  policy: 'invalid_auth_capture_evm_policy',
  method: 'invalid_auth_capture_evm_unsupported_asset_transfer_method',
  methodMismatch: 'invalid_auth_capture_evm_payload_method_mismatch',
  captureDeadline: 'invalid_auth_capture_evm_capture_deadline_expired',
  ordering: 'invalid_auth_capture_evm_deadline_ordering',
  expired: 'invalid_auth_capture_evm_authorization_expired',
  notYetValid: 'invalid_auth_capture_evm_authorization_not_yet_valid',
  collector: 'invalid_auth_capture_evm_token_collector_mismatch',
  amount: 'invalid_auth_capture_evm_amount_mismatch',
  salt: 'invalid_auth_capture_evm_salt_binding_mismatch',
  nonce: 'invalid_auth_capture_evm_nonce_mismatch',
  signature: 'invalid_auth_capture_evm_signature',
  balance: 'invalid_auth_capture_evm_insufficient_balance',
  simulation: 'invalid_auth_capture_evm_simulation_failed',
  collected: 'invalid_auth_capture_evm_payment_already_collected',
  feeBps: 'invalid_auth_capture_evm_fee_bps_out_of_range',
} as const;

/** The official facilitator refuses an authorization or a capture deadline within this many seconds. */
const SKEW_SECONDS = 6n;
const RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
  toHex(
    'ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)',
  ),
);
const SALT_BINDING_TYPEHASH = keccak256(
  toHex('x402AuthCaptureSaltBinding(address receiverAuthorizer,address policy,uint256 saltNonce)'),
);
const COLLECTED_TOPICS = [
  encodeEventTopics({ abi: authCaptureEscrowAbi, eventName: 'PaymentAuthorized' })[0],
  encodeEventTopics({ abi: authCaptureEscrowAbi, eventName: 'PaymentCharged' })[0],
];
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;

/** A payload read against its requirements: the authorization, and the escrow payment it collects. */
interface Collect {
  a: Authorization & { signature: Hex };
  info: PaymentInfo;
  flow: 'authorize' | 'charge';
}
type Refusal = { reason: string; message: string; payer?: string };

export class EvmHoldX402 extends EvmX402 {
  /** The exact scheme's networks that have a node and the escrow at its canonical address, with Kasse's terms. */
  override async kinds(mode: Mode): Promise<X402Kind[]> {
    const kinds: X402Kind[] = [];
    for (const kind of await super.kinds(mode)) {
      const adapter = this.adapter(mode, kind.chain);
      if (!adapter || !this.hasEscrow(adapter)) continue;
      const operator = (adapter.sender as EvmSender).address;
      kinds.push({
        ...kind,
        scheme: AUTH_CAPTURE,
        extra: {
          ...kind.extra,
          authCaptureEscrow: AUTH_CAPTURE_V1_1.escrow,
          captureAuthorizer: operator,
          feeRecipient: operator,
          minFeeBps: 0,
          maxFeeBps: 0,
        },
        codes: { recipient: 'invalid_payment_requirements', replay: X402_HOLD_ERRORS.collected },
      });
    }
    return kinds;
  }

  override async verify(r: X402Request): Promise<X402Verdict> {
    const adapter = this.adapter(r.mode, r.kind.chain);
    if (!adapter) return { valid: false, reason: 'invalid_network', message: 'No node serves this network.' };
    const c = this.collect(r, (adapter.sender as EvmSender).address);
    if ('reason' in c) return { valid: false, ...c };
    const { a } = c;
    const no = (reason: string, message: string): X402Verdict => ({ valid: false, reason, message, payer: a.from });
    const token = getAddress(r.kind.token.contract!);
    const separator = await this.call(
      adapter,
      token,
      encodeFunctionData({ abi: eip3009Abi, functionName: 'DOMAIN_SEPARATOR' }),
    );
    const signer =
      size(a.signature) === 65
        ? await this.signer(authorizationDigest(separator, a, RECEIVE_WITH_AUTHORIZATION_TYPEHASH), a.signature)
        : null;
    if (signer !== a.from)
      return no(X402_HOLD_ERRORS.signature, 'The signature is not a ReceiveWithAuthorization signed by from.');
    const read = async <F extends 'authorizationState' | 'balanceOf'>(functionName: F, args: readonly unknown[]) =>
      decodeFunctionResult({
        abi: erc20Abi,
        functionName,
        data: await this.call(adapter, token, encodeFunctionData({ abi: erc20Abi, functionName, args } as never)),
      } as never) as F extends 'balanceOf' ? bigint : boolean;
    if (await read('authorizationState', [a.from, a.nonce]))
      return no(X402_HOLD_ERRORS.collected, 'This payment was already collected into the escrow.');
    const balance = await read('balanceOf', [a.from]);
    if (balance < a.value)
      return no(X402_HOLD_ERRORS.balance, `The payer holds ${balance}, less than the ${a.value} authorized.`);
    try {
      const { to, data } = this.relay(r);
      await adapter.rpc().request('eth_call', [{ from: c.info.operator, to, data }, 'latest']);
    } catch (err) {
      const reason = revertReason(err);
      if (reason === null) throw err;
      return no(X402_HOLD_ERRORS.simulation, `The escrow would refuse it: ${reason}`);
    }
    return { valid: true, payer: a.from, key: authorizationKey(token, a) };
  }

  /** The escrow's `authorize` (or `charge`) of the whole amount with the payer's signature, from the hot wallet. */
  protected override relay(r: X402Request): { to: Address; data: Hex; destination: string; amount: bigint } {
    const { a, info, flow } = this.collected(r);
    const args = [info, a.value, AUTH_CAPTURE_V1_1.erc3009Collector, a.signature] as const;
    const data =
      flow === 'charge'
        ? encodeFunctionData({
            abi: authCaptureEscrowAbi,
            functionName: 'charge',
            args: [...args, 0n, info.feeReceiver],
          })
        : encodeFunctionData({ abi: authCaptureEscrowAbi, functionName: 'authorize', args });
    const escrow = getAddress(AUTH_CAPTURE_V1_1.escrow);
    return { to: escrow, data, destination: flow === 'charge' ? info.receiver : escrow, amount: a.value };
  }

  /** The escrow's PaymentAuthorized or PaymentCharged: the payment was collected. */
  protected override landed(l: ReceiptLog, row: { to_address: string }): boolean {
    return l.address.toLowerCase() === row.to_address.toLowerCase() && COLLECTED_TOPICS.includes(l.topics[0]!);
  }

  hold(r: X402Request): X402Hold {
    const { info, flow } = this.collected(r);
    return {
      flow,
      payer: info.payer,
      reference: paymentInfoHash(Number(r.kind.network.split(':')[1]), info),
      terms: toStored(info),
      captureBefore: new Date(info.authorizationExpiry * 1000),
      refundBefore: new Date(info.refundExpiry * 1000),
    };
  }

  /** The collect of a request that passed `verify` (settle and recording read it again from the stored request). */
  private collected(r: X402Request): Collect {
    const c = this.collect(r, String(r.requirements.extra?.captureAuthorizer ?? ''), false);
    if ('reason' in c) throw new Error(`auth-capture request no longer reads: ${c.message}`);
    return c;
  }

  /**
   * Reads the payload against the requirements: the extra fields Kasse's terms fix, the deadlines (on Kasse's
   * clock, unless `timely` is false: a stored request is read again after its window), the collector, the amount,
   * the salt binding and the nonce the payer signed. Everything but the signature and the chain.
   */
  private collect(r: X402Request, operator: string, timely = true): Collect | Refusal {
    const e = r.requirements.extra ?? {};
    const p = r.payload;
    if ('permit2Authorization' in p)
      return refusal(X402_HOLD_ERRORS.methodMismatch, 'Kasse collects by ERC-3009 only, not by Permit2.');
    const a = authorizationOf(p);
    const salt = p.salt;
    const saltNonce = p.saltNonce;
    if (!a || typeof salt !== 'string' || !BYTES32.test(salt) || (saltNonce !== undefined && !isBytes32(saltNonce)))
      return refusal(
        X402_HOLD_ERRORS.payload,
        'The payload is not a ReceiveWithAuthorization with its signature and salt.',
      );
    const no = (reason: string, message: string): Refusal => ({ reason, message, payer: a.from });
    if (e.assetTransferMethod !== undefined && e.assetTransferMethod !== 'eip3009')
      return no(X402_HOLD_ERRORS.method, 'Kasse collects by ERC-3009 (assetTransferMethod eip3009) only.');
    if (typeof e.name !== 'string' || typeof e.version !== 'string')
      return no(X402_HOLD_ERRORS.extra, 'The requirements name no EIP-712 domain (extra.name and extra.version).');
    if (e.authCaptureEscrow !== undefined && !sameAddress(e.authCaptureEscrow, AUTH_CAPTURE_V1_1.escrow))
      return no(X402_HOLD_ERRORS.extra, `Kasse collects into the v1.1 escrow ${AUTH_CAPTURE_V1_1.escrow} only.`);
    if (e.operatorType !== undefined && e.operatorType !== 'delegated')
      return no(X402_HOLD_ERRORS.operatorType, 'Kasse is a delegated operator (operatorType delegated).');
    if (!sameAddress(e.captureAuthorizer, operator))
      return no(X402_HOLD_ERRORS.operator, `captureAuthorizer must be Kasse's hot wallet ${operator}.`);
    if (e.policy !== undefined && !sameAddress(e.policy, zeroAddress))
      return no(X402_HOLD_ERRORS.policy, 'Kasse takes no policy operator (extra.policy must be zero).');
    if (e.autoCapture === true) return no(X402_HOLD_ERRORS.flow, 'autoCapture is gone; paymentFlow selects the flow.');
    const flow = e.paymentFlow === undefined || e.paymentFlow === 'escrow' ? 'authorize' : 'charge';
    if (e.paymentFlow !== undefined && e.paymentFlow !== 'escrow' && e.paymentFlow !== 'authorization')
      return no(X402_HOLD_ERRORS.flow, 'paymentFlow must be escrow (a hold) or authorization (a charge).');
    const bps = (v: unknown) =>
      Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 10_000 ? (v as number) : null;
    const [minFeeBps, maxFeeBps] = [bps(e.minFeeBps), bps(e.maxFeeBps)];
    if (minFeeBps === null || maxFeeBps === null || minFeeBps > maxFeeBps || !isAddress(String(e.feeRecipient)))
      return no(X402_HOLD_ERRORS.extra, 'minFeeBps, maxFeeBps (0 to 10,000, min ≤ max) and feeRecipient are required.');
    if (minFeeBps !== 0) return no(X402_HOLD_ERRORS.feeBps, 'Kasse takes its fee in its ledger: minFeeBps must be 0.');
    const seconds = (v: unknown) => (Number.isSafeInteger(v) && (v as number) > 0 ? BigInt(v as number) : null);
    const [captureDeadline, refundDeadline] = [seconds(e.captureDeadline), seconds(e.refundDeadline)];
    if (captureDeadline === null || refundDeadline === null)
      return no(X402_HOLD_ERRORS.extra, 'captureDeadline and refundDeadline (Unix seconds) are required.');
    if (timely) {
      const now = BigInt(Math.floor(this.deps.clock.now().getTime() / 1000));
      if (captureDeadline <= now + SKEW_SECONDS)
        return no(X402_HOLD_ERRORS.captureDeadline, 'captureDeadline is past or too close.');
      if (
        refundDeadline < captureDeadline ||
        now + BigInt(r.requirements.maxTimeoutSeconds) > captureDeadline ||
        a.validBefore > captureDeadline
      )
        return no(X402_HOLD_ERRORS.ordering, 'now + maxTimeoutSeconds ≤ captureDeadline ≤ refundDeadline is violated.');
      if (a.validBefore <= now + SKEW_SECONDS)
        return no(X402_HOLD_ERRORS.expired, 'The authorization has expired (validBefore).');
      if (a.validAfter > now) return no(X402_HOLD_ERRORS.notYetValid, 'The authorization is not valid yet.');
    }
    if (a.to !== getAddress(AUTH_CAPTURE_V1_1.erc3009Collector))
      return no(X402_HOLD_ERRORS.collector, `The authorization pays ${a.to}, not the escrow's ERC-3009 collector.`);
    if (a.value !== r.amount)
      return no(X402_HOLD_ERRORS.amount, `The authorization is of ${a.value}, not the ${r.amount} required.`);
    const receiverAuthorizer = isAddress(String(e.receiverAuthorizer))
      ? getAddress(String(e.receiverAuthorizer))
      : zeroAddress;
    const bound = receiverAuthorizer !== zeroAddress;
    if (bound !== (saltNonce !== undefined))
      return no(X402_HOLD_ERRORS.payload, 'saltNonce must be present exactly when receiverAuthorizer is set.');
    if (bound) {
      const expected = keccak256(
        encodeAbiParameters(
          [{ type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }],
          [SALT_BINDING_TYPEHASH, receiverAuthorizer, zeroAddress, BigInt(saltNonce as string)],
        ),
      );
      if (BigInt(expected) !== BigInt(salt))
        return no(X402_HOLD_ERRORS.salt, 'The salt is not bound to receiverAuthorizer with saltNonce.');
    }
    const info: PaymentInfo = {
      operator: getAddress(String(e.captureAuthorizer)),
      payer: a.from,
      receiver: getAddress(r.payTo),
      token: getAddress(r.kind.token.contract!),
      maxAmount: r.amount,
      preApprovalExpiry: Number(a.validBefore),
      authorizationExpiry: Number(captureDeadline),
      refundExpiry: Number(refundDeadline),
      minFeeBps,
      maxFeeBps,
      feeReceiver: getAddress(String(e.feeRecipient)),
      salt: BigInt(salt),
    };
    if (payerAgnosticHash(Number(r.kind.network.split(':')[1]), info).toLowerCase() !== a.nonce)
      return no(X402_HOLD_ERRORS.nonce, 'The nonce is not the payment the requirements and the salt make.');
    return { a, info, flow };
  }

  /**
   * The network's escrow (`evm.auth_capture`, docs/capture.md) is the canonical v1.1 deployment: the only one the
   * official client signs for.
   */
  private hasEscrow(adapter: EvmAdapter): boolean {
    const h = adapter.holds;
    return (
      !!h &&
      sameAddress(h.escrow, AUTH_CAPTURE_V1_1.escrow) &&
      sameAddress(h.collector, AUTH_CAPTURE_V1_1.erc3009Collector) &&
      sameAddress(h.refundCollector, AUTH_CAPTURE_V1_1.operatorRefundCollector)
    );
  }
}

const refusal = (reason: string, message: string): Refusal => ({ reason, message });
const isBytes32 = (v: unknown): boolean => typeof v === 'string' && BYTES32.test(v);
const sameAddress = (a: unknown, b: string): boolean =>
  typeof a === 'string' && isAddress(a, { strict: false }) && a.toLowerCase() === b.toLowerCase();
