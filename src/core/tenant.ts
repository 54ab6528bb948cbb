/**
 * Whose data a call reads or changes: one merchant in one mode. Every service method on a merchant's data takes it
 * first (`service.verb(tenant, …)`), so no code path can forget either half of the scope (docs/ARCHITECTURE.md).
 */
import type { Mode } from './mode.ts';

export interface Tenant {
  readonly mode: Mode;
  readonly merchantId: string;
}

/** The tenant a stored row belongs to (its `mode` and `merchant_id` columns). */
export function tenantOf(row: { readonly mode: Mode; readonly merchant_id: string }): Tenant {
  return { mode: row.mode, merchantId: row.merchant_id };
}
