/**
 * The compiled contracts (contracts/build/*.json, produced by compile.ts and committed), read once on first use.
 * Nothing here compiles: the server and the CLI run on the committed bytecode.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAbi, type Abi } from 'viem';
import { BUILD_DIR, type ContractArtifact } from './compile.ts';

export type ContractName = 'ForwarderFactory' | 'Forwarder' | 'TestUSDC' | 'Disperse';

const cache = new Map<ContractName, ContractArtifact>();

/** The committed artifact of `name`. */
export function artifact(name: ContractName): ContractArtifact {
  let a = cache.get(name);
  if (!a) {
    a = JSON.parse(readFileSync(join(BUILD_DIR, `${name}.json`), 'utf8')) as ContractArtifact;
    cache.set(name, a);
  }
  return a;
}

/** ABI of the forwarder factory (typed for viem's encoders). */
export const forwarderFactoryAbi = parseAbi([
  'constructor(address owner_, address treasury_)',
  'function implementation() view returns (address)',
  'function owner() view returns (address)',
  'function treasury() view returns (address)',
  'function forwarderAddress(bytes32 salt) view returns (address)',
  'function sweep(bytes32[] salts, address[] tokens)',
  'function setTreasury(address treasury_)',
  'function transferOwnership(address owner_)',
  'event ForwarderDeployed(bytes32 indexed salt, address indexed forwarder)',
  'event Swept(bytes32 indexed salt, address indexed forwarder, bool ok)',
  'event TreasuryChanged(address indexed previous, address indexed current)',
  'event OwnershipTransferred(address indexed previous, address indexed current)',
  'error NotOwner()',
  'error ZeroAddress()',
]);

/** The ERC-20 subset Kasse uses, plus TestUSDC's `mint` and EIP-3009 entry points. */
export const erc20Abi = parseAbi([
  'function balanceOf(address) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function approve(address spender, uint256 value) returns (bool)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function mint(address to, uint256 amount)',
  'function setBlocked(address account, bool value)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** ABI of the Disperse contract: ERC-20 payouts in batches, a refused one reported by position. */
export const disperseAbi = parseAbi([
  'function disperseToken(address token, address[] recipients, uint256[] amounts)',
  'event Failed(uint256 indexed index)',
  'error LengthMismatch()',
  'error OutOfGas(uint256 index)',
]);

/** Whether the hand-written ABI above agrees with the compiled one (checked by the compile test). */
export function abiMatchesArtifact(abi: Abi, name: ContractName): boolean {
  const sig = (x: Abi[number]) =>
    JSON.stringify({
      type: x.type,
      name: 'name' in x ? x.name : '',
      inputs: 'inputs' in x ? x.inputs.map((i) => i.type) : [],
    });
  const compiled = new Set(artifact(name).abi.map(sig));
  return abi.every((x) => compiled.has(sig(x)));
}
