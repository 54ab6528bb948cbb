/**
 * The capture module's due pass at `capture_before`: every hold still holding money is voided (the payer gets it
 * back), unless the escrow says it holds nothing any more — the payer reclaimed it while Kasse was not there to void
 * — which is then recorded as reclaimed. The escrow is asked before any transaction opens. Holds are read a page at
 * a time, each page after the last, so holds the pass cannot act on (no escrow for their network, a failing one)
 * never keep it from the others.
 */
import type { Tx } from '../../db/index.ts';
import type { Loaded, PaymentEngine } from '../payments/index.ts';
import { dueHolds, holdOperations, lockHold, type DueCursor, type HoldRow, type OperationRow } from './store.ts';
import type { HoldRelease } from './tables.ts';

/** What the pass does to a due hold, on its locked payment (the capture service's own steps). */
export interface DueSteps {
  release(tx: Tx, l: Loaded, hold: HoldRow, by: HoldRelease): Promise<void>;
  requestVoid(
    tx: Tx,
    l: Loaded,
    hold: HoldRow,
    ops: OperationRow[],
    reason: 'merchant' | 'deadline',
  ): Promise<OperationRow | null>;
}

/** One pass over the due holds, `batch` a page; returns how many holds it acted on. */
export async function runDue(engine: PaymentEngine, batch: number, steps: DueSteps): Promise<number> {
  const now = engine.deps.clock.now();
  let acted = 0;
  let after: DueCursor | undefined;
  for (;;) {
    const page = await dueHolds(engine.deps.db, now, batch, after);
    for (const due of page) if (await dueHold(engine, due, steps)) acted++;
    if (page.length < batch) return acted;
    after = page[page.length - 1]!;
  }
}

/** Voids a hold at its deadline, or records it reclaimed; false when nothing was done (logged when it failed). */
async function dueHold(engine: PaymentEngine, due: HoldRow, steps: DueSteps): Promise<boolean> {
  const { chains, log } = engine.deps;
  try {
    let empty = false;
    if (!due.simulated) {
      const adapter = chains.hasAdapter(due.mode, due.chain) ? chains.adapter(due.mode, due.chain) : null;
      if (!adapter?.holds) {
        log.warn({ holdId: due.id, chain: due.chain }, 'hold due but no escrow runs for its network');
        return false;
      }
      empty = (await adapter.holds.held(due.terms)).capturable === 0n;
    }
    const done = await engine.lockedById(due.mode, due.payment_id, async (tx, l) => {
      const hold = await lockHold(tx, due.id);
      if (hold.status !== 'authorized') return false;
      const ops = await holdOperations(tx, hold.id);
      if (ops.some((o) => o.status === 'pending' && (o.kind === 'void' || empty))) return false;
      if (empty) await steps.release(tx, l, hold, 'reclaimed');
      else if (!(await steps.requestVoid(tx, l, hold, ops, 'deadline'))) return false;
      return true;
    });
    return done === true;
  } catch (err) {
    log.error({ err, holdId: due.id }, 'due hold not handled');
    return false;
  }
}
