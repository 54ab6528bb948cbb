/**
 * EVM hot-wallet sender loop: every 2 seconds, or at once when a transfer was recorded in this process, each EVM
 * network's sender takes its due transfers (leased in PostgreSQL, so several worker processes share them) and
 * drives them one step further. The logic lives in src/chains/evm/sender.ts.
 */
import { evmSenders } from '../chains/evm/sender.ts';
import type { Kasse } from '../kasse.ts';
import { Loop } from '../core/loop.ts';

export function evmSenderLoop(kasse: Kasse): Loop {
  const senders = evmSenders(kasse);
  const loop = new Loop(
    'evm-sender',
    2_000,
    async () => {
      for (const sender of senders) {
        try {
          await sender.runDue();
        } catch (err) {
          kasse.log.error({ err, chain: sender.network.id, mode: sender.mode }, 'evm sender pass failed');
        }
      }
    },
    kasse.log,
  );
  for (const sender of senders) sender.onWork(() => loop.wake());
  return loop;
}
