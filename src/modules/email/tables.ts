/** Row type of the email outbox (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';
import type { MailStatus } from './service.ts';

/** The email outbox (migration 0010_email; src/modules/email). */
export interface EmailOutboxTable {
  id: string;
  merchant_id: string | null;
  mode: 'test' | 'live' | null;
  kind: string;
  to_address: string;
  to_name: string | null;
  /** null when the mail is composed from `content_ref` (migration 0027). */
  subject: string | null;
  /** null when the mail is stored as `content` or `content_ref` (migrations 0025, 0027). */
  text_body: string | null;
  html_body: string | null;
  message_id: string;
  dedupe_key: string | null;
  sensitive: Generated<boolean>;
  status: Generated<MailStatus>;
  attempts: Generated<number>;
  next_attempt_at: Timestamp | null;
  locked_until: Timestamp | null;
  lease_token: string | null;
  last_error: string | null;
  smtp_response: string | null;
  sent_at: Timestamp | null;
  created_at: Timestamp;
  /** Files sent with the mail (migration 0013): `[{ filename, content_type, content_base64 }]`. */
  attachments: ColumnType<unknown, string | null | undefined, string | null>;
  /** The layout blocks the text and HTML parts are built from when sent or shown (migration 0025). */
  content: ColumnType<unknown, string | null | undefined, string | null>;
  /** What the kind's composer builds the subject and blocks from when sent or shown (migration 0027). */
  content_ref: string | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    email_outbox: EmailOutboxTable;
  }
}
