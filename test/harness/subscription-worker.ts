/**
 * A second Kasse process for scheduler tests: it opens the parent's database with the parent's secrets, prints
 * `ready`, waits for a line on stdin holding the time (ISO) to set its fake clock to, then runs one scheduler pass and
 * prints its result as JSON. `KASSE_WORKER_CRASH` makes it die (SIGKILL, no clean-up) at a chosen point:
 *   in-transaction   when the pass enqueues its mail: payments, invoices and events are written but not committed
 *   after-commit     right after the pass committed, before any mail is sent
 */
import { createInterface } from 'node:readline';
import { FakeClock } from '../../src/core/clock.ts';
import { startTestKasse } from './app.ts';

const env = process.env;
const clock = new FakeClock();
const t = await startTestKasse({
  databaseUrl: env.KASSE_WORKER_DATABASE_URL!,
  secrets: {
    secretKey: Buffer.from(env.KASSE_WORKER_SECRET_KEY!, 'hex'),
    masterSeed: env.KASSE_WORKER_MASTER_SEED!,
    hotWalletKey: null,
  },
  clock,
  env: { KASSE_SMTP_URL: env.KASSE_WORKER_SMTP_URL! },
});
const crash = env.KASSE_WORKER_CRASH;
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
const result = await t.kasse.subscriptions.runDue();
if (crash === 'after-commit') process.kill(process.pid, 'SIGKILL');
process.stdout.write(`${JSON.stringify(result)}\n`);
await t.close();
process.exit(0);
