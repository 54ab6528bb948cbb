/** Row type of the payment links' table (migrations/), merged into Kasse's `Database` type. */
import type { Generated } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';
import type { LinkKind } from './service.ts';

/** Payment links (migration 0005_links). */
export interface LinksTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  slug: string;
  kind: LinkKind;
  title: string;
  description: string | null;
  amount_usd_cents: number | null;
  min_usd_cents: number | null;
  max_usd_cents: number | null;
  presets_usd_cents: number[];
  collect_email: boolean;
  success_url: string | null;
  locale: string | null;
  max_uses: number | null;
  uses: Generated<number>;
  seq: Generated<number>;
  expires_at: Timestamp | null;
  active: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

declare module '../../db/schema.ts' {
  interface Database {
    links: LinksTable;
  }
}
