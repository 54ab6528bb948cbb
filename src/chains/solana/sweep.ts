/**
 * Sweeps: what arrived at Solana deposit keys goes to the network's treasury. A key is due when a transfer to it
 * is final (its slot at or below the watcher's final slot) and newer than its last sweep, or when the token account
 * Kasse opened for it was never used and is older than `ata_close_after_s` (closing it recovers its rent). Each
 * sweep transaction (a few keys, within Solana's size limit) is a `sweep` transfer of the crash-safe sender: the hot
 * wallet pays the fees and the treasury's token account, every token account of a configured mint the key owns (its
 * associated one or any other, found with getTokenAccountsByOwner) is emptied and closed (its rent back to the hot
 * wallet), then each key's SOL goes to the treasury to the last lamport. Balances no sweep can move (another mint, a
 * frozen account) are reported in the result's `left`. Keys in a sweep still open are not taken again.
 */
import { sql } from 'kysely';
import { ulid } from '../../core/ids.ts';
import { withTx } from '../../db/index.ts';
import type { SolanaAdapter } from './adapter.ts';
import type { Plan, SweepLeft, SweepSummary } from './plans.ts';

export interface SweepOptions {
  /** Deposit keys per transaction (each adds a signature). Default 4. */
  batch?: number;
  dryRun?: boolean;
}

export interface SweepReport {
  chain: string;
  mode: string;
  treasury: string;
  due: number;
  addresses?: string[];
  transfers: Array<{ id: string; addresses: string[] }>;
  dry_run: boolean;
}

/** Deposit keys due for a sweep (see the header comment), oldest first. */
export async function sweepDue(adapter: SolanaAdapter): Promise<Array<{ address: string; index: bigint }>> {
  const { db, clock } = adapter.deps;
  const cursor = await db
    .selectFrom('solana_cursors')
    .select('final_slot')
    .where('mode', '=', adapter.mode)
    .where('chain', '=', adapter.network.id)
    .executeTakeFirst();
  const finalSlot = cursor ? BigInt(cursor.final_slot) : -1n;
  const unusedBefore = new Date(clock.now().getTime() - adapter.settings.ataCloseAfterSeconds * 1000);
  const { rows } = await sql<{ address: string; address_index: string | bigint }>`
    SELECT a.address, a.address_index FROM solana_addresses a
    WHERE a.mode = ${adapter.mode} AND a.chain = ${adapter.network.id}
      AND (
        (a.last_deposit_slot IS NOT NULL AND a.last_deposit_slot <= ${finalSlot.toString()}::bigint
          AND (a.swept_slot IS NULL OR a.last_deposit_slot > a.swept_slot))
        OR (a.token_account IS NOT NULL AND NOT a.closed AND a.last_deposit_slot IS NULL AND a.created_at <= ${unusedBefore})
      )
      AND a.address NOT IN (
        SELECT item->>'address' FROM solana_transfers t, jsonb_array_elements(t.plan->'items') item
        WHERE t.mode = ${adapter.mode} AND t.chain = ${adapter.network.id} AND t.purpose = 'sweep' AND t.status IN ('pending', 'signed', 'broadcast')
      )
    ORDER BY a.address_index`.execute(db);
  return rows.map((r) => ({ address: r.address, index: BigInt(r.address_index) }));
}

/** Records sweep transfers for every due key (the sender sends them); returns what was recorded. */
export async function recordSweeps(adapter: SolanaAdapter, opts: SweepOptions = {}): Promise<SweepReport> {
  const treasury = adapter.settings.treasury;
  if (!treasury)
    throw new Error(`${adapter.mode} network ${adapter.network.id} has no solana.treasury: sweeps need one`);
  if (!adapter.sender) throw new Error(`${adapter.network.id} has no sender`);
  const due = await sweepDue(adapter);
  const report: SweepReport = {
    chain: adapter.network.id,
    mode: adapter.mode,
    treasury,
    due: due.length,
    transfers: [],
    dry_run: !!opts.dryRun,
  };
  if (opts.dryRun) return { ...report, addresses: due.map((d) => d.address) };
  const size = Math.max(1, Math.min(opts.batch ?? 4, 8));
  for (let i = 0; i < due.length; i += size) {
    const items = due.slice(i, i + size);
    const id = `swp_${ulid()}`;
    await withTx(adapter.deps.db, (tx) => adapter.sender!.recordSweep(tx, id, treasury, items));
    report.transfers.push({ id, addresses: items.map((x) => x.address) });
  }
  return report;
}

