/**
 * EVM deposit addresses and the strings built from them, all offline (no RPC, no private key per address).
 *
 * Deposit address `index` of a network is the CREATE2 address of an EIP-1167 clone the network's ForwarderFactory
 * deploys when it first sweeps it:
 *   seed     = BIP-39 seed of the master mnemonic (PBKDF2-HMAC-SHA512, 2048 rounds, empty passphrase)
 *   saltKey  = HMAC-SHA256(key = seed, "kasse/evm/forwarder-salt/v1")
 *   salt     = keccak256(HMAC-SHA256(key = saltKey, "<mode>|<chain>|<index>"))
 *   impl     = CREATE address of the factory at nonce 1 (the Forwarder its constructor deploys)
 *   address  = CREATE2(factory, salt, keccak256(EIP-1167 creation code of impl))
 * The salt is unguessable without the seed, so nobody can link a deposit address to its index, and the same index
 * gives different addresses per mode and chain even where a factory has the same address on two chains.
 */
import { createHmac, pbkdf2Sync } from 'node:crypto';
import { getContractAddress, isAddress, keccak256, type Address, type Hex } from 'viem';
import type { Mode, NetworkConfig, TokenConfig } from '../types.ts';

const SALT_KEY_INFO = 'kasse/evm/forwarder-salt/v1';

/** The 64-byte BIP-39 seed of a mnemonic (empty passphrase). */
export function bip39Seed(mnemonic: string): Buffer {
  const normalized = mnemonic.normalize('NFKD').trim().split(/\s+/).join(' ');
  return pbkdf2Sync(normalized, 'mnemonic', 2048, 64, 'sha512');
}

/** The key salts are derived with; computed once per process (PBKDF2 is deliberately slow). */
export function forwarderSaltKey(masterSeed: string): Buffer {
  return createHmac('sha256', bip39Seed(masterSeed)).update(SALT_KEY_INFO).digest();
}

/** The CREATE2 salt of deposit address `index` of `chain` in `mode`. */
export function forwarderSalt(saltKey: Buffer, mode: Mode, chain: string, index: bigint): Hex {
  if (index < 0n) throw new RangeError('address index must not be negative');
  const mac = createHmac('sha256', saltKey).update(`${mode}|${chain}|${index}`).digest();
  return keccak256(mac);
}

/** The Forwarder implementation a factory deploys in its constructor (its first CREATE, nonce 1). */
export function forwarderImplementation(factory: Address): Address {
  return getContractAddress({ opcode: 'CREATE', from: factory, nonce: 1n });
}

/** EIP-1167 creation code of a minimal proxy to `implementation`, as OpenZeppelin's Clones deploys it. */
export function cloneCreationCode(implementation: Address): Hex {
  return `0x3d602d80600a3d3981f3363d3d373d3d3d363d73${implementation.slice(2).toLowerCase()}5af43d82803e903d91602b57fd5bf3`;
}

/** The CREATE2 address of the forwarder with `salt` under `factory` (checksummed). */
export function forwarderAddress(factory: Address, salt: Hex): Address {
  return getContractAddress({
    opcode: 'CREATE2',
    from: factory,
    salt,
    bytecodeHash: keccak256(cloneCreationCode(forwarderImplementation(factory))),
  });
}

/** Well-formed 20-byte address (all lower, all upper, or a valid EIP-55 checksum), and not the zero address. */
export function isValidEvmAddress(address: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address) || /^0x0{40}$/i.test(address)) return false;
  const hex = address.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase() || isAddress(address, { strict: true });
}

/**
 * EIP-681 payment request: `ethereum:<address>@<chainId>?value=<wei>` for the native coin,
 * `ethereum:<token contract>@<chainId>/transfer?address=<address>&uint256=<amount>` for an ERC-20.
 */
export function eip681Uri(
  network: Pick<NetworkConfig, 'chainId'>,
  token: Pick<TokenConfig, 'kind' | 'contract'>,
  address: string,
  amount: bigint,
): string | null {
  const at = network.chainId === null ? '' : `@${network.chainId}`;
  if (token.kind === 'native') return `ethereum:${address}${at}?value=${amount}`;
  if (token.kind === 'erc20' && token.contract)
    return `ethereum:${token.contract}${at}/transfer?address=${address}&uint256=${amount}`;
  return null;
}

/** Explorer link of a transaction: `{tx}` in the template is replaced, otherwise the hash is appended. */
export function explorerTxUrl(template: string | null, txHash: string): string | null {
  if (!template) return null;
  if (template.includes('{tx}')) return template.replace('{tx}', txHash);
  return template.endsWith('/') ? template + txHash : `${template}/${txHash}`;
}
