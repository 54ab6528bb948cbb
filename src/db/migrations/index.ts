/** Every migration, in order. Forward only: a released migration is never edited, a new one is added. */
import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.ts';
import * as m0002 from './0002_payments.ts';
import * as m0003 from './0003_webhooks.ts';
import * as m0004 from './0004_evm.ts';
import * as m0005 from './0005_links.ts';
import * as m0006 from './0006_evm_sender.ts';
import * as m0014 from './0014_solana.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_payments': m0002,
  '0003_webhooks': m0003,
  '0004_evm': m0004,
  '0005_links': m0005,
  '0006_evm_sender': m0006,
  '0014_solana': m0014,
};