export interface SweepResult {
  id: string;
  /** The deposit keys it sweeps. */
  addresses: string[];
  status: string;
  signature: string | null;
  /** Why it failed, or why its last step failed and is tried again (`tries` times so far); the node's own words. */
  error: string | null;
  tries: number;
  /** Still open: what it waits for, in words (null once settled). */
  waiting: string | null;
  moved: SweepSummary | null;
  /** Token balances of the swept keys that no sweep can move (another mint, a frozen account): the operator's to deal with. */
  left: SweepLeft[];
}

/** What became of recorded sweeps (after the sender worked on them), in the order of `ids`. */
export async function sweepResults(adapter: SolanaAdapter, ids: string[]): Promise<SweepResult[]> {
  if (ids.length === 0) return [];
  const rows = await adapter.deps.db
    .selectFrom('solana_transfers')
    .select(['id', 'status', 'signature', 'error', 'tries', 'plan', 'locked_until', 'next_attempt_at'])
    .where('id', 'in', ids)
    .execute();
  const now = adapter.deps.clock.now();
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => {
    const r = byId.get(id);
    if (!r) return [];
    const plan = r.plan as Extract<Plan, { kind: 'sweep' }>;
    const moved = plan.built ?? null;
    const open = r.status === 'pending' || r.status === 'signed' || r.status === 'broadcast';
    let waiting: string | null = null;
    if (open)
      waiting =
        r.locked_until && r.locked_until > now
          ? `held by a sender pass (this or another process) until ${r.locked_until.toISOString()}`
          : r.error
            ? `tried ${r.tries} time(s); next try at ${r.next_attempt_at.toISOString()}`
            : OPEN_STEP[r.status as keyof typeof OPEN_STEP];
    return [
      {
        id: r.id,
        addresses: plan.items.map((i) => i.address),
        status: r.status,
        signature: r.signature,
        error: r.error,
        tries: r.tries,
        waiting,
        moved,
        left: moved?.left ?? [],
      },
    ];
  });
}

const OPEN_STEP = {
  pending: 'not signed yet',
  signed: 'signed, not yet taken by the node',
  broadcast: 'sent to the network, waiting for finalization',
} as const;

/**
 * What an operator reads of sweeps after waiting for them: each key with its sweep's outcome, the optional methods
 * the node lacked and what the sweep did without them, and the failures — a sweep that failed, or is still open after
 * a failed step or unsigned — each with the node's own error.
 */
export function sweepOutcome(results: SweepResult[]): {
  keys: Array<{ address: string; transfer_id: string; status: string; error: string | null }>;
  missing_methods: string[];
  notes: string[];
  failures: string[];
} {
  const missing = new Set<string>();
  const notes: string[] = [];
  const failures: string[] = [];
  for (const r of results) {
    for (const m of r.moved?.missing ?? []) {
      missing.add(m);
      notes.push(
        `${r.id}: the node does not serve ${m}, so only the associated token accounts of ${r.addresses.join(', ')} ` +
          'were swept; a token account a payer opened otherwise for one of these keys was not looked for',
      );
    }
    const failed = r.status === 'failed' || (r.status !== 'sent' && (r.error !== null || r.status === 'pending'));
    if (failed)
      failures.push(
        `${r.id} (${r.addresses.join(', ')}): ${r.status}${r.error ? `: ${r.error}` : ''}${r.waiting ? ` (${r.waiting})` : ''}`,
      );
  }
  return {
    keys: results.flatMap((r) =>
      r.addresses.map((address) => ({ address, transfer_id: r.id, status: r.status, error: r.error })),
    ),
    missing_methods: [...missing],
    notes,
    failures,
  };
}
