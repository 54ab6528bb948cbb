/** The email module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0010 from './0010_email.ts';
import * as m0025 from './0025_email_content.ts';
import * as m0027 from './0027_mail_by_reference.ts';

export const migrations: Record<string, Migration> = {
  '0010_email': m0010,
  '0025_email_content': m0025,
  '0027_mail_by_reference': m0027,
};
