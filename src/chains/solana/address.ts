/** Solana addresses: 32-byte public keys (on or off the ed25519 curve) written in base58. */
import { base58 } from '@scure/base';

/** The bytes of a base58 string, or null when it is not one. */
export function decodeBase58(text: string): Uint8Array | null {
  try {
    return base58.decode(text);
  } catch {
    return null;
  }
}

/** Whether `text` is a Solana address: base58 of exactly 32 bytes (token accounts of program-owned wallets too). */
export function isSolanaAddress(text: string): boolean {
  return /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(text) && decodeBase58(text)?.length === 32;
}

export function encodeBase58(bytes: Uint8Array): string {
  return base58.encode(bytes);
}
