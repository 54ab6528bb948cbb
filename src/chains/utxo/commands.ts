/** UTXO operator commands (`kasse utxo …`): sweep deposit addresses, and the watcher's and hot wallet's status. */
import { newId } from '../../core/ids.ts';
import { mode, optionalInt, UsageError, type Flags } from '../../core/flags.ts';
import { commandNetwork, missingMethods, statusCommand, networkFlags, storedCursor } from '../commands.ts';
import { fromNodes } from '../health.ts';
import type { FamilyCommand, FamilyContext } from '../plugin.ts';
import { UtxoAdapter } from './adapter.ts';
import { satoshis } from './rpc.ts';
import type { UtxoSender } from './sender.ts';

function utxoAdapter(ctx: FamilyContext, f: Flags): UtxoAdapter {
  const m = mode(f);
  const id = commandNetwork(ctx, f, 'utxo', {
    noun: 'a Bitcoin-family network',
    node: 'a Bitcoin Core or Litecoin Core node',
  }).id;
  const adapter = ctx.chains.hasAdapter(m, id) ? ctx.chains.adapter(m, id) : null;
  if (!(adapter instanceof UtxoAdapter)) throw new UsageError(`${id} has no UTXO adapter in ${m} mode`);
  return adapter;
}

export const utxoCommands: FamilyCommand[] = [
  {
    name: 'utxo sweep',
    usage:
      'utxo sweep --chain ID --mode test|live [--max-inputs N] [--json]   (confirmed deposits to utxo.treasury, else the hot wallet)',
    flags: networkFlags({ 'max-inputs': { type: 'string' } }),
    run: async (ctx, f) => {
      const adapter = utxoAdapter(ctx, f);
      const sender = adapter.sender as UtxoSender;
      const id = await sender.sweep(newId('swp', ctx.clock.now().getTime()), optionalInt(f, 'max-inputs') ?? 500);
      if (!id)
        return {
          chain: adapter.network.id,
          mode: adapter.mode,
          swept: false,
          reason: 'no confirmed deposit coins to sweep',
        };
      // Broadcast now; the workers role follows it to its confirmations (and bumps its fee if it gets stuck).
      await sender.step(id);
      const t = (await sender.get(id))!;
      const inputs = await ctx.db
        .selectFrom('utxo_coins')
        .select(({ fn }) => [fn.countAll<number>().as('n'), fn.sum<string>('amount').as('total')])
        .where('spent_by', '=', id)
        .executeTakeFirstOrThrow();
      return {
        chain: adapter.network.id,
        mode: adapter.mode,
        swept: true,
        transfer_id: id,
        status: t.status,
        txid: t.txid,
        destination: t.destination,
        inputs: Number(inputs.n),
        input_total: String(inputs.total),
        amount: String(t.amount),
        fee: String(t.fee),
      };
    },
  },
  statusCommand(
    'utxo',
    '--chain ID --mode test|live [--json]   (watcher cursor against the node tip; hot wallet, unswept deposits, transfers waiting for change, optional methods the node lacks)',
    async (ctx, f) => {
      const adapter = utxoAdapter(ctx, f);
      const m = adapter.mode;
      const chain = adapter.network.id;
      const hot = adapter.hotWalletAddress();
      const networkTransfers = ctx.db.selectFrom('utxo_transfers').where('mode', '=', m).where('chain', '=', chain);
      const [[tip, mempool], cursor, coins, transfers, waiting] = await Promise.all([
        fromNodes(adapter.network, m, ctx.health, () =>
          Promise.all([
            adapter.rpc().call<number>('getblockcount'),
            adapter.rpc().call<{ size: number; mempoolminfee: string }>('getmempoolinfo'),
          ]),
        ),
        storedCursor<{ height: bigint }>(ctx.db, 'utxo_cursors', m, chain),
        ctx.db
          .selectFrom('utxo_coins')
          .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<string>('amount').as('total')])
          .select((eb) => eb.case().when('address', '=', hot).then('hot').else('deposits').end().as('kind'))
          .where('mode', '=', m)
          .where('chain', '=', chain)
          .where('spent_by', 'is', null)
          .groupBy('kind')
          .execute(),
        networkTransfers
          .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
          .groupBy('status')
          .execute(),
        networkTransfers
          .select(['id', 'purpose', 'amount', 'waiting_since', 'error'])
          .where('status', '=', 'pending')
          .where('waiting_since', 'is not', null)
          .orderBy('created_at')
          .execute(),
      ]);
      const missing = await missingMethods([
        {
          method: 'estimatesmartfee',
          probe: () => adapter.rpc().call('estimatesmartfee', [adapter.settings.feeTargetBlocks]),
          without: "the sender pays the node's relay fee (getnetworkinfo), at most max_fee_rate",
        },
      ]);
      const of = (kind: string) => coins.find((c) => c.kind === kind);
      return {
        chain,
        mode: m,
        tip,
        cursor: cursor ? Number(cursor.height) : null,
        behind: cursor ? tip - Number(cursor.height) : null,
        mempool_size: mempool.size,
        mempool_min_fee_sat_per_kvb: satoshis(mempool.mempoolminfee).toString(),
        hot_wallet: hot,
        hot_wallet_balance: String(of('hot')?.total ?? 0),
        hot_wallet_coins: Number(of('hot')?.n ?? 0),
        unswept_deposit_coins: Number(of('deposits')?.n ?? 0),
        unswept_deposit_total: String(of('deposits')?.total ?? 0),
        transfers: Object.fromEntries(transfers.map((t) => [t.status, Number(t.n)])),
        // Optional methods the node does not serve, and what Kasse does instead.
        missing_methods: missing,
        // Pending refunds and payouts waiting for the hot wallet's own change to be in a block, and why.
        waiting_for_change: waiting.map((t) => ({
          transfer_id: t.id,
          purpose: t.purpose,
          amount: String(t.amount),
          since: t.waiting_since!.toISOString(),
          reason: t.error,
        })),
      };
    },
  ),
];
