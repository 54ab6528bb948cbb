/** Flags of operator commands (`kasse …`): parsed by node:util, read through these helpers, refused with UsageError. */
import type { Mode } from './mode.ts';

/** A command was called wrongly; the CLI prints the message and exits with status 2. */
export class UsageError extends Error {}

/**
 * A command could not do its work, or all of it, for a reason outside it (a node that does not answer, a transfer
 * the node refused); the CLI prints `report` (what was done, when given) on stdout as usual, the message on stderr,
 * and exits 1.
 */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly report?: unknown,
  ) {
    super(message);
  }
}

export type Flags = Record<string, string | boolean | undefined>;

export function requireString(flags: Flags, name: string): string {
  const v = flags[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** The first positional argument; without it a usage error saying what to give (`hint`). */
export function requireArg(positionals: readonly string[], hint: string): string {
  const v = positionals[0];
  if (!v) throw new UsageError(`give ${hint}`);
  return v;
}

export function optionalInt(flags: Flags, name: string): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
  return Number(v);
}

/** `--mode test|live`. */
export function mode(flags: Flags): Mode {
  const m = requireString(flags, 'mode');
  if (m !== 'test' && m !== 'live') throw new UsageError('--mode must be test or live');
  return m;
}
