/** The x402 module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0030 from './0030_x402.ts';
import * as m0034 from './0034_x402_agents.ts';

export const migrations: Record<string, Migration> = {
  '0030_x402': m0030,
  '0034_x402_agents': m0034,
};
