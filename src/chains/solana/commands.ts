/** Solana operator commands: sweep deposit keys to the treasury, and the watcher's and hot wallet's status. */
import { CommandError, mode, optionalInt, UsageError, type Flags } from '../../core/flags.ts';
import { missingMethods, networkFlags, statusCommand, storedCursor } from '../commands.ts';
import { fromNodes } from '../health.ts';
import { probePush } from '../push.ts';
import type { FamilyCommand, FamilyContext } from '../plugin.ts';
import { SolanaAdapter } from './adapter.ts';
import { HOT_WALLET_PATH } from './keys.ts';
import { recordSweeps, sweepOutcome, sweepResults } from './sweep.ts';
import { methodUnavailable } from './rpc.ts';
import { associatedTokenAccount, readTokenAccount, TOKEN_PROGRAM_ADDRESS, type RpcAccount } from './transactions.ts';

function solanaAdapter(ctx: FamilyContext, f: Flags): SolanaAdapter {
  const m = mode(f);
  const id = typeof f.chain === 'string' && f.chain !== '' ? f.chain : 'solana';
  const network = ctx.chains.network(m, id);
  if (!network || network.family !== 'solana') throw new UsageError(`no ${m} Solana network "${id}"`);
  const adapter = ctx.chains.hasAdapter(m, id) ? ctx.chains.adapter(m, id) : null;
  if (!(adapter instanceof SolanaAdapter)) throw new UsageError(`${m} network ${id} has no rpc_urls`);
  return adapter;
}

export const solanaCommands: FamilyCommand[] = [
  {
    name: 'solana sweep',
    usage:
      'solana sweep --mode test|live [--chain solana] [--batch N] [--dry-run] [--wait-seconds N] [--json]   (final deposits to the treasury; token accounts closed)',
    flags: networkFlags({
      batch: { type: 'string' },
      'dry-run': { type: 'boolean' },
      'wait-seconds': { type: 'string' },
    }),
    run: async (ctx, f) => {
      const adapter = solanaAdapter(ctx, f);
      if (!adapter.settings.treasury)
        throw new UsageError(
          `set solana.treasury for ${adapter.network.id} in the networks file: where sweeps send the funds`,
        );
      const report = await recordSweeps(adapter, { batch: optionalInt(f, 'batch'), dryRun: f['dry-run'] === true });
      const ids = report.transfers.map((t) => t.id);
      // Waiting on the network: a timer of real seconds, not the clock the payment rules read.
      const waited = AbortSignal.timeout((optionalInt(f, 'wait-seconds') ?? 120) * 1000);
      let results = await sweepResults(adapter, ids);
      while (!results.every((r) => r.status === 'sent' || r.status === 'failed') && !waited.aborted) {
        await adapter.sender!.runDue();
        results = await sweepResults(adapter, ids);
        if (results.every((r) => r.status === 'sent' || r.status === 'failed')) break;
        await new Promise((r) => setTimeout(r, 2000));
      }
      const { failures, ...outcome } = sweepOutcome(results);
      const done = { ...report, ...outcome, results };
      if (failures.length > 0)
        throw new CommandError(
          `${failures.length} of ${results.length} sweep transaction(s) did not go through:\n  ${failures.join('\n  ')}`,
          done,
        );
      return done;
    },
  },
  statusCommand(
    'solana',
    '--mode test|live [--chain solana] [--json]   (watcher cursor against the cluster; push or poll; hot wallet balances; optional methods the node lacks)',
    async (ctx, f) => {
      const adapter = solanaAdapter(ctx, f);
      const rpc = adapter.rpc();
      const hot = adapter.deps.keys.hotWallet().address;
      const usdc = adapter.network.tokens.filter((t) => t.kind === 'spl' && t.contract);
      const [[confirmed, finalized, accounts], cursor, push] = await Promise.all([
        fromNodes(adapter.network, adapter.mode, ctx.health, () =>
          Promise.all([
            rpc.request<number>('getSlot', [{ commitment: 'confirmed' }]),
            rpc.request<number>('getSlot', [{ commitment: 'finalized' }]),
            Promise.all(usdc.map((t) => associatedTokenAccount(hot, t.contract!))).then((keys) =>
              rpc.request<{ value: Array<RpcAccount | null> }>('getMultipleAccounts', [
                [hot, ...keys],
                { encoding: 'base64', commitment: 'confirmed' },
              ]),
            ),
          ]),
        ),
        storedCursor<{ slot: bigint; final_slot: bigint }>(ctx.db, 'solana_cursors', adapter.mode, adapter.network.id),
        probePush(adapter.push()),
      ]);
      const missing = await missingMethods(
        [
          {
            method: 'getTokenAccountsByOwner',
            probe: () =>
              rpc.request('getTokenAccountsByOwner', [
                hot,
                { programId: TOKEN_PROGRAM_ADDRESS },
                { encoding: 'base64', commitment: 'confirmed', dataSlice: { offset: 0, length: 0 } },
              ]),
            without:
              "sweeps take each key's associated token accounts only; a token account a payer opened otherwise for a key is not found",
          },
        ],
        methodUnavailable,
      );
      return {
        chain: adapter.network.id,
        mode: adapter.mode,
        confirmed_slot: String(confirmed),
        finalized_slot: String(finalized),
        cursor_slot: cursor ? String(cursor.slot) : null,
        final_slot: cursor ? String(cursor.final_slot) : null,
        behind_slots: cursor ? String(BigInt(confirmed) - BigInt(cursor.slot)) : null,
        watch_path: push.path,
        push_url: push.url,
        push_error: push.error,
        hot_wallet: hot,
        hot_wallet_path: HOT_WALLET_PATH,
        hot_wallet_lamports: String(accounts.value[0]?.lamports ?? 0),
        hot_wallet_tokens: Object.fromEntries(
          usdc.map((t, i) => [t.id, String(readTokenAccount(accounts.value[i + 1] ?? null)?.amount ?? 0n)]),
        ),
        treasury: adapter.settings.treasury,
        // Optional methods the node does not serve (hosted providers often disable them), and what Kasse does instead.
        missing_methods: missing,
      };
    },
  ),
];
