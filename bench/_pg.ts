/** A throwaway embedded PostgreSQL for a benchmark run. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbedded } from '../src/db/embedded.ts';

export async function benchDatabase(): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'kasse-bench-'));
  const pg = await startEmbedded(dir, 'kasse');
  return {
    url: pg.url,
    stop: async () => {
      await pg.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
