/** The subscriptions module's migrations (named in Kasse's one numbering, src/db/migrate.ts). */
import type { Migration } from 'kysely';
import * as m0018 from './0018_subscriptions.ts';
import * as m0038 from './0038_subscription_charges.ts';

export const migrations: Record<string, Migration> = {
  '0018_subscriptions': m0018,
  '0038_subscription_charges': m0038,
};
