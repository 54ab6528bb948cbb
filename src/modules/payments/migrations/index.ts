/** The payments module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0002 from './0002_payments.ts';
import * as m0026 from './0026_creation_without_merchant_locks.ts';
import * as m0032 from './0032_locale.ts';
import * as m0033 from './0033_credited_cents.ts';
import * as m0036 from './0036_capture_method.ts';

export const migrations: Record<string, Migration> = {
  '0002_payments': m0002,
  '0026_creation_without_merchant_locks': m0026,
  '0032_locale': m0032,
  '0033_credited_cents': m0033,
  '0036_capture_method': m0036,
};
