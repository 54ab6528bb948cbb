/** The capture module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0037 from './0037_holds.ts';

export const migrations: Record<string, Migration> = {
  '0037_holds': m0037,
};
