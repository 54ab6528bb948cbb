/** The statements module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0013 from './0013_statement_emails.ts';

export const migrations: Record<string, Migration> = {
  '0013_statement_emails': m0013,
};
