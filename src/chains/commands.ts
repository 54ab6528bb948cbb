/**
 * What every family's operator commands (`kasse <family> …`, each family's commands.ts) share: the flags naming a
 * network, finding that network with refusals that say what is configured, and the watcher's stored cursor that
 * `status` sets against the node.
 */
import type { Kysely } from 'kysely';
import { mode, requireString, UsageError, type Flags } from '../core/flags.ts';
import type { Mode } from '../core/mode.ts';
import type { Db } from '../db/index.ts';
import type { FamilyCommand, FamilyContext } from './plugin.ts';
import type { NetworkConfig } from './types.ts';

/** `--chain ID --mode test|live [--json]`, with a command's own flags. */
export function networkFlags(extra: FamilyCommand['flags'] = {}): FamilyCommand['flags'] {
  return { chain: { type: 'string' }, mode: { type: 'string' }, ...extra, json: { type: 'boolean' } };
}

/**
 * A family's `<family> status` command (`usage` after its name): the watcher's cursor set against the node, and the
 * hot wallet, on the network the flags name; `run` builds the report, printed as JSON.
 */
export function statusCommand(family: string, usage: string, run: FamilyCommand['run']): FamilyCommand {
  return { name: `${family} status`, usage: `${family} status ${usage}`, flags: networkFlags(), run };
}

/**
 * The network `--chain` names in `--mode`, of `family` (`noun` says what it is not otherwise, e.g. "an EVM network"),
 * with a node to ask (`node` says which kind, when the operator may not know).
 */
export function commandNetwork(
  ctx: FamilyContext,
  f: Flags,
  family: string,
  words: { noun: string; node?: string },
): NetworkConfig {
  const m = mode(f);
  const id = requireString(f, 'chain');
  const network = ctx.chains.network(m, id);
  if (!network)
    throw new UsageError(
      `no ${m} network "${id}" (configured: ${ctx.chains
        .networks(m)
        .map((n) => n.id)
        .join(', ')})`,
    );
  if (network.family !== family) throw new UsageError(`${id} is not ${words.noun}`);
  if (network.rpcUrls.length === 0)
    throw new UsageError(`${m} network ${id} has no rpc_urls${words.node ? ` (${words.node})` : ''}`);
  return network;
}

/** The watcher's cursor of a network as its family stores it (`<family>_cursors`, keyed by mode and chain). */
export async function storedCursor<C>(db: Db, table: string, m: Mode, chain: string): Promise<C | undefined> {
  const loose = db as unknown as Kysely<Record<string, { mode: string; chain: string }>>;
  return (await loose
    .selectFrom(table)
    .selectAll()
    .where('mode', '=', m)
    .where('chain', '=', chain)
    .executeTakeFirst()) as C | undefined;
}
