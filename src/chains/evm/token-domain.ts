/**
 * A token's EIP-712 domain name and version, read from the token once per mode and token: EIP-5267 `eip712Domain`,
 * else its `name` with version "2" (FiatToken's). What a payer signs for the token (an EIP-3009 authorization, an
 * EIP-2612 permit) is in this domain.
 */
import { decodeFunctionResult, encodeFunctionData, getAddress, parseAbi, type Hex } from 'viem';
import type { TokenConfig } from '../types.ts';
import type { EvmAdapter } from './adapter.ts';

const domainAbi = parseAbi([
  'function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)',
  'function name() view returns (string)',
]);

export interface TokenDomain {
  name: string;
  version: string;
}

export class TokenDomains {
  private readonly known = new Map<string, TokenDomain>();

  async of(adapter: EvmAdapter, token: TokenConfig): Promise<TokenDomain> {
    const key = `${adapter.mode}:${token.id}`;
    const known = this.known.get(key);
    if (known) return known;
    const contract = getAddress(token.contract!);
    const call = (data: Hex) => adapter.rpc().request<Hex>('eth_call', [{ to: contract, data }, 'latest']);
    let domain: TokenDomain;
    try {
      const out = decodeFunctionResult({
        abi: domainAbi,
        functionName: 'eip712Domain',
        data: await call(encodeFunctionData({ abi: domainAbi, functionName: 'eip712Domain' })),
      });
      domain = { name: out[1], version: out[2] };
    } catch {
      const name = decodeFunctionResult({
        abi: domainAbi,
        functionName: 'name',
        data: await call(encodeFunctionData({ abi: domainAbi, functionName: 'name' })),
      });
      domain = { name, version: '2' };
    }
    this.known.set(key, domain);
    return domain;
  }
}
