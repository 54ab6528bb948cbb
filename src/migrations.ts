/**
 * Every migration Kasse applies: each module's (from its `migrations/` folder), the chains layer's (chain health; its
 * folder has no index.ts, which would make it a family) and the installed families'. One list, used by the server
 * and the CLI (Kasse.open) and by the test run's template database, so all three make the same schema. How
 * migrations are named and ordered: src/db/migrate.ts.
 */
import type { Migration } from 'kysely';
import * as m0029 from './chains/migrations/0029_chain_health.ts';
import type { ChainFamily } from './chains/plugin.ts';
import { composeMigrations } from './db/migrate.ts';
import { migrations as capture } from './modules/capture/index.ts';
import { migrations as disbursements } from './modules/disbursements/index.ts';
import { migrations as email } from './modules/email/index.ts';
import { migrations as invoices } from './modules/invoices/index.ts';
import { migrations as links } from './modules/links/index.ts';
import { migrations as merchants } from './modules/merchants/index.ts';
import { migrations as payments } from './modules/payments/index.ts';
import { migrations as statements } from './modules/statements/index.ts';
import { migrations as subscriptions } from './modules/subscriptions/index.ts';
import { migrations as transfers } from './modules/transfers/index.ts';
import { migrations as users } from './modules/users/index.ts';
import { migrations as webhooks } from './modules/webhooks/index.ts';
import { migrations as x402 } from './modules/x402/index.ts';

/** The migrations of Kasse's own tables, whatever families are installed: the modules' and chain health's. */
export const ownMigrations: Record<string, Migration> = composeMigrations(
  merchants,
  payments,
  webhooks,
  links,
  transfers,
  email,
  users,
  invoices,
  statements,
  subscriptions,
  disbursements,
  { '0029_chain_health': m0029 },
  x402,
  capture,
);

/** Every migration of a Kasse with these chain families installed. */
export function kasseMigrations(families: readonly ChainFamily[]): Record<string, Migration> {
  return composeMigrations(ownMigrations, ...families.map((f) => f.migrations ?? {}));
}
