/**
 * What every family's operator commands (`kasse <family> …`, each family's commands.ts) share: the flags naming a
 * network, finding that network with refusals that say what is configured, the watcher's stored cursor that
 * `status` sets against the node, and the optional node methods `status` probes.
 */
import type { Kysely } from 'kysely';
import { mode, requireString, UsageError, type Flags } from '../core/flags.ts';
import type { Mode } from '../core/mode.ts';
import type { Db } from '../db/index.ts';
import { methodUnavailable } from './jsonrpc.ts';
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

/** A node method Kasse does without when the node does not serve it: a cheap call to it, and what Kasse does then. */
export interface OptionalMethod {
  method: string;
  probe(): Promise<unknown>;
  /** What Kasse does on a node that lacks it, in words. */
  without: string;
}

/**
 * The optional methods the network's node lacks, for a family's `status`: each probed once; listed with the node's
 * answer when it says it does not serve the method (`unavailable`: the family's reading of such answers). A probe that
 * fails otherwise is not a missing method (a node that does not answer is the status's own error).
 */
export async function missingMethods(
  methods: OptionalMethod[],
  unavailable: (err: unknown) => boolean = methodUnavailable,
): Promise<Array<{ method: string; answer: string; without: string }>> {
  const out: Array<{ method: string; answer: string; without: string }> = [];
  for (const m of methods) {
    try {
      await m.probe();
    } catch (err) {
      if (unavailable(err)) out.push({ method: m.method, answer: (err as Error).message, without: m.without });
    }
  }
  return out;
}
