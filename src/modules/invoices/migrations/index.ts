/** The invoices module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0012 from './0012_statements_invoices.ts';

export const migrations: Record<string, Migration> = {
  '0012_statements_invoices': m0012,
};
