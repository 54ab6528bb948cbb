/**
 * Subscriptions that charge themselves: a payer's grant and signed revoke relayed to the SubscriptionCollector, and
 * each charge, are hot-wallet transfers of their own purposes (`grant`, `revoke`, `charge`; src/chains/evm/charges.ts),
 * beside hold and capture's (evm/0002_holds). A revoke moves no money (amount 0).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    ALTER TABLE evm_transfers DROP CONSTRAINT evm_transfers_purpose_check;
    ALTER TABLE evm_transfers ADD CONSTRAINT evm_transfers_purpose_check
      CHECK (purpose IN ('refund', 'payout', 'gasless', 'disperse', 'approve', 'x402', 'authorize', 'capture', 'void',
                         'grant', 'revoke', 'charge'));
    ALTER TABLE evm_transfers DROP CONSTRAINT evm_transfers_amount_check;
    ALTER TABLE evm_transfers ADD CONSTRAINT evm_transfers_amount_check CHECK (amount > 0 OR (purpose = 'revoke' AND amount = 0));
  `.execute(db);
}
