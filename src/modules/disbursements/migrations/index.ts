/** The disbursements module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0020 from './0020_disbursements.ts';

export const migrations: Record<string, Migration> = {
  '0020_disbursements': m0020,
};
