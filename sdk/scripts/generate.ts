/**
 * npm run sdk:generate [-- --from <url of openapi.json>]
 *
 * Regenerates sdk/src/generated/ from the OpenAPI document of Kasse's test API. Without --from it builds the API on a
 * temporary embedded PostgreSQL (nothing to start by hand); with --from it reads a running Kasse's document.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/core/log.ts';
import { startEmbedded } from '../../src/db/embedded.ts';
import { buildApiServer } from '../../src/http/api.ts';
import { Kasse } from '../../src/kasse.ts';
import { generatedFiles } from './codegen.ts';

/** The test API's document from a Kasse on a throw-away database. */
async function documentFromTemporaryKasse(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'kasse-sdk-generate-'));
  const pg = await startEmbedded(dir, 'postgres');
  try {
    const config = loadConfig({ KASSE_DATA_DIR: dir, KASSE_LOG_LEVEL: 'silent' });
    const kasse = await Kasse.open({
      config,
      databaseUrl: pg.url,
      log: createLogger('silent'),
      listen: false,
      poolSize: 2,
    });
    try {
      const app = await buildApiServer({ kasse, mode: 'test' });
      const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
      await app.close();
      return res.json();
    } finally {
      await kasse.close();
    }
  } finally {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const { values } = parseArgs({ options: { from: { type: 'string' } } });
const doc = values.from
  ? ((await (await fetch(values.from)).json()) as Record<string, unknown>)
  : await documentFromTemporaryKasse();
const out = new URL('../src/generated/', import.meta.url);
for (const [name, text] of Object.entries(await generatedFiles(doc))) {
  writeFileSync(new URL(name, out), text);
  process.stdout.write(`wrote sdk/src/generated/${name}\n`);
}
