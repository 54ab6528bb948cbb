/** The links module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0005 from './0005_links.ts';

export const migrations: Record<string, Migration> = {
  '0005_links': m0005,
};
