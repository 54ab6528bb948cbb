/**
 * The payments module's due work, one pass of which the workers run every few seconds and tests run after moving
 * the fake clock (the same function): payments a deposit recount marked, payments whose 24 hours or coin holds ran
 * out, and late payments whose money may still be auto-accepted. Rows are selected with `FOR UPDATE SKIP LOCKED`,
 * so several workers share the work; each payment is ticked in its own transaction.
 */
import type { RawBuilder } from 'kysely';
import { withTx } from '../../db/index.ts';
import type { DepositRecorder } from './deposits.ts';
import type { PaymentEngine } from './engine.ts';
import { LATE_ACCEPT_WINDOW_MS } from './model.ts';
import { dueHold, dueLate, dueLifetime, type DueRow } from './store/due.ts';
import { lockPaymentById } from './store/payments.ts';

export interface DueResult {
  /** Payments run through the state machine. */
  ticked: number;
}

export class PaymentDue {
  constructor(
    private readonly engine: PaymentEngine,
    private readonly deposits: DepositRecorder,
  ) {}

  /** One pass over everything due now. */
  async run(): Promise<DueResult> {
    return { ticked: (await this.deposits.settleMarked()) + (await this.expiries()) + (await this.late()) };
  }

  /** Ticks payments whose lifetime or a coin hold ran out. */
  async expiries(): Promise<number> {
    const now = this.engine.deps.clock.now();
    return this.drain(dueLifetime(now), dueHold(now));
  }

  /**
   * Ticks late payments whose money may still be auto-accepted (until 24 hours after the payment's lifetime).
   * NOTE: a late payment with a refund requested is the merchant's decision and is never auto-accepted.
   */
  async late(): Promise<number> {
    return this.drain(dueLate(new Date(this.engine.deps.clock.now().getTime() - LATE_ACCEPT_WINDOW_MS)));
  }

  /** Runs `tick` on each payment the queries yield, one transaction per payment, each payment once per pass. */
  private async drain(...queries: Array<(skip: string[]) => RawBuilder<DueRow>>): Promise<number> {
    const seen: string[] = [];
    for (const query of queries) {
      for (;;) {
        let current: string | null = null;
        try {
          const found = await withTx(this.engine.deps.db, async (tx) => {
            const row = (await query(seen).execute(tx)).rows[0];
            if (!row) return false;
            current = row.id;
            const l = (await lockPaymentById(tx, row.mode, row.id))!;
            await this.engine.apply(tx, l, { kind: 'tick' });
            return true;
          });
          if (!found) break;
        } catch (err) {
          this.engine.deps.log.error({ err, paymentId: current }, 'payment tick failed');
          if (current === null) break;
        }
        seen.push(current!);
      }
    }
    return seen.length;
  }
}
