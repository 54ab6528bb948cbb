/** The transfers module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0007 from './0007_transfers.ts';

export const migrations: Record<string, Migration> = {
  '0007_transfers': m0007,
};
