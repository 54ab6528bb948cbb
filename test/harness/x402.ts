/**
 * x402's EVM exact scheme as a client writes it: an EIP-3009 `TransferWithAuthorization` signed in the token's own
 * EIP-712 domain, and the body `HTTPFacilitatorClient` posts to verify and settle it.
 */
import { randomBytes } from 'node:crypto';
import { getAddress, type Address, type Hex, type LocalAccount } from 'viem';
import { TRANSFER_WITH_AUTHORIZATION_TYPES } from './hardhat.ts';

export interface AuthorizationOptions {
  /** Who signs; the authorization is `from` them unless `from` says otherwise (a forged signature). */
  signer: LocalAccount;
  from?: Address;
  /** The token's EIP-712 domain; its name and version are the requirements' `extra`. */
  domain: { name: string; version: string; chainId: number; verifyingContract: Address };
  network: string;
  /** The requirements' asset (the domain's contract, unless testing a wrong one). */
  asset: string;
  payTo: string;
  /** The authorization's recipient: `payTo` unless told. */
  to?: string;
  value: bigint;
  /** The requirements' amount: `value` unless told. */
  amount?: string;
  /** Unix seconds. */
  validAfter: number;
  validBefore: number;
  maxTimeoutSeconds: number;
  resource: { url: string; description: string; mimeType?: string };
}

/** A freshly signed authorization (a random nonce) and the facilitator body that carries it. */
export async function authorizationBody(o: AuthorizationOptions) {
  const message = {
    from: o.from ?? o.signer.address,
    to: getAddress(o.to ?? o.payTo),
    value: o.value,
    validAfter: BigInt(o.validAfter),
    validBefore: BigInt(o.validBefore),
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
  };
  const signature = await o.signer.signTypedData({
    domain: o.domain,
    types: TRANSFER_WITH_AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  const requirements = {
    scheme: 'exact',
    network: o.network,
    amount: o.amount ?? o.value.toString(),
    asset: o.asset,
    payTo: o.payTo,
    maxTimeoutSeconds: o.maxTimeoutSeconds,
    extra: { name: o.domain.name, version: o.domain.version },
  };
  const authorization = {
    ...message,
    value: message.value.toString(),
    validAfter: message.validAfter.toString(),
    validBefore: message.validBefore.toString(),
  };
  return {
    message,
    signature,
    body: {
      x402Version: 2,
      paymentPayload: {
        x402Version: 2,
        resource: o.resource,
        accepted: requirements,
        payload: { signature, authorization },
      },
      paymentRequirements: requirements,
    },
  };
}
