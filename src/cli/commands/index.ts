/**
 * Command groups beyond merchants and keys register here (payments, users, …). Each chain family brings its own
 * (`ChainFamily.commands`, run with the family's context), added by `familyCommands`.
 */
import type { ChainFamily } from '../../chains/plugin.ts';
import type { Command } from '../context.ts';
import { userCommands } from './users.ts';
import { x402Commands } from './x402.ts';

export const extraCommands: Command[] = [...userCommands, ...x402Commands];

/** The installed chain families' commands as CLI commands. */
export function familyCommands(families: readonly ChainFamily[]): Command[] {
  return families.flatMap((f) =>
    (f.commands ?? []).map(
      (c): Command => ({ ...c, run: (kasse, flags, positionals) => c.run(kasse.familyContext, flags, positionals) }),
    ),
  );
}
