/** Which PostgreSQL to use: DATABASE_URL when set, otherwise the embedded server under the data directory. */
import { mkdirSync } from 'node:fs';
import type { Config } from '../config.ts';
import { startEmbedded, type EmbeddedHandle } from './embedded.ts';

export async function resolveDatabase(config: Config, log: (m: string) => void = () => {}): Promise<EmbeddedHandle> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {} };
  mkdirSync(config.dataDir, { recursive: true });
  return startEmbedded(config.dataDir, 'kasse', log);
}
