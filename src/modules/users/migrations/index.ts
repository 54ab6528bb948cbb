/** The users module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0011 from './0011_dashboard.ts';
import * as m0028 from './0028_session_notes.ts';

export const migrations: Record<string, Migration> = {
  '0011_dashboard': m0011,
  '0028_session_notes': m0028,
};
