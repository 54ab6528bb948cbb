/** The x402 module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0030 from './0030_x402.ts';

export const migrations: Record<string, Migration> = {
  '0030_x402': m0030,
};
