/** Row types of the statement emails' tables (migrations/), merged into Kasse's `Database` type. */
import type { Generated } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';

/** Owners who receive a mode's monthly statement by email (migration 0013; src/modules/statements/emails.ts). */
export interface StatementSubscribersTable {
  user_id: string;
  mode: 'test' | 'live';
  merchant_id: string;
  created_at: Timestamp;
}

/** The next statement email of a merchant and mode, and when it is due. */
export interface StatementEmailScheduleTable {
  merchant_id: string;
  mode: 'test' | 'live';
  month: string;
  due_at: Timestamp;
  attempts: Generated<number>;
  last_error: string | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    statement_subscribers: StatementSubscribersTable;
    statement_email_schedule: StatementEmailScheduleTable;
  }
}
