/**
 * Deposit and hot-wallet keys and addresses (BIP-32 / BIP-84 native SegWit, P2WPKH), address checks and BIP-21
 * payment URIs.
 *
 * Keys derive from the operator's BIP-39 master seed along BIP-84 paths `m/84'/<coin type>'/<account>'/<change>/<i>`:
 * deposit address number `i` is on the receive chain (change 0), the hot wallet is `…/1/0`. Deposit indexes come
 * from one sequence shared by every chain and mode, so no two coin choices ever share a key.
 */
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';
import { Address, OutScript, p2wpkh } from '@scure/btc-signer';
import { bech32 } from '@scure/base';
import { formatUnits } from '../../core/money.ts';
import { ALL_PARAMS, type UtxoParams } from './params.ts';

const roots = new Map<string, HDKey>();

/** The BIP-32 root of a mnemonic, computed once per process (PBKDF2 is slow on purpose). */
export function rootKey(mnemonic: string): HDKey {
  let root = roots.get(mnemonic);
  if (!root) {
    root = HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic));
    roots.set(mnemonic, root);
  }
  return root;
}

/** The BIP-84 account key `m/84'/<coin type>'/<account>'`. */
export function accountKey(root: HDKey, params: UtxoParams, account: number): HDKey {
  return root.derive(`m/84'/${params.coinType}'/${account}'`);
}

/** Key `change/index` under an account (change 0: deposit addresses; 1: the hot wallet). */
export function childKey(account: HDKey, change: 0 | 1, index: bigint): HDKey {
  if (index < 0n || index >= 2n ** 31n)
    throw new Error(`address index ${index} is outside BIP-32's non-hardened range`);
  return account.deriveChild(change).deriveChild(Number(index));
}

/** The P2WPKH address of a compressed public key. */
export function p2wpkhAddress(publicKey: Uint8Array, params: UtxoParams): string {
  return p2wpkh(publicKey, params.address).address!;
}

/** The P2WPKH address of a 20-byte key hash. */
export function addressOfKeyHash(hash: Uint8Array, params: UtxoParams): string {
  return bech32.encode(params.address.bech32, [0, ...bech32.toWords(hash)]);
}

/**
 * Whether `address` is a destination the sender can pay on the network: its output script is built exactly as the
 * sender builds it (`outputScript`), so an address that decodes but cannot be paid is refused here, not found out
 * when the transfer is signed. Accepted: P2WPKH and P2WSH (BIP-173), P2TR whose program is a valid x-only key
 * (BIP-350), base58check P2PKH/P2SH, each with the network's prefix or version byte. Refused: other witness versions
 * and lengths, and a taproot program that is not a point on the curve (nodes accept those; nobody can spend them).
 */
export function isValidUtxoAddress(address: string, params: UtxoParams): boolean {
  if (typeof address !== 'string' || address.length < 14 || address.length > 90) return false;
  try {
    outputScript(address, params);
    return true;
  } catch {
    return false;
  }
}

/** Valid on some known network (the family-wide check when no network is named). */
export function isValidOnAnyNetwork(address: string): boolean {
  return ALL_PARAMS.some((p) => isValidUtxoAddress(address, p));
}

/** The output script paying `address` on the network; throws when there is none (the one check of a destination). */
export function outputScript(address: string, params: UtxoParams): Uint8Array {
  return OutScript.encode(Address(params.address).decode(address));
}

/** BIP-21: `<scheme>:<address>?amount=<coins>` (amount in whole coins, no trailing zeros). */
export function bip21Uri(params: UtxoParams, address: string, amount: bigint, decimals: number): string {
  return `${params.scheme}:${address}?amount=${formatUnits(amount, decimals)}`;
}
