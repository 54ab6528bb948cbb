/**
 * Hold and capture on EVM: where the escrow contracts live and how a payment is identified. Live networks use the
 * audited commerce-payments v1.1 deployment at its canonical addresses; a local development node (Hardhat, Anvil)
 * gets this project's own AuthCaptureEscrow, ERC3009PaymentCollector and OperatorRefundCollector (contracts/)
 * placed at those same addresses with `hardhat_setCode` / `anvil_setCode`, because the official x402 `auth-capture`
 * client signs only for the canonical deployment. `placeAuthCaptureContracts` refuses any other node, and refuses
 * to overwrite different code already at a canonical address (a fork of a live chain carries the audited contracts).
 */
import { encodeAbiParameters, encodeDeployData, keccak256, toHex, zeroAddress, type Address, type Hex } from 'viem';
import { artifact } from './contracts.ts';

/** The canonical commerce-payments v1.1 addresses (the same on every chain it is deployed to). */
export const AUTH_CAPTURE_V1_1 = {
  escrow: '0xf96815976523E00e65Be8f34cA5e64b4f41EB19c',
  erc3009Collector: '0x8612dfdc421f80336cd14E8EF9cb1E765dB5ab88',
  operatorRefundCollector: '0x7a03443724d14798c4AB4622F1DAAcA761Fea486',
} as const satisfies Record<string, Address>;

export type AuthCaptureDeployment = { escrow: Address; erc3009Collector: Address; operatorRefundCollector: Address };

/** The escrow's `PaymentInfo`: what the payer agrees to. Amounts in the token's smallest unit, times in seconds. */
export interface PaymentInfo {
  operator: Address;
  payer: Address;
  receiver: Address;
  token: Address;
  maxAmount: bigint;
  preApprovalExpiry: number;
  authorizationExpiry: number;
  refundExpiry: number;
  minFeeBps: number;
  maxFeeBps: number;
  feeReceiver: Address;
  salt: bigint;
}

export const PAYMENT_INFO_TYPEHASH = keccak256(
  toHex(
    'PaymentInfo(address operator,address payer,address receiver,address token,uint120 maxAmount,uint48 preApprovalExpiry,uint48 authorizationExpiry,uint48 refundExpiry,uint16 minFeeBps,uint16 maxFeeBps,address feeReceiver,uint256 salt)',
  ),
);

/** The escrow's `getHash(paymentInfo)`: the payment's id on `chainId` at `escrow`. */
export function paymentInfoHash(chainId: number, info: PaymentInfo, escrow: Address = AUTH_CAPTURE_V1_1.escrow): Hex {
  const inner = keccak256(
    encodeAbiParameters(
      [
        { type: 'bytes32' },
        { type: 'address' },
        { type: 'address' },
        { type: 'address' },
        { type: 'address' },
        { type: 'uint120' },
        { type: 'uint48' },
        { type: 'uint48' },
        { type: 'uint48' },
        { type: 'uint16' },
        { type: 'uint16' },
        { type: 'address' },
        { type: 'uint256' },
      ],
      [
        PAYMENT_INFO_TYPEHASH,
        info.operator,
        info.payer,
        info.receiver,
        info.token,
        info.maxAmount,
        info.preApprovalExpiry,
        info.authorizationExpiry,
        info.refundExpiry,
        info.minFeeBps,
        info.maxFeeBps,
        info.feeReceiver,
        info.salt,
      ],
    ),
  );
  return keccak256(
    encodeAbiParameters(
      [{ type: 'uint256' }, { type: 'address' }, { type: 'bytes32' }],
      [BigInt(chainId), escrow, inner],
    ),
  );
}

/** The nonce of the payer's ERC-3009 authorization: the payment's hash with the payer set to zero. */
export function payerAgnosticHash(chainId: number, info: PaymentInfo, escrow: Address = AUTH_CAPTURE_V1_1.escrow): Hex {
  return paymentInfoHash(chainId, { ...info, payer: zeroAddress }, escrow);
}

/** The JSON-RPC a node answers (RpcClient, or any `request(method, params)`). */
export interface NodeRpc {
  request<T>(method: string, params?: unknown[]): Promise<T>;
}

/**
 * Places the escrow and its two collectors at the canonical v1.1 addresses on a local Hardhat or Anvil node and
 * returns the addresses. Idempotent: code already placed is left as it is. The runtime code comes from an
 * `eth_call` of each contract's creation code (the collectors built with the canonical escrow's address), so nothing
 * is deployed elsewhere and no account pays gas.
 */
export async function placeAuthCaptureContracts(rpc: NodeRpc): Promise<AuthCaptureDeployment> {
  const client = await rpc.request<string>('web3_clientVersion');
  const setCode = /^hardhat/i.test(client) ? 'hardhat_setCode' : /^anvil/i.test(client) ? 'anvil_setCode' : null;
  if (!setCode)
    throw new Error(`refusing to place the escrow contracts: ${client} is not a local Hardhat or Anvil node`);
  const escrow = AUTH_CAPTURE_V1_1.escrow;
  const placements: [Address, Hex][] = [
    [escrow, artifact('AuthCaptureEscrow').bytecode],
    [
      AUTH_CAPTURE_V1_1.erc3009Collector,
      encodeDeployData({
        abi: artifact('ERC3009PaymentCollector').abi,
        bytecode: artifact('ERC3009PaymentCollector').bytecode,
        args: [escrow],
      }),
    ],
    [
      AUTH_CAPTURE_V1_1.operatorRefundCollector,
      encodeDeployData({
        abi: artifact('OperatorRefundCollector').abi,
        bytecode: artifact('OperatorRefundCollector').bytecode,
        args: [escrow],
      }),
    ],
  ];
  for (const [address, creation] of placements) {
    const runtime = await rpc.request<Hex>('eth_call', [{ data: creation }, 'latest']);
    const present = await rpc.request<Hex>('eth_getCode', [address, 'latest']);
    if (present === runtime) continue;
    if (present !== '0x')
      throw new Error(`refusing to place the escrow contracts: ${address} already holds other code on this node`);
    await rpc.request(setCode, [address, runtime]);
  }
  return { ...AUTH_CAPTURE_V1_1 };
}
