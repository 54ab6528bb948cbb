/**
 * Every migration of the core tables, in order. Forward only: a released migration is never edited, a new one is
 * added. Chain families bring their own tables' migrations (ChainFamily.migrations), merged in by name.
 */
import type { Migration } from 'kysely';
import * as m0001 from './0001_foundation.ts';
import * as m0002 from './0002_payments.ts';
import * as m0003 from './0003_webhooks.ts';
import * as m0005 from './0005_links.ts';
import * as m0007 from './0007_transfers.ts';
import * as m0012 from './0012_statements_invoices.ts';
import * as m0010 from './0010_email.ts';
import * as m0011 from './0011_dashboard.ts';
import * as m0016 from './0016_event_stream.ts';
import * as m0013 from './0013_statement_emails.ts';
import * as m0018 from './0018_subscriptions.ts';
import * as m0020 from './0020_disbursements.ts';
import * as m0025 from './0025_email_content.ts';
import * as m0026 from './0026_creation_without_merchant_locks.ts';
import * as m0027 from './0027_mail_by_reference.ts';
import * as m0028 from './0028_session_notes.ts';
import * as m0029 from './0029_chain_health.ts';
import * as m0030 from './0030_x402.ts';
import * as m0031 from './0031_branding_tolerance.ts';
import * as m0032 from './0032_locale.ts';
import * as m0033 from './0033_credited_cents.ts';
import * as m0034 from './0034_x402_agents.ts';
import * as m0035 from './0035_x402_rate_limit.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
  '0002_payments': m0002,
  '0003_webhooks': m0003,
  '0005_links': m0005,
  '0007_transfers': m0007,
  '0012_statements_invoices': m0012,
  '0010_email': m0010,
  '0011_dashboard': m0011,
  '0016_event_stream': m0016,
  '0013_statement_emails': m0013,
  '0018_subscriptions': m0018,
  '0020_disbursements': m0020,
  '0025_email_content': m0025,
  '0026_creation_without_merchant_locks': m0026,
  '0027_mail_by_reference': m0027,
  '0028_session_notes': m0028,
  '0029_chain_health': m0029,
  '0030_x402': m0030,
  '0031_branding_tolerance': m0031,
  '0032_locale': m0032,
  '0033_credited_cents': m0033,
  '0034_x402_agents': m0034,
  '0035_x402_rate_limit': m0035,
};
