/** Every migration, in order. Forward only: a released migration is never edited, a new one is added. */
import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
};
