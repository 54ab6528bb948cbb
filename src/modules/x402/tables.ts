/** Row types of the x402 module's tables (migrations/), merged into Kasse's `Database` type. */
import type { ColumnType, Generated } from 'kysely';
import type { Json, Numeric, Timestamp } from '../../db/schema.ts';

/** A merchant's x402 receiving address on a network (migration 0030; src/modules/x402/). */
export interface X402PayToTable {
  merchant_id: string;
  mode: 'test' | 'live';
  chain: string;
  address_index: ColumnType<bigint, bigint | string, bigint | string>;
  address: string;
  created_at: Timestamp;
  /** The network's configuration it was derived under (`X402Scheme.derivation`); null: not known (migration 0034). */
  derivation: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An x402 address handed out under an earlier configuration of its network, no longer offered (migration 0034). */
export interface X402PayToRetiredTable {
  merchant_id: string;
  mode: 'test' | 'live';
  chain: string;
  address: string;
  address_index: ColumnType<bigint, bigint | string, bigint | string>;
  derivation: string | null;
  retired_at: Timestamp;
}

/** One x402 authorization being or having been settled (migration 0030; src/modules/x402/). */
export interface X402SettlementsTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  chain: string;
  network: string;
  auth_key: string;
  payer: string;
  pay_to: string;
  token: string;
  amount: Numeric;
  resource: string | null;
  description: string | null;
  /** The requirements and payload settled, to submit them again after a crash (`X402Stored` of the module). */
  request: Json;
  status: 'pending' | 'settled' | 'failed';
  transaction: string | null;
  simulated: boolean;
  error: string | null;
  payment_id: string | null;
  created_at: Timestamp;
  settled_at: Timestamp | null;
  /** The client's `payment-identifier` and the digest of the payment it names (migration 0034). */
  payment_identifier: ColumnType<string | null, string | null | undefined, string | null>;
  payload_digest: ColumnType<string | null, string | null | undefined, string | null>;
  /** The one request (or identifier) that is answered `success: true` for this authorization. */
  answered_to: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the workers look at a pending settlement next, and how often they did (migration 0034). */
  resume_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  resume_tries: Generated<number>;
}

/** A merchant's running x402 total in millionths of a dollar (migration 0030; src/modules/x402/). */
export interface X402TotalsTable {
  merchant_id: string;
  mode: 'test' | 'live';
  micro_usd: Numeric;
}

/** A resource of the discovery catalogue (migration 0034; src/modules/x402/discovery.ts). */
export interface X402ResourcesTable {
  id: string;
  merchant_id: string;
  mode: 'test' | 'live';
  /** `declared` through the bazaar extension by the merchant's server, or the state of an agent-payable `link`. */
  kind: 'declared' | 'link';
  link_id: string | null;
  type: 'http' | 'mcp';
  resource: string;
  method: string | null;
  tool_name: string | null;
  description: string | null;
  mime_type: string | null;
  service_name: string | null;
  tags: ColumnType<string[] | null, string | null, string | null>;
  icon_url: string | null;
  /** The PaymentRequirements it was paid with, one per network. */
  accepts: ColumnType<unknown[], string | undefined, string>;
  /** The `bazaar` extension (info and schema) as declared and validated. */
  bazaar: ColumnType<unknown, string | null, string | null>;
  published: Generated<boolean>;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  last_paid_at: Timestamp | null;
}

declare module '../../db/schema.ts' {
  interface Database {
    x402_pay_to: X402PayToTable;
    x402_pay_to_retired: X402PayToRetiredTable;
    x402_resources: X402ResourcesTable;
    x402_settlements: X402SettlementsTable;
    x402_totals: X402TotalsTable;
  }
}
