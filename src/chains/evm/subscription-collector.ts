/**
 * Recurring charges on EVM through SubscriptionCollector (contracts/SubscriptionCollector.sol): the EIP-712 messages
 * a payer signs — the grant's `Terms` and a `Revoke` — and the EIP-2612 `Permit` for the token, as typed data for
 * a wallet's `signTypedData`, so the subscription page, the relayer and the tests build exactly the same messages.
 */
import type { Address, Hex } from 'viem';

/** The terms a payer grants. Amounts in the token's smallest unit; times in seconds. */
export interface SubscriptionTerms {
  payer: Address;
  token: Address;
  receiver: Address;
  /** The only address that may charge (Kasse's hot wallet). */
  operator: Address;
  amountPerPeriod: bigint;
  period: number;
  start: number;
  /** Exclusive: nothing is charged at or after it. */
  end: number;
  /** 32 random bytes: the same terms can be granted again only under a new salt. */
  salt: Hex;
}

export const SUBSCRIPTION_DOMAIN_NAME = 'Kasse Subscriptions';
export const SUBSCRIPTION_DOMAIN_VERSION = '1';

export const SUBSCRIPTION_TERMS_TYPES = {
  Terms: [
    { name: 'payer', type: 'address' },
    { name: 'token', type: 'address' },
    { name: 'receiver', type: 'address' },
    { name: 'operator', type: 'address' },
    { name: 'amountPerPeriod', type: 'uint256' },
    { name: 'period', type: 'uint48' },
    { name: 'start', type: 'uint48' },
    { name: 'end', type: 'uint48' },
    { name: 'salt', type: 'bytes32' },
  ],
} as const;

export const SUBSCRIPTION_REVOKE_TYPES = { Revoke: [{ name: 'grantId', type: 'bytes32' }] } as const;

export const PERMIT_TYPES = {
  Permit: [
    { name: 'owner', type: 'address' },
    { name: 'spender', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'nonce', type: 'uint256' },
    { name: 'deadline', type: 'uint256' },
  ],
} as const;

function collectorDomain(chainId: number, collector: Address) {
  return {
    name: SUBSCRIPTION_DOMAIN_NAME,
    version: SUBSCRIPTION_DOMAIN_VERSION,
    chainId,
    verifyingContract: collector,
  } as const;
}

/** The grant's typed data; its EIP-712 digest is the grant id. */
export function termsTypedData(chainId: number, collector: Address, terms: SubscriptionTerms) {
  return {
    domain: collectorDomain(chainId, collector),
    types: SUBSCRIPTION_TERMS_TYPES,
    primaryType: 'Terms' as const,
    message: terms,
  };
}

/** The payer's signed revocation of `grantId`, which anyone may submit. */
export function revokeTypedData(chainId: number, collector: Address, grantId: Hex) {
  return {
    domain: collectorDomain(chainId, collector),
    types: SUBSCRIPTION_REVOKE_TYPES,
    primaryType: 'Revoke' as const,
    message: { grantId },
  };
}

/**
 * The EIP-2612 permit letting the collector spend `value` of the payer's token. `tokenName`/`tokenVersion` are the
 * token's EIP-712 domain (USDC: its name and "2"). NOTE: a permit sets the allowance, it does not add to it: a payer
 * with another grant on the same token needs a value covering both.
 */
export function permitTypedData(
  chainId: number,
  token: { address: Address; name: string; version: string },
  p: { owner: Address; spender: Address; value: bigint; nonce: bigint; deadline: bigint },
) {
  return {
    domain: { name: token.name, version: token.version, chainId, verifyingContract: token.address },
    types: PERMIT_TYPES,
    primaryType: 'Permit' as const,
    message: p,
  };
}
