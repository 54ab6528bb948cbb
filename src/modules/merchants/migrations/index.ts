/** The merchants module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.ts';
import * as m0031 from './0031_branding_tolerance.ts';
import * as m0035 from './0035_x402_rate_limit.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0031_branding_tolerance': m0031,
  '0035_x402_rate_limit': m0035,
};
