/** What a CLI command gets: the parsed flags and a Kasse opened against the same database the server uses. */
import { loadConfig } from '../config.ts';
import { createLogger } from '../core/log.ts';
import { resolveDatabase } from '../db/resolve.ts';
import { Kasse } from '../kasse.ts';

export class UsageError extends Error {}

export type Flags = Record<string, string | boolean | undefined>;

export interface Command {
  /** e.g. "merchant create" */
  name: string;
  usage: string;
  flags: Record<string, { type: 'string' | 'boolean' }>;
  run(kasse: Kasse, flags: Flags, positionals: string[]): Promise<unknown>;
}

/** Opens Kasse for one command; starts the embedded PostgreSQL if no server is running on the data directory. */
export async function withKasse<T>(fn: (kasse: Kasse) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, { logLevel: 'warn' });
  const log = createLogger(config.logLevel, process.stderr);
  const database = await resolveDatabase(config);
  const kasse = await Kasse.open({ config, databaseUrl: database.url, log, listen: false, poolSize: 4 });
  try {
    return await fn(kasse);
  } finally {
    await kasse.close();
    await database.stop();
  }
}

export function requireString(flags: Flags, name: string): string {
  const v = flags[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function optionalInt(flags: Flags, name: string): number | undefined {
  const v = flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
  return Number(v);
}

export function mode(flags: Flags): 'test' | 'live' {
  const m = requireString(flags, 'mode');
  if (m !== 'test' && m !== 'live') throw new UsageError('--mode must be test or live');
  return m;
}
