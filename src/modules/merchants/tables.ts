/** Row types of the merchants module's tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType, Generated } from 'kysely';
import type { Timestamp } from '../../db/schema.ts';

export interface MerchantsTable {
  id: string;
  name: string;
  webhook_url_test: string | null;
  webhook_url_live: string | null;
  webhook_secret_enc: string;
  rate_limit_per_minute: number | null;
  /** The x402 facilitator routes' limit per key (migration 0035); null: KASSE_X402_RATE_LIMIT. */
  x402_rate_limit_per_minute: ColumnType<number | null, number | null | undefined, number | null>;
  fee_bps: number | null;
  created_at: Generated<Date>;
  /** Tax profile per mode (migration 0012; shape: src/modules/invoices/profile.ts). */
  tax_profile_test: ColumnType<unknown, string | null | undefined, string | null>;
  tax_profile_live: ColumnType<unknown, string | null | undefined, string | null>;
  /** Dashboard settings (migration 0011_dashboard). */
  payout_token: Generated<string>;
  approvals_required: number | null;
  webhook_secret_prev_enc: string | null;
  webhook_secret_prev_until: Timestamp | null;
  /** Brand colour (lower-case `#rrggbb`), logo (merchant_logos) and underpayment tolerance (migration 0031). */
  brand_color: string | null;
  logo_sha256: string | null;
  underpayment_tolerance_bps: Generated<number>;
}

/** A merchant's logo: PNG pixels re-encoded on upload, addressed by their SHA-256 (migration 0031). */
export interface MerchantLogosTable {
  sha256: string;
  png: Buffer;
  width: number;
  height: number;
  created_at: Generated<Date>;
}

export interface ApiKeysTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  key_hash: string;
  key_hint: string;
  created_at: Generated<Date>;
  revoked_at: Timestamp | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    merchants: MerchantsTable;
    merchant_logos: MerchantLogosTable;
    api_keys: ApiKeysTable;
  }
}
