/** `GET /balance`: what the merchant is owed (the ledger) and what is on the way (payments with money seen). */
import type { ChainRegistry } from '../../chains/registry.ts';
import type { Tenant } from '../../core/tenant.ts';
import { formatUnits } from '../../core/money.ts';
import type { DbOrTx } from '../../db/index.ts';
import type { LedgerService } from '../ledger/index.ts';
import { pendingCents } from './store/reads.ts';

export interface BalanceDeps {
  db: DbOrTx;
  chains: ChainRegistry;
  ledger: LedgerService;
}

/** The merchant's balance: credited US cents, cents on the way, and coins held for it. */
export async function merchantBalance(deps: BalanceDeps, tenant: Tenant) {
  const { availableUsdCents, custody } = await deps.ledger.merchantBalance(tenant);
  return {
    available_usd_cents: Number(availableUsdCents),
    pending_usd_cents: await pendingCents(deps.db, tenant),
    custody: custody.map((c) => {
      const t = deps.chains.token(tenant.mode, c.token);
      const decimals = t?.decimals ?? 0;
      return {
        token: c.token,
        chain: c.token.split(':')[0]!,
        symbol: t?.symbol ?? c.token.split(':')[1]!.toUpperCase(),
        amount: c.amount.toString(),
        amount_display: formatUnits(c.amount, decimals),
      };
    }),
  };
}
