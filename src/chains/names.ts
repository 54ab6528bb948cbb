/**
 * Coins and networks as people read them, in one place for every page, CSV, PDF, mail and the audit log: "USDC on
 * Base Sepolia" — never the token id `base:usdc` or the network id `base`. Names come from the mode's network
 * configuration (a test-mode coin is named after its testnet); an id that is no longer configured falls back to the
 * spec's rule (the symbol is the part after the colon, in upper case).
 */
import type { ChainRegistry } from './registry.ts';
import type { Mode } from './types.ts';

/** What naming needs of the registry: the mode's networks and coins. */
export type CoinNames = Pick<ChainRegistry, 'network' | 'token'>;

/** "Base Sepolia" for `base` in test mode; the id itself when the network is not configured. */
export function networkName(chains: CoinNames, mode: Mode, chain: string): string {
  return chains.network(mode, chain)?.name ?? chain;
}

/** "USDC" for `base:usdc`. */
export function coinSymbol(chains: CoinNames, mode: Mode, token: string): string {
  return chains.token(mode, token)?.symbol ?? (token.split(':')[1] ?? token).toUpperCase();
}

/** "USDC on Base Sepolia" for `base:usdc` in test mode. */
export function coinName(chains: CoinNames, mode: Mode, token: string): string {
  return `${coinSymbol(chains, mode, token)} on ${networkName(chains, mode, token.split(':')[0]!)}`;
}
