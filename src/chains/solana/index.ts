/**
 * The Solana chain family, as far as Kasse reads and serves it today: networks of family `solana`, their token
 * mints, and addresses (base58, 32 bytes) with Solana Pay URIs, so the test-mode simulator serves Solana coins. No
 * adapter runs yet: a live Solana network is unavailable until one does (DESIGN: "Solana").
 */
import { base58 } from '@scure/base';
import { formatUnits } from '../../core/money.ts';
import type { ChainFamily } from '../plugin.ts';

/** The bytes of a base58 string, or null when it is not one. */
export function decodeBase58(text: string): Uint8Array | null {
  try {
    return base58.decode(text);
  } catch {
    return null;
  }
}

const isAddress = (text: string): boolean => decodeBase58(text)?.length === 32;

const solana: ChainFamily = {
  name: 'solana',
  format: {
    isValidAddress: isAddress,
    addressFromBytes: (bytes) => base58.encode(bytes.subarray(0, 32)),
    paymentUri: (_network, token, address, amount) =>
      `solana:${address}?amount=${formatUnits(amount, token.decimals)}${token.contract ? `&spl-token=${token.contract}` : ''}`,
  },
  networks: {
    contract: { canonical: (value) => (isAddress(value) ? value : null), name: 'a Solana address' },
  },
};

export default solana;
