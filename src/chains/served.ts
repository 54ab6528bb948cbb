/** Which of a family's configured networks it serves, in every mode (each family's index.ts, when it loads). */
import { MODES, type Mode } from '../core/mode.ts';
import type { FamilyContext } from './plugin.ts';
import type { NetworkConfig } from './types.ts';

/**
 * The networks of `family` in every mode that it can serve. `missing` says what a network lacks to be served (or
 * null when nothing): that network is left out and the reason kept for the operator (`explainMissing`).
 */
export function servedNetworks(
  ctx: FamilyContext,
  family: string,
  missing: (network: NetworkConfig, mode: Mode) => string | null,
): Array<{ network: NetworkConfig; mode: Mode }> {
  const served: Array<{ network: NetworkConfig; mode: Mode }> = [];
  for (const mode of MODES) {
    for (const network of ctx.chains.networks(mode)) {
      if (network.family !== family) continue;
      const why = missing(network, mode);
      if (why === null) served.push({ network, mode });
      else ctx.chains.explainMissing(mode, network.id, why);
    }
  }
  return served;
}
