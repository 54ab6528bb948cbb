/**
 * A second Kasse process for scheduler tests: it opens the parent's database with the parent's secrets, prints
 * `ready`, waits for a line on stdin holding the time (ISO) to set its fake clock to, then runs one scheduler pass and
 * prints its result as JSON. `KASSE_WORKER_CRASH` makes it die (SIGKILL, no clean-up) at a chosen point:
 *   in-transaction   when the pass enqueues its mail: payments, invoices and events are written but not committed
 *   after-commit     right after the pass committed, before any mail is sent
 *   after-send       on the EVM network `base`: as soon as the node accepted a transaction the hot wallet signed
 *                    (a charge's), before Kasse recorded that it was sent
 * With `KASSE_WORKER_HOT_WALLET_KEY` and `KASSE_WORKER_ENV` (JSON: the parent's networks file, price providers) it
 * works the parent's chains too; its pass then runs the hot wallet's sender before the subscriptions' due work.
 */
import { createInterface } from 'node:readline';
import type { Hex } from 'viem';
import { EvmAdapter } from '../../src/chains/evm/adapter.ts';
import type { RpcClient } from '../../src/chains/evm/rpc.ts';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse } from './app.ts';

const env = process.env;
const clock = new FakeClock();
const t = await startTestKasse({
  databaseUrl: env.KASSE_WORKER_DATABASE_URL!,
  secrets: {
    secretKey: Buffer.from(env.KASSE_WORKER_SECRET_KEY!, 'hex'),
    masterSeed: env.KASSE_WORKER_MASTER_SEED!,
    hotWalletKey: (env.KASSE_WORKER_HOT_WALLET_KEY as Hex | undefined) ?? null,
  },
  clock,
  env: {
    ...(env.KASSE_WORKER_SMTP_URL ? { KASSE_SMTP_URL: env.KASSE_WORKER_SMTP_URL } : {}),
    ...JSON.parse(env.KASSE_WORKER_ENV ?? '{}'),
  },
});
const crash = env.KASSE_WORKER_CRASH;
const evm = env.KASSE_WORKER_HOT_WALLET_KEY ? t.kasse.chains.adapter('test', 'base') : null;
const sender = evm instanceof EvmAdapter ? evm.sender : null;
if (sender && crash === 'after-send') {
  const rpc = sender.rpc.bind(sender);
  sender.rpc = () => {
    const client = rpc();
    return {
      request: async (method: string, params?: unknown[]) => {
        const out = await client.request(method, params);
        if (method === 'eth_sendRawTransaction') process.kill(process.pid, 'SIGKILL');
        return out;
      },
    } as unknown as RpcClient;
  };
}
if (crash === 'in-transaction') {
  const die = (): never => {
    process.kill(process.pid, 'SIGKILL');
    throw new Error('killed');
  };
  t.kasse.email.enqueue = async () => die();
  t.kasse.email.enqueueMany = async () => die();
}
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  clock.set(line.trim());
  break;
}
await sender?.runDue();
const result = await t.kasse.subscriptions.runDue();
if (crash === 'after-commit') process.kill(process.pid, 'SIGKILL');
process.stdout.write(`${JSON.stringify(result)}\n`);
await t.close();
process.exit(0);
