/**
 * Solana keys from the operator's master seed (SLIP-0010 ed25519, Solana's coin type 501), all offline.
 *
 *   seed            = BIP-39 seed of the master mnemonic (PBKDF2-HMAC-SHA512, 2048 rounds, empty passphrase)
 *   hot wallet      = m/44'/501'/0'/0'            (the first account a Solana wallet app shows for the mnemonic)
 *   deposit key i   = m/44'/501'/<1 live | 2 test>'/0'/<i>'
 *   grant delegate  = m/44'/501'/<3 live | 4 test>'/<a>'/<b>', a and b the first two 31-bit words of
 *                     SHA-256(the grant's terms): the SPL Token delegate a payer approves for one subscription grant
 *   reference of a  = the public key of HMAC-SHA256(key = seed-derived reference key, deposit address)
 *   deposit address   (Solana Pay `reference`: a fresh, unlinkable key per coin choice, recomputable at any time)
 *
 * Every coin choice has its own deposit key (indices come from one PostgreSQL sequence), so a key never serves two
 * payments, and the same seed always gives the same keys. SLIP-0010 ed25519 allows hardened indices only, so an
 * index must be below 2^31. Secret bytes stay inside this module's callers; nothing here logs.
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto';
import { createKeyPairFromPrivateKeyBytes, getAddressDecoder, type Address } from '@solana/kit';
import { HDKey } from 'micro-key-producer/slip10.js';
import type { Mode } from '../../core/mode.ts';

export const HOT_WALLET_PATH = "m/44'/501'/0'/0'";
const MODE_ACCOUNT: Record<Mode, number> = { live: 1, test: 2 };
const DELEGATE_ACCOUNT: Record<Mode, number> = { live: 3, test: 4 };
const HARDENED = 0x80000000;
const REFERENCE_INFO = 'kasse/solana/reference/v1';

/** The 64-byte BIP-39 seed of a mnemonic (empty passphrase). */
function bip39Seed(mnemonic: string): Buffer {
  return pbkdf2Sync(mnemonic.normalize('NFKD').trim().split(/\s+/).join(' '), 'mnemonic', 2048, 64, 'sha512');
}

const addressDecoder = getAddressDecoder();

/** An ed25519 key: its 32-byte secret (the SLIP-0010 private key) and its address (the public key in base58). */
export interface SolanaKey {
  address: Address;
  secret: Uint8Array;
}

/** Signs with a key: a WebCrypto key pair that @solana/kit's signers take. */
export function keyPairOf(key: SolanaKey): Promise<CryptoKeyPair> {
  return createKeyPairFromPrivateKeyBytes(key.secret);
}

function keyOf(node: HDKey): SolanaKey {
  return { address: addressDecoder.decode(node.publicKeyRaw), secret: node.privateKey };
}

/** Derives Kasse's Solana keys from one master seed; the PBKDF2 and the mode branches are computed once. */
export class SolanaKeys {
  private readonly root: HDKey;
  private readonly branches = new Map<Mode, HDKey>();
  private readonly referenceKey: Buffer;
  private hot: SolanaKey | null = null;

  constructor(masterSeed: string) {
    const seed = bip39Seed(masterSeed);
    this.root = HDKey.fromMasterSeed(seed);
    this.referenceKey = createHmac('sha256', seed).update(REFERENCE_INFO).digest();
  }

  /** The hot wallet: pays fees and rent, sends refunds and payouts, co-signs gasless USDC as fee payer. */
  hotWallet(): SolanaKey {
    return (this.hot ??= keyOf(this.root.derive(HOT_WALLET_PATH)));
  }

  /** Deposit key number `index` of `mode`. */
  deposit(mode: Mode, index: bigint): SolanaKey {
    if (index < 0n || index >= BigInt(HARDENED))
      throw new RangeError(`solana deposit key index ${index} is outside 0…2^31-1`);
    let branch = this.branches.get(mode);
    if (!branch) {
      branch = this.root.derive(`m/44'/501'/${MODE_ACCOUNT[mode]}'/0'`);
      this.branches.set(mode, branch);
    }
    return keyOf(branch.deriveChild(HARDENED + Number(index)));
  }

  /** The delegate key of the subscription grant whose terms are `terms` (the same terms always give the same key). */
  grantDelegate(mode: Mode, terms: string): SolanaKey {
    const h = createHash('sha256').update(terms).digest();
    const a = h.readUInt32BE(0) & 0x7fffffff;
    const b = h.readUInt32BE(4) & 0x7fffffff;
    return keyOf(this.root.derive(`m/44'/501'/${DELEGATE_ACCOUNT[mode]}'/${a}'/${b}'`));
  }

  /** The Solana Pay reference of a deposit address (32 bytes, shown as an address; nobody holds a key to it). */
  reference(depositAddress: string): Address {
    return addressDecoder.decode(createHmac('sha256', this.referenceKey).update(depositAddress).digest());
  }
}
