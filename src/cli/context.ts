/** What a CLI command gets: the parsed flags and a Kasse opened against the same database the server uses. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config.ts';
import { loadSecrets } from '../core/secrets.ts';
import { createLogger } from '../core/log.ts';
import { resolveDatabase } from '../db/resolve.ts';
import { optionalInt, UsageError, type Flags } from '../core/flags.ts';
import { Kasse } from '../kasse.ts';

export { mode, optionalInt, requireArg, requireString, UsageError, type Flags } from '../core/flags.ts';

export interface Command {
  /** e.g. "merchant create" */
  name: string;
  usage: string;
  flags: Record<string, { type: 'string' | 'boolean' }>;
  run(kasse: Kasse, flags: Flags, positionals: string[]): Promise<unknown>;
}

/** The flags of a list command: the command's own (`extra`), `--status`, `--limit N` and `--json`. */
export function listFlags(extra: Command['flags'] = {}): Command['flags'] {
  return { ...extra, status: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } };
}

/** A list command's `--status` (one of `statuses`, or none) and `--limit` (1 to `max`; `byDefault` when not given). */
export function listFilters<S extends string>(
  f: Flags,
  statuses: readonly S[],
  limit: { byDefault: number; max: number },
): { status: S | undefined; limit: number } {
  const status = f.status as S | undefined;
  if (status !== undefined && !statuses.includes(status))
    throw new UsageError(`--status must be one of ${statuses.join(', ')}`);
  const n = optionalInt(f, 'limit') ?? limit.byDefault;
  if (n < 1 || n > limit.max) throw new UsageError(`--limit must be from 1 to ${limit.max}`);
  return { status, limit: n };
}

/**
 * Opens Kasse for one command on the server's database: the running server's embedded PostgreSQL, or the same one
 * started for the command. It never creates a database or secrets: a data directory without them means this is not
 * where the server keeps its data, and the command says which directory it looked at.
 */
export async function withKasse<T>(fn: (kasse: Kasse) => Promise<T>): Promise<T> {
  const config = loadConfig(process.env, { logLevel: 'warn' });
  if (!config.databaseUrl && !existsSync(join(config.dataDir, 'pg', 'PG_VERSION'))) {
    throw new UsageError(
      `no Kasse database in ${config.dataDir}. This command uses the server's database and creates none: start Kasse once (npm start), or give it the KASSE_DATA_DIR (or DATABASE_URL) the server runs with`,
    );
  }
  const secrets = loadSecrets(config, { create: false });
  const log = createLogger(config.logLevel, process.stderr);
  const database = await resolveDatabase(config);
  const kasse = await Kasse.open({ config, databaseUrl: database.url, log, secrets, listen: false, poolSize: 4 });
  // Links the CLI prints (set-up links) point at the running server's checkout host, which may have picked its port.
  const recorded = join(config.dataDir, 'urls.json');
  if (!config.publicUrls.checkout && existsSync(recorded)) {
    try {
      const urls = JSON.parse(readFileSync(recorded, 'utf8')) as Partial<Kasse['urls']>;
      if (typeof urls.checkout === 'string') kasse.urls.checkout = urls.checkout;
    } catch {
      // an unreadable file: fall back to the configured port
    }
  }
  try {
    return await fn(kasse);
  } finally {
    await kasse.close();
    await database.stop();
  }
}
