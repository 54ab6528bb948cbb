/**
 * Coins and networks as people read them on the dashboard: "USDC on Base Sepolia", never the token id `base:usdc`
 * or the network id `base`. Names come from the mode's network configuration; an id that is no longer configured
 * falls back to the spec's rule (the symbol is the part after the colon, in upper case).
 */
import type { ChainRegistry } from '../../chains/registry.ts';
import type { Mode } from '../../core/mode.ts';

type Chains = Pick<ChainRegistry, 'network' | 'token'>;

/** "Base Sepolia" for `base` in test mode; the id itself when the network is not configured. */
export function networkName(chains: Chains, mode: Mode, chain: string): string {
  return chains.network(mode, chain)?.name ?? chain;
}

/** "USDC" for `base:usdc`. */
export function coinSymbol(chains: Chains, mode: Mode, token: string): string {
  return chains.token(mode, token)?.symbol ?? (token.split(':')[1] ?? token).toUpperCase();
}

/** "USDC on Base Sepolia" for `base:usdc` in test mode. */
export function coinName(chains: Chains, mode: Mode, token: string): string {
  return `${coinSymbol(chains, mode, token)} on ${networkName(chains, mode, token.split(':')[0]!)}`;
}
