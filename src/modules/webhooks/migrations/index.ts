/** The webhooks module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0003 from './0003_webhooks.ts';
import * as m0016 from './0016_event_stream.ts';

export const migrations: Record<string, Migration> = {
  '0003_webhooks': m0003,
  '0016_event_stream': m0016,
};
